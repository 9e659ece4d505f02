#!/bin/sh
# run_sharded.sh [BUILD_DIR] [RUNS] - issue 9 item 6: sharded data
# parallelism at large data-parallel degree.  Wall time (median of RUNS) of
# one iteration with the symmetric shortcuts (one node's ranks simulated,
# rings and trees as one node's flows: engine.c, coll.h) and, with
# EVERY_RANK=1, once with --every-rank (every rank and flow; minutes) and
# the relative difference of the predicted iteration time.  Targets: GPT-3
# 175B ZeRO-3 on 2240 A100 <= 20 s, Llama 3 70B FSDP on 2048 H100 <= 10 s,
# within 1 % of the per-edge model.
build=${1:-build}
runs=${2:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-34s %6s %12s %8s %12s %8s %8s\n' job gpus iteration_s wall_s every_rank_s wall_s diff
while read -r name gpus args; do
  : >"$tmp"
  for i in $(seq "$runs"); do
    "$build/weft" run --json --gpus "$gpus" $args >>"$tmp"
  done
  wall=$(sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p' "$tmp" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  it=$(sed -n 's/.*"iteration_time_s": \([0-9.e+-]*\).*/\1/p' "$tmp" | head -1)
  full=- fwall=- diff=-
  if [ "${EVERY_RANK:-0}" = 1 ]; then
    out=$("$build/weft" run --json --every-rank --gpus "$gpus" $args)
    full=$(echo "$out" | sed -n 's/.*"iteration_time_s": \([0-9.e+-]*\).*/\1/p')
    fwall=$(echo "$out" | sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p')
    diff=$(echo "$it $full" | awk '{ printf "%+.4f%%", ($1 - $2) / $2 * 100 }')
  fi
  printf '%-34s %6s %12s %8s %12s %8s %8s\n' "$name" "$gpus" "$it" "$wall" "$full" "$fwall" "$diff"
done <<'JOBS'
gpt3-175b/zero3-ideal 2240 --model gpt3-175b --cluster selene --zero 3 --global-batch 2240 --recompute full
gpt3-175b/zero3-deepspeed-2021 1536 --model gpt3-175b --cluster selene --zero 3 --shard-impl deepspeed-2021 --global-batch 1536 --recompute full
llama3-70b/fsdp1 2048 --model llama3-70b --cluster dgx-h100 --fsdp yes --global-batch 2048 --recompute full
llama3-70b/fsdp2 2048 --model llama3-70b --cluster dgx-h100 --fsdp yes --shard-impl fsdp2 --global-batch 2048 --recompute full
llama3-70b/hsdp8-fsdp2 2048 --model llama3-70b --cluster dgx-h100 --hsdp 8 --shard-impl fsdp2 --global-batch 2048 --recompute full
JOBS
