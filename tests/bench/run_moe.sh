#!/bin/sh
# run_moe.sh [BUILD_DIR] [RUNS] [TIMEOUT_S] - issue 38 item 5: MoE jobs whose
# expert all-to-alls cross nodes.  Mixtral 8x7B cut to 8 layers (TP 2, EP 8,
# PP 4, 8 micro-batches per pipeline) on 128 to 2048 H100, and DeepSeek-V3
# (the deepseek-v3 preset: MLA, 3 dense layers, a shared expert, 256
# routed experts top-8) in Megatron-Core's published layout (TP 2, PP 8,
# interleaved 4, EP 64, 4096 tokens, global batch 8192) on 1024 H100, with
# Megatron-Core's distributed optimizer (--zero 1 --shard-impl megatron,
# as Megatron-MoE-ModelZoo's scripts pass --use-distributed-optimizer).
# Its layers are 64, not 61: PP 8 x 4 chunks cannot split 61 layers
# evenly, and weft has no free-form pipeline layout (Megatron-Core's
# --pipeline-model-parallel-layout, whose "Custom Pipeline Model Parallel
# Layout" guide partitions a DeepSeek-V3-style stack of 61 decoder layers
# and one MTP layer with a layout string, can give the embedding, the MTP
# layer and the loss chunks of their own; its exact string for this
# layout was not read).
# The median of RUNS runs each (default 1); a run that takes
# longer than TIMEOUT_S (default 600) is stopped and printed as such.
# Set WEFT_EP_SYMMETRY=on in the environment for the expert replica
# symmetry and its quotient (sim/symmetry.h); the iteration time is
# printed so that runs with and without it can be compared.
# Prints GPUs, simulated tasks (kernels) and flows of the whole job, wall
# seconds (sim_wall_s), CPU seconds of the process (user + sys: the figure
# on a loaded machine), peak RSS, wall microseconds per activity and the
# predicted iteration time.
build=${1:-build}
runs=${2:-1}
limit=${3:-600}
case $runs in
  '' | *[!0-9]* | 0) echo "run_moe.sh: RUNS must be a positive integer, not '$runs'" >&2; exit 2 ;;
esac
case $limit in
  '' | *[!0-9]* | 0) echo "run_moe.sh: TIMEOUT_S must be a positive integer, not '$limit'" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
tmp=$dir/run
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM HUP
printf '%-14s %6s %11s %11s %8s %8s %8s %9s %14s\n' job gpus kernels flows wall_s cpu_s rss_MB us/activity iteration_s
median() {
  sort -n | awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'
}
run() { # NAME GPUS ARGS...
  name=$1; gpus=$2; shift 2
  : >"$tmp.err"
  : >"$tmp.all"
  i=0
  while [ "$i" -lt "$runs" ]; do
    if ! timeout "$limit" /usr/bin/time -f "rss_kb=%M cpu_s=%U %S" "$build/weft" run --json -q --gpus "$gpus" "$@" >"$tmp" 2>>"$tmp.err"; then
      printf '%-14s %6d  stopped after %s s or failed\n' "$name" "$gpus" "$limit"
      return
    fi
    cat "$tmp" >>"$tmp.all"
    i=$((i + 1))
  done
  rss=$(sed -n 's/rss_kb=\([0-9]*\).*/\1/p' "$tmp.err" | median)
  cpu=$(sed -n 's/.*cpu_s=\([0-9.]*\) \([0-9.]*\)/\1 \2/p' "$tmp.err" |
    awk '{ print $1 + $2 }' | median)
  wall=$(sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p' "$tmp.all" | median)
  awk -v n="$name" -v g="$gpus" -v rss="$rss" -v w="$wall" -v cpu="$cpu" '{
    match($0, /"kernels": [0-9]+/); k = substr($0, RSTART + 11, RLENGTH - 11)
    match($0, /"flows": [0-9]+/); f = substr($0, RSTART + 9, RLENGTH - 9)
    match($0, /"iteration_time_s": [0-9.e+-]+/); it = substr($0, RSTART + 20, RLENGTH - 20)
    printf "%-14s %6d %11d %11d %8.3f %8.2f %8.0f %9.4f %14s\n", n, g, k, f, w, cpu, rss / 1024, w * 1e6 / (k + f), it }' "$tmp"
}
for g in ${MOE_GPUS:-128 256 512 1024 2048}; do
  run mixtral-8L "$g" --model mixtral-8x7b --layers 8 --cluster dgx-h100 \
    --tp 2 --ep 8 --pp 4 --global-batch "$g"
done
# At 2048 GPUs a stage of PP 4 spans two leaf groups of dgx-h100, which
# expert replica symmetry refuses; with PP 8 each stage fits one.
run mixtral-8L-pp8 2048 --model mixtral-8x7b --layers 8 --cluster dgx-h100 \
  --tp 2 --ep 8 --pp 8 --global-batch 2048
[ -n "$MOE_NO_DEEPSEEK" ] && exit 0
run deepseek-v3 1024 --model deepseek-v3 --layers 64 --cluster dgx-h100 \
  --tp 2 --pp 8 --ep 64 --schedule interleaved:4 --sp yes --seq 4096 \
  --global-batch 8192 --zero 1 --shard-impl megatron
