#!/bin/sh
# run_scaling.sh [BUILD_DIR] [RUNS] - how the cost of one simulated iteration grows
# with the GPUs (issue 12's scaling table): Llama 3 405B (TP 8, PP 16, DP,
# 16 micro-batches per pipeline) on 128 to 16384 H100 and GPT-3 175B (TP 8,
# PP 8, DP, global batch 1.5 x GPUs) on 64 to 12288 A100, and Mixtral 8x7B
# cut to 4 layers (TP 2, EP 8) on 128 to 2048 H100; the median of RUNS
# runs each (default 1).
# Prints GPUs, simulated tasks (kernels) and flows, wall seconds, peak RSS,
# and wall microseconds per activity (kernels + flows), whose constancy is
# what linear cost means.
build=${1:-build}
runs=${2:-1}
case $runs in
  '' | *[!0-9]* | 0) echo "run_scaling.sh: RUNS must be a positive integer, not '$runs'" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
tmp=$dir/run
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM HUP
printf '%-12s %6s %11s %11s %8s %8s %9s\n' job gpus kernels flows wall_s rss_MB us/activity
# The median of the numbers on standard input (the mean of the two middle
# ones for an even count).
median() {
  sort -n | awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'
}
run() { # NAME GPUS ARGS...
  name=$1; gpus=$2; shift 2
  : >"$tmp.err"
  : >"$tmp.all"
  i=0
  while [ "$i" -lt "$runs" ]; do
    /usr/bin/time -f "rss_kb=%M" "$build/weft" run --json --gpus "$gpus" "$@" >"$tmp" 2>>"$tmp.err" || { echo "$name $gpus failed"; return; }
    cat "$tmp" >>"$tmp.all"
    i=$((i + 1))
  done
  rss=$(sed -n 's/rss_kb=\([0-9]*\)/\1/p' "$tmp.err" | median)
  wall=$(sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p' "$tmp.all" | median)
  awk -v n="$name" -v g="$gpus" -v rss="$rss" -v w="$wall" '{
    match($0, /"kernels": [0-9]+/); k = substr($0, RSTART + 11, RLENGTH - 11)
    match($0, /"flows": [0-9]+/); f = substr($0, RSTART + 9, RLENGTH - 9)
    printf "%-12s %6d %11d %11d %8.3f %8.0f %9.4f\n", n, g, k, f, w, rss / 1024, w * 1e6 / (k + f) }' "$tmp"
}
for g in 128 256 512 1024 2048 4096 8192 16384; do
  run llama3-405b "$g" --model llama3-405b --cluster dgx-h100 --tp 8 --pp 16 \
    --global-batch $((g / 8)) --force
done
for g in 64 128 256 512 1024 2048 4096 8192 12288; do
  run gpt3-175b "$g" --model gpt3-175b --cluster selene --tp 8 --pp 8 \
    --global-batch $((g * 3 / 2)) --recompute full --force
done
# Expert all-to-alls over two nodes (TP 2, EP 8), 4 layers: every flow
# simulated, most of them sent by couriers (sim/sgbridge.cpp).
for g in 128 256 512 1024 2048; do
  run mixtral-4L "$g" --model mixtral-8x7b --layers 4 --cluster dgx-h100 \
    --tp 2 --ep 8 --global-batch "$g"
done
