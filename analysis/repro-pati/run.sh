#!/bin/sh
# Pati et al. (IISWC 2023) reproduced as far as weft can: sweep the
# paper's setups (study.xml), then print weft beside the paper and draw the
# plots (compare.py).  Run from the repository root after building weft:
#   sh analysis/repro-pati/run.sh [OUTDIR]
# 50 scenarios in about 1 s with -j 2 on a shared 2-core machine.
set -e
dir=$(dirname "$0")
out=${1:-$dir/out}
mkdir -p "$out"
rm -f "$out/results.csv"
build/weft sweep "$dir/study.xml" -o "$out/results.csv" -j 2
python3 "$dir/compare.py" "$out/results.csv" "$out"
