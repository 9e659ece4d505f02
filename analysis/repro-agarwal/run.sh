#!/bin/sh
# Agarwal et al. (MLSys 2022) reproduced as far as weft can: sweep the
# paper's setups (study.xml), then print weft beside the paper and draw the
# plots (compare.py).  Run from the repository root after building weft:
#   sh analysis/repro-agarwal/run.sh [OUTDIR]
# 1764 scenarios (each simulated with and without compression) in about 45 s
# with -j 2 on a shared 2-core machine.
set -e
dir=$(dirname "$0")
out=${1:-$dir/out}
mkdir -p "$out"
rm -f "$out/results.csv"
build/weft sweep "$dir/study.xml" -o "$out/results.csv" -j 2
python3 "$dir/compare.py" "$out/results.csv" "$out"
