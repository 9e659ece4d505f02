#!/bin/sh
# mem_layouts.sh [BUILD_DIR] - weft's memory per GPU for layouts that
# published runs ran (issue 37, item 4), under each memory framework
# (--mem-framework: zero, the ZeRO paper's 2 + 2 + 12 bytes per parameter;
# megatron, Megatron-Core with Transformer Engine; torchtitan, FSDP2).
# Only memory is compared here, never a step time; no number is tuned to a
# run.  The capacity is the catalog's (80 GB = 80e9 bytes; an H100 SXM
# has 80 GiB of HBM3, of which nvidia-smi reports 81559 MiB = 85.5e9
# bytes), so both GB and GiB are printed.
#
# Layouts (the settings a user of each stack runs; issue 37):
#  - torchtitan's Llama 3 8B: FSDP2 over 8 GPUs, micro-batch 2 of 8192
#    tokens, selective (per-op) recomputation, a 96 GB H100 (the catalog's
#    H100 scaled by 1.2), reported to run in about 82 GiB;
#  - NeMo's Llama 3 8B on 8 H100: TP 1, CP 2, micro-batch 1 of 8192,
#    distributed optimizer, selective recomputation (predictions.sh);
#  - GPT 20B (NeMo's gpt3 20B: 44 layers, h 6144, 48 heads, FFN 24576,
#    sequence 2048) with TP 2 and sequence parallelism, micro-batch 1, on
#    16 H100;
#  - GPT-3 175B with TP 4, PP 8, 12 model chunks per stage, sequence
#    parallelism, micro-batch 1, on 128 H100.
# megatron rows with grad_dtype fp32 are Megatron-LM's default (bf16
# implies --accumulate-allreduce-grads-in-fp32); with bf16 they are NeMo's
# performance recipes (scripts/performance helpers set
# grad_reduce_in_fp32 = False).
build=${1:-build}
w=$build/weft
printf '%-34s %-5s %-11s %-5s %7s %7s %7s %7s %7s %7s %8s %8s %5s\n' layout dtype \
  framework grads weights grads optim acts transnt buffers "total GB" "GiB" fits
row() { # LABEL DTYPE FRAMEWORK ARGS...
  label=$1; dt=$2; fw=$3; shift 3
  "$w" run "$@" --dtype "$dt" --mem-framework "$fw" --json -q | python3 -c "
import json, sys
d = json.load(sys.stdin)
m = d['memory']
g = lambda k: m[k] / 1e9
print('%-34s %-5s %-11s %-5s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %8.2f %8.2f %5s' % (
    '$label', '$dt', '$fw', d['inputs']['plan']['grad_dtype'],
    g('weights_bytes'), g('gradients_bytes'), g('optimizer_bytes'),
    g('activations_bytes'), g('transient_bytes'), g('buffers_bytes'),
    g('total_bytes'), m['total_bytes'] / 2**30,
    'yes' if d['fits_in_memory'] else 'NO'))"
}
tt="--model llama3-8b --cluster dgx-h100 --gpus 8 --fsdp yes --shard-impl fsdp2 --micro-batch 2 --global-batch 16 --recompute selective --scale-hbm-cap 1.2"
for fw in zero torchtitan; do
  row "llama3-8b FSDP2 8x96GB mb2" bf16 $fw $tt
done
mg="--zero 1 --shard-impl megatron --overlap-param-gather yes --recompute selective"
l8="--model llama3-8b --cluster dgx-h100 --gpus 8 --cp 2 --global-batch 128 $mg"
g20="--model gpt3-175b --layers 44 --hidden 6144 --heads 48 --ffn 24576 --cluster dgx-h100 --gpus 16 --tp 2 --sp yes --global-batch 256 $mg"
g175="--model gpt3-175b --cluster dgx-h100 --gpus 128 --tp 4 --pp 8 --sp yes --schedule interleaved:12 --global-batch 256 $mg"
for dt in bf16 fp8; do
  for job in "llama3-8b 8 H100 TP1 CP2|$l8" "gpt-20b 16 H100 TP2|$g20" \
             "gpt3-175b 128 H100 TP4 PP8x12|$g175"; do
    label=${job%%|*}; args=${job#*|}
    row "$label" $dt zero $args
    row "$label" $dt megatron $args
    row "$label" $dt megatron $args --grad-dtype bf16
  done
done
