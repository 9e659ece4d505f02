#!/bin/sh
# Fernandez et al. (arXiv 2411.13055) reproduced as far as weft can: sweep
# the setups (study.xml), then print weft beside the paper and draw the
# plot (compare.py).  Run from the repository root after building weft:
#   sh analysis/repro-fernandez/run.sh [OUTDIR]
# 250 scenarios: 246 in about 35 s with -j 1, the 4 with 2 NICs per node
# about 2.5 minutes of CPU (README); then the all-reduce scan (1 s).
set -e
dir=$(dirname "$0")
out=${1:-$dir/out}
mkdir -p "$out"
rm -f "$out/results.csv"
build/weft sweep "$dir/study.xml" -o "$out/results.csv" -j 1
# NCCL all-reduce on 4-512 DGX H100 nodes, as nccl-tests scans it, beside
# the paper's scan (compare.py section 5; under a second in all)
for n in 4 8 16 32 64 128 256 512; do
  build/weft coll all_reduce --cluster dgx-h100 --nodes $n -b 2MiB -e 16GiB \
    -f 2 --json >"$out/allreduce-$n.json"
done
python3 "$dir/compare.py" "$out/results.csv" "$out"
