#!/bin/sh
# compare_strategies.sh [BUILD_DIR] - which way of splitting a model wins as
# the GPU count grows?  Simulates one iteration of each configuration with
# weft run and prints throughput per GPU.
#
# 1. GPT-3 175B on 384, 768 and 1536 A100 (Selene): ZeRO-3 over all GPUs
#    (micro-batch 4, 2, 1: one micro-batch per GPU) against TP 8 x PP 12 x
#    DP (micro-batch 1, interleaved 1F1B with 2 chunks), global batch 1536,
#    full recomputation for both: each with the software of 2021 (stacks
#    deepspeed-2021 and megatron-2021, FP16, unfused attention), then as
#    it runs now (stacks deepspeed and megatron-core).
# 2. Llama 3 70B (sequence 8192, global batch 2048) on 64 to 2048 H100:
#    FSDP over all GPUs (FSDP2), HSDP (FSDP2, shard inside each 8-GPU node,
#    replicate across nodes) and TP 8 x PP 4 x DP, plain and with Megatron's
#    distributed optimizer (--zero 1 --shard-impl megatron
#    --overlap-param-gather yes); full recomputation.
# PARTS=1 or PARTS=2 runs one part only.
# Results are printed as they come; a configuration that does not fit in
# HBM is still simulated and marked.
build=${1:-build}
weft="$build/weft"

row() { # LABEL GPUS ARGS...: one simulation, one line
  label=$1; gpus=$2; shift 2
  out=$("$weft" run --json --gpus "$gpus" "$@" 2>&1) || { printf '%-34s %6s  error: %s\n' "$label" "$gpus" "$out"; return; }
  echo "$out" | awk -v l="$label" -v g="$gpus" '{
    match($0, /"tflops_per_gpu": [0-9.e+-]+/); tf = substr($0, RSTART + 18, RLENGTH - 18)
    match($0, /"model_tflops_per_gpu": [0-9.e+-]+/); mt = substr($0, RSTART + 24, RLENGTH - 24)
    match($0, /"tokens_per_s": [0-9.e+-]+/); tk = substr($0, RSTART + 16, RLENGTH - 16)
    match($0, /"exposed_comm_s": [0-9.e+-]+/); ex = substr($0, RSTART + 18, RLENGTH - 18)
    match($0, /"iteration_time_s": [0-9.e+-]+/); it = substr($0, RSTART + 20, RLENGTH - 20)
    match($0, /"memory_per_gpu_bytes": [0-9]+/); mem = substr($0, RSTART + 24, RLENGTH - 24)
    fits = ($0 ~ /"fits_in_memory": true/) ? "" : "  (does not fit)"
    printf "%-34s %6d %9.1f %9.1f %11.0f %8.1f%% %7.1f GB%s\n", l, g, tf, mt, tk / g, 100 * ex / it, mem / 1e9, fits
  }'
}

header() {
  printf '\n%s\n%-34s %6s %9s %9s %11s %9s %10s\n' "$1" strategy gpus "TFLOP/s" "model" "tokens/s/GPU" exposed memory
}

parts=${PARTS:-12}
case $parts in *1*)
header "GPT-3 175B on A100 (Selene), global batch 1536"
for spec in 384:4 768:2 1536:1; do
  g=${spec%%:*}; mb=${spec##*:}
  # The software of 2021 on both sides: DeepSpeed's ZeRO-3 of then over
  # Megatron's GPT code of then (unfused attention, FP16), and Megatron-LM
  # v2.5 (its stack).  Then each as it runs today.
  row "ZeRO-3 deepspeed-2021, mb $mb" "$g" --model gpt3-175b --cluster selene \
    --stack deepspeed-2021 --attention unfused --dtype fp16 --micro-batch "$mb" \
    --global-batch 1536 --recompute full
  row "TP 8 x PP 12 x DP $((g / 96)), megatron-2021" "$g" --model gpt3-175b \
    --cluster selene --stack megatron-2021 --dtype fp16 --tp 8 --pp 12 \
    --global-batch 1536 --schedule interleaved:2 --recompute full
  row "ZeRO-3 deepspeed, mb $mb" "$g" --model gpt3-175b --cluster selene \
    --stack deepspeed --micro-batch "$mb" --global-batch 1536 --recompute full
  row "TP 8 x PP 12 x DP $((g / 96)), megatron-core" "$g" --model gpt3-175b \
    --cluster selene --stack megatron-core --tp 8 --pp 12 --sp yes \
    --global-batch 1536 --schedule interleaved:2 --recompute full
done
;; esac

case $parts in *2*)
header "Llama 3 70B on H100, sequence 8192, global batch 2048"
for g in 64 256 1024 2048; do
  row "FSDP (fsdp2)" "$g" --model llama3-70b --cluster dgx-h100 --fsdp yes \
    --shard-impl fsdp2 --global-batch 2048 --recompute full
  row "HSDP 8 (fsdp2)" "$g" --model llama3-70b --cluster dgx-h100 \
    --hsdp 8 --shard-impl fsdp2 --global-batch 2048 --recompute full
  row "TP 8 x PP 4 x DP $((g / 32))" "$g" --model llama3-70b --cluster dgx-h100 \
    --tp 8 --pp 4 --global-batch 2048 --schedule interleaved:5 --recompute full
  row "same, Megatron dist. optimizer" "$g" --model llama3-70b --cluster dgx-h100 \
    --tp 8 --pp 4 --global-batch 2048 --schedule interleaved:5 --recompute full \
    --zero 1 --shard-impl megatron --overlap-param-gather yes
done
;; esac
