#!/bin/sh
# stacks.sh [BUILD_DIR] - what weft predicts for the whole-step jobs of
# issue 37, each run under the software stack that ran it (weft list
# stacks), beside the same job with weft's defaults (no stack).  Nothing
# here is compared with, or tuned to, a published throughput: the
# measurements of these jobs are held back to check the predictions
# (recorded in stacks.out so that a change that moves them shows).
#
# Layouts:
#   torchtitan (FSDP2 over all GPUs, BF16, sequence 8192, its selective
#     recomputation, local batch 1; llama3_8b.toml's defaults): Llama 3 8B
#     on 8 H100 and on 8 A100, eager and compiled; Llama 3 70B on 64 H100
#     with full recomputation;
#   Megatron-Core with Transformer Engine in FP8 (NeMo's layouts as the
#     issue names them: TP 1 with DP or CP): GPT 5B (24 x 4096, seq 2048,
#     TP 1, 8 H100), Llama 2 7B (TP 1, 8 H100, seq 4096), Llama 3 8B (TP 1,
#     CP 2, 8 H100), and the Llama 3 70B (64 H100, TP 4, PP 4
#     interleaved x 5, CP 2, SP); global batch 128, micro-batch 1;
#   Llama 3 8B as NeMo's H100 settings table lays it out (scripts/
#     performance/recommended_model_configs/model_configs_h100.csv, settings
#     columns only): BF16 at TP 1, CP 2, and FP8 at TP 1, CP 1 with
#     Megatron-FSDP (use_mcore_fsdp, keep_fsdp_fp8_transpose_cache and NCCL
#     user buffers: stack megatron-fsdp, which also reduces gradients in
#     BF16 without accumulation fusion as the performance scripts set them,
#     helpers.py), no recomputation; BF16 also with Megatron-FSDP, as a
#     what-if;
#   Megatron-LM 2021 and DeepSpeed 2021: megatron_table1.sh and
#     analysis/compare_strategies.sh.
build=${1:-build}
w=$build/weft
printf '%-34s %-18s %8s %8s %6s %8s %s\n' job stack iter_s "TF/GPU" "MFU%" "mem GB" fits
run() { # LABEL STACK ARGS...
  label=$1; st=$2; shift 2
  if [ "$st" = - ]; then set -- "$@"; else set -- "$@" --stack "$st"; fi
  "$w" run "$@" --json -q | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('%-34s %-18s %8.3f %8.1f %6.1f %8.2f %s' % ('$label', '$st',
      d['iteration_time_s'], d['tflops_per_gpu'], 100 * d['mfu'],
      d['memory_per_gpu_bytes'] / 1e9, 'yes' if d['fits_in_memory'] else 'NO'))"
}
tt8="--model llama3-8b --gpus 8 --global-batch 8 --recompute selective"
for c in dgx-h100 dgx-a100; do
  run "llama3-8b FSDP2 8 ${c#dgx-}" - $tt8 --cluster $c --fsdp yes --shard-impl fsdp2
  run "llama3-8b FSDP2 8 ${c#dgx-}" torchtitan $tt8 --cluster $c
  run "llama3-8b FSDP2 8 ${c#dgx-}" torchtitan-compile $tt8 --cluster $c
done
tt70="--model llama3-70b --cluster dgx-h100 --gpus 64 --global-batch 64 --recompute full"
run "llama3-70b FSDP2 64 h100" - $tt70 --fsdp yes --shard-impl fsdp2
run "llama3-70b FSDP2 64 h100" torchtitan $tt70
run "llama3-70b FSDP2 64 h100" torchtitan-compile $tt70
mc="--cluster dgx-h100 --gpus 8 --global-batch 128 --dtype fp8 --recompute selective"
g5="--model gpt-7.5b --layers 24"
run "gpt-5b TP1 8 h100 fp8" - $g5 $mc --zero 1 --shard-impl megatron
run "gpt-5b TP1 8 h100 fp8" megatron-core $g5 $mc
run "llama2-7b TP1 8 h100 fp8" - --model llama2-7b $mc --zero 1 --shard-impl megatron
run "llama2-7b TP1 8 h100 fp8" megatron-core --model llama2-7b $mc
run "llama3-8b TP1 CP2 8 h100 fp8" - --model llama3-8b $mc --cp 2 --zero 1 --shard-impl megatron
run "llama3-8b TP1 CP2 8 h100 fp8" megatron-core --model llama3-8b $mc --cp 2
l70="--model llama3-70b --cluster dgx-h100 --gpus 64 --tp 4 --pp 4 --cp 2 --sp yes --schedule interleaved:5 --dtype fp8 --global-batch 128 --recompute selective"
run "llama3-70b TP4 PP4x5 CP2 64 h100" - $l70 --zero 1 --shard-impl megatron
run "llama3-70b TP4 PP4x5 CP2 64 h100" megatron-core $l70
n8="--model llama3-8b --cluster dgx-h100 --gpus 8 --global-batch 128 --recompute none"
run "llama3-8b TP1 CP2 8 h100 bf16" megatron-core $n8 --cp 2
run "llama3-8b TP1 8 h100 bf16" megatron-fsdp $n8
run "llama3-8b TP1 CP2 8 h100 fp8" megatron-core $n8 --cp 2 --dtype fp8
run "llama3-8b TP1 8 h100 fp8" megatron-fsdp $n8 --dtype fp8
