#!/bin/sh
# predictions.sh [BUILD_DIR] - what weft predicts for the jobs issue 10 asks
# about, with the settings a NeMo/Megatron-LM user would pick, in BF16 and
# FP8.  No row here is compared with a published figure and nothing is
# tuned to one: these are predictions, recorded in predictions.out so that
# a later change that moves them shows in review.
#
# Settings (NeMo 2.0's recipes nemo/collections/llm/recipes/llama3_*.py
# and Megatron-LM's distributed optimizer): Llama 3 8B on 8 H100, TP 1,
# CP 2, micro-batch 1; Llama 3 70B on 64 H100, TP 4, PP 4 interleaved x 5,
# CP 2, sequence parallelism; Llama 3 405B on 8 GB200 NVL72 racks (576
# GPUs), TP 8, PP 9 interleaved x 2 (126 = 9 x 14 layers), CP 2, sequence
# parallelism.  All: sequence 8192, global batch 128 (405B: 288, 72 micro-batches
# per pipeline, a multiple of PP as the interleaved schedule needs), ZeRO-1
# as Megatron's distributed optimizer runs it with NeMo's DDP settings
# (--shard-impl megatron: FP32 gradient reduction, gradient accumulation
# fused into the weight-gradient GEMMs; --overlap-param-gather yes, as the
# recipes' overlap_param_gather=True), selective recomputation, fused attention
# (cuDNN on Hopper and Blackwell).  FP8 is Transformer Engine's delayed
# scaling; on GB200 also the MXFP8 recipe.
build=${1:-build}
w=$build/weft
printf '%-40s %-12s %9s %9s %9s %7s %8s %8s %8s\n' job dtype iter_s "TF/GPU" \
  "mTF/GPU" "MFU%" "GEMM s" "attn s" "mem s"
run() { # LABEL DTYPE ARGS...
  label=$1; dt=$2; shift 2
  "$w" run "$@" --json -q | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('%-40s %-12s %9.3f %9.1f %9.1f %7.1f %8.3f %8.3f %8.3f' % ('$label',
      '$dt', d['iteration_time_s'], d['tflops_per_gpu'],
      d['model_tflops_per_gpu'], 100 * d['mfu'], d['compute_gemm_s'],
      d['compute_attention_s'], d['compute_memory_bound_s']))"
}
common="--zero 1 --shard-impl megatron --overlap-param-gather yes --recompute selective"
l8="--model llama3-8b --cluster dgx-h100 --gpus 8 --cp 2 --global-batch 128 $common"
l70="--model llama3-70b --cluster dgx-h100 --gpus 64 --tp 4 --pp 4 --schedule interleaved:5 --cp 2 --sp yes --global-batch 128 $common"
l405="--model llama3-405b --cluster gb200-nvl72 --gpus 576 --tp 8 --pp 9 --schedule interleaved:2 --cp 2 --sp yes --global-batch 288 $common"
run "llama3-8b 8 H100 TP1 CP2" bf16 $l8
run "llama3-8b 8 H100 TP1 CP2" fp8 $l8 --dtype fp8
run "llama3-70b 64 H100 TP4 PP4x5 CP2" bf16 $l70
run "llama3-70b 64 H100 TP4 PP4x5 CP2" fp8 $l70 --dtype fp8
run "llama3-405b 576 GB200 TP8 PP9x2 CP2" bf16 $l405
run "llama3-405b 576 GB200 TP8 PP9x2 CP2" fp8 $l405 --dtype fp8
run "llama3-405b 576 GB200 TP8 PP9x2 CP2" fp8-mxfp8 $l405 --dtype fp8 --fp8-recipe mxfp8

# One held-back whole-step row to set them against (kernels.csv
# CTX-E2E-B200-LLAMA3-8B-*, torchao's training.md: torchtitan, 8
# power-limited B200 at an unstated cap, FSDP2, batch 1 x 8192 tokens per
# GPU; measured 8307.5 tokens/s per GPU in BF16 and 9969 with MXFP8, 1.20x).
echo
echo "torchtitan Llama 3 8B on 8 B200 (FSDP2, batch 1 x 8192), tokens/s per GPU:"
tt="--model llama3-8b --cluster dgx-b200 --gpus 8 --fsdp yes --shard-impl fsdp2 --global-batch 8"
b=$("$w" run $tt --json -q | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['tokens_per_s'] / d['gpus'])")
x=$("$w" run $tt --dtype fp8 --fp8-recipe mxfp8 --json -q | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['tokens_per_s'] / d['gpus'])")
python3 -c "
b, x = $b, $x
print('  weft: bf16 %.0f, mxfp8 %.0f, speedup %.2fx; measured: bf16 8307.5, mxfp8 9969, speedup 1.20x; bf16 %+.0f %%' % (b, x, x / b, 100 * (b / 8307.5 - 1)))"
