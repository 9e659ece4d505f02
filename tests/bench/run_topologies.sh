#!/bin/sh
# run_topologies.sh WEFT [GPUS] - Llama 3 405B (TP 8, PP 16, global batch
# 2048) on GPUS H100 (default 16384) over every topology: wall time (median
# of 3) and peak memory of weft run, platform building included.  Issue
# 14's target: no topology more than 2x the fat tree, loading under 5 s
# and 1 GiB.
weft=${1:-build/weft}
gpus=${2:-16384}
for t in "fat-tree" "rail" "rail --pxn 0" "rail-only" "multi-plane" \
         "dragonfly" "dragonfly --dragonfly-routing valiant" \
         "torus --torus 16x16x8"; do
  case $gpus in 16384) ;; *) [ "${t#torus}" != "$t" ] && continue ;; esac
  for i in 1 2 3; do
    /usr/bin/time -f "%e %M" "$weft" run --cluster dgx-h100 --gpus "$gpus" \
      --model llama3-405b --tp 8 --pp 16 --global-batch 2048 \
      --topology $t --json 2>&1 >/dev/null | tail -1
  done | sort -n | sed -n 2p | awk -v t="$t" \
    '{ printf "%-40s %6.2f s %6.0f MB\n", t, $1, $2 / 1024 }'
done
