#!/bin/sh
# megatron_table1.sh [BUILD_DIR] [FIRST] [LAST] - simulate the rows of
# Megatron-LM's Table 1 (MEG21-T1-01..10 of shared/validation/calibration.csv)
# and print predicted vs published achieved TFLOP/s per GPU.
#
# Choices where the paper is silent: micro-batch 1; interleaved schedule
# with 2 chunks per GPU (3 where 2 does not divide the layers per stage),
# plain 1F1B without pipeline parallelism; full recomputation.  The
# software of 2021 is described as it behaved, not tuned: attention as
# batched GEMMs with materialized scores (no FlashAttention yet), blocking
# pipeline send/recv, the data-parallel all-reduce of FP32 main gradients
# after the backward pass (no overlap; that came to Megatron-LM in 2023).
# Pass a different SOFTWARE string to try other assumptions.  Nothing here
# is fitted to these rows: the compute constants come from the catalog, the
# network ones from the COLL rows named in sim/coll.c.
SOFTWARE=${SOFTWARE:---attention unfused --p2p blocking --overlap-grad no --grad-dtype fp32}
build=${1:-build}
first=${2:-1}
last=${3:-10}
i=0
printf '%-6s %-11s %5s %3s %3s %4s %9s %9s %7s %8s\n' row model gpus tp pp gb predicted published error wall_s
while read -r model gpus tp pp gb sched pub; do
  i=$((i + 1))
  [ "$i" -lt "$first" ] || [ "$i" -gt "$last" ] && continue
  out=$("$build/weft" run --json --model "$model" --cluster selene --gpus "$gpus" \
    --tp "$tp" --pp "$pp" --global-batch "$gb" --schedule "$sched" \
    --recompute full $SOFTWARE) || exit 1
  tf=$(echo "$out" | sed 's/.*"tflops_per_gpu": \([0-9.e+-]*\).*/\1/')
  wall=$(echo "$out" | sed 's/.*"sim_wall_s": \([0-9.e+-]*\).*/\1/')
  printf 'T1-%02d  %-11s %5s %3s %3s %4s %9.1f %9s %+6.1f%% %8s\n' "$i" "$model" "$gpus" "$tp" "$pp" "$gb" "$tf" "$pub" \
    "$(echo "$tf $pub" | awk '{ print ($1 - $2) / $2 * 100 }')" "$wall"
done <<'ROWS'
gpt-1.7b 32 1 1 512 1f1b 137
gpt-3.6b 64 2 1 512 1f1b 138
gpt-7.5b 128 4 1 512 1f1b 142
gpt-18.4b 256 8 1 1024 1f1b 135
gpt-39.1b 512 8 2 1536 interleaved:2 138
gpt-76.1b 1024 8 4 1792 interleaved:3 140
gpt-145.6b 1536 8 8 2304 interleaved:2 148
gpt-310.1b 1920 8 16 2160 interleaved:2 155
gpt-529.6b 2520 8 35 2520 interleaved:3 163
gpt-1008b 3072 8 64 3072 interleaved:2 163
ROWS
