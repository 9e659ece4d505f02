#!/bin/sh
# run_engine.sh [BUILD_DIR] [RUNS] - wall time and peak memory of simulating
# one iteration (weft run --json), median over RUNS runs.  Target (issue 4):
# GPT-3 175B on 1024 A100 (TP 8, PP 8, DP 16, global batch 1536, micro-batch
# 1) under 30 s and 2 GiB on one core; Llama 3 405B on 16384 H100 (TP 8,
# PP 16, DP 128, sequence 8192, global batch 2048) under 10 min and 8 GiB.
# The Llama series keeps 16 micro-batches per pipeline (batch = 16 x DP) to
# show how wall time grows with the number of GPUs.  The Mixtral jobs show
# expert parallelism with its groups inside nodes (replica symmetry) and
# across two nodes (every flow simulated).
build=${1:-build}
runs=${2:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-40s %8s %9s %8s %8s\n' job gpus sim_time wall_s rss_MB
while read -r name gpus args; do
  : >"$tmp"
  for i in $(seq "$runs"); do
    /usr/bin/time -f "rss_kb=%M" "$build/weft" run --json --gpus "$gpus" $args 2>>"$tmp" >>"$tmp"
  done
  wall=$(sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p' "$tmp" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  rss=$(sed -n 's/rss_kb=\([0-9]*\)/\1/p' "$tmp" | sort -n | awk '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] / 1024 }')
  it=$(sed -n 's/.*"iteration_time_s": \([0-9.e+-]*\).*/\1/p' "$tmp" | head -1)
  printf '%-40s %8s %9.3f %8s %8s\n' "$name" "$gpus" "$it" "$wall" "$rss"
done <<'JOBS'
gpt-18.4b/tp4-pp2-dp8(default-run) 64 --model gpt-18.4b --cluster selene --tp 4 --pp 2 --global-batch 128 --schedule interleaved:2 --recompute full
gpt3-175b/tp8-pp8-dp2 128 --model gpt3-175b --cluster selene --tp 8 --pp 8 --global-batch 192 --recompute full
gpt3-175b/tp8-pp8-dp4 256 --model gpt3-175b --cluster selene --tp 8 --pp 8 --global-batch 384 --recompute full
gpt3-175b/tp8-pp8-dp16 1024 --model gpt3-175b --cluster selene --tp 8 --pp 8 --global-batch 1536 --recompute full
llama3-405b/tp8-pp16-dp1 128 --model llama3-405b --cluster dgx-h100 --tp 8 --pp 16 --global-batch 16
llama3-405b/tp8-pp16-dp8 1024 --model llama3-405b --cluster dgx-h100 --tp 8 --pp 16 --global-batch 128
llama3-405b/tp8-pp16-dp32 4096 --model llama3-405b --cluster dgx-h100 --tp 8 --pp 16 --global-batch 512
llama3-405b/tp8-pp16-dp128 16384 --model llama3-405b --cluster dgx-h100 --tp 8 --pp 16 --global-batch 2048
mixtral-8x7b/tp1-ep8-dp256(ep-in-node) 256 --model mixtral-8x7b --cluster dgx-h100 --tp 1 --ep 8 --global-batch 512
mixtral-8x7b/tp1-ep8-dp4096(ep-in-node) 4096 --model mixtral-8x7b --cluster dgx-h100 --tp 1 --ep 8 --global-batch 8192
mixtral-8x7b/tp2-ep8-dp128(ep-2-nodes) 256 --model mixtral-8x7b --cluster dgx-h100 --tp 2 --ep 8 --global-batch 512
JOBS
