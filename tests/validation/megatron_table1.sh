#!/bin/sh
# megatron_table1.sh [BUILD_DIR] [FIRST] [LAST] - simulate the rows of
# Megatron-LM's Table 1 (MEG21-T1-01..10 of shared/validation/calibration.csv)
# and print predicted vs published achieved TFLOP/s per GPU.
#
# The settings are those of the authors' own script for this table,
# examples/sc21/run_table_1.sh and CONFIG.sh of NVIDIA/Megatron-LM at tag
# v2.5 (2021-08): TP, PP, micro-batch (16, 16, 16, 8, 4, 2, 2, 1, 1, 1),
# the interleaved schedule only where it sets
# --num-layers-per-virtual-pipeline-stage (76B: 3 chunks, 145B: 2, 310B: 2,
# 530B: 3; 39B, with 2 stages, and 1T run plain 1F1B), --fp16 (gradients
# all-reduced in FP16), and --DDP-impl torch for the rows without a
# pipeline (PyTorch DDP: 25 MB buckets reduced during the backward of the
# last micro-batch, the others under no_sync) and local for the others
# (Megatron's DDP of then: one all-reduce of the flattened FP16 gradients
# after the pipeline, no overlap, no contiguous buffers).  The software of
# 2021 as it behaved: attention as batched GEMMs with materialized scores
# (no FlashAttention yet), blocking pipeline send/recv (batch_isend_irecv
# then torch.cuda.synchronize, p2p_communication.py), gradients accumulated
# over the micro-batches by autograd in FP16 (no contiguous buffers: v2.5's
# LocalDDP adds into an FP32 main_grad only with
# --accumulate-allreduce-grads-in-fp32 or --use-contiguous-buffers-in-ddp,
# which CONFIG.sh does not set; PyTorch DDP under no_sync).  Full recomputation
# (--checkpoint-activations).  PyTorch 1.8 (nvcr.io/nvidia/pytorch:20.12-py3,
# examples/sc21/SRUN.sh) with TorchScript's fusions of bias-GeLU and
# bias-dropout-add: the QKV bias add, the biases' gradient sums, the
# attention's copies and scalings as ATen kernels (--fusion jit;
# analysis/reconcile/megatron2021.md).  Pass a different SOFTWARE string
# to try other assumptions.  Nothing here is fitted to these rows: the compute
# constants come from the catalog, the network ones from the COLL rows
# named in sim/coll.c.
SOFTWARE=${SOFTWARE:---attention unfused --p2p blocking --dtype fp16 --grad-dtype fp16 --grad-accum autograd --fusion jit}
build=${1:-build}
first=${2:-1}
last=${3:-10}
i=0
printf '%-6s %-11s %5s %3s %3s %4s %9s %9s %7s %8s\n' row model gpus tp pp gb predicted published error wall_s
while read -r model gpus tp pp mb gb sched ddp pub; do
  i=$((i + 1))
  [ "$i" -lt "$first" ] || [ "$i" -gt "$last" ] && continue
  out=$("$build/weft" run --json --model "$model" --cluster selene --gpus "$gpus" \
    --tp "$tp" --pp "$pp" --micro-batch "$mb" --global-batch "$gb" \
    --schedule "$sched" --recompute full $(echo "$ddp" | tr , " ") $SOFTWARE) || exit 1
  tf=$(echo "$out" | sed 's/.*"tflops_per_gpu": \([0-9.e+-]*\).*/\1/')
  wall=$(echo "$out" | sed 's/.*"sim_wall_s": \([0-9.e+-]*\).*/\1/')
  printf 'T1-%02d  %-11s %5s %3s %3s %4s %9.1f %9s %+6.1f%% %8s\n' "$i" "$model" "$gpus" "$tp" "$pp" "$gb" "$tf" "$pub" \
    "$(echo "$tf $pub" | awk '{ print ($1 - $2) / $2 * 100 }')" "$wall"
done <<'ROWS'
gpt-1.7b 32 1 1 16 512 1f1b --overlap-grad=yes,--bucket=25MB 137
gpt-3.6b 64 2 1 16 512 1f1b --overlap-grad=yes,--bucket=25MB 138
gpt-7.5b 128 4 1 16 512 1f1b --overlap-grad=yes,--bucket=25MB 142
gpt-18.4b 256 8 1 8 1024 1f1b --overlap-grad=yes,--bucket=25MB 135
gpt-39.1b 512 8 2 4 1536 1f1b --overlap-grad=no 138
gpt-76.1b 1024 8 4 2 1792 interleaved:3 --overlap-grad=no 140
gpt-145.6b 1536 8 8 2 2304 interleaved:2 --overlap-grad=no 148
gpt-310.1b 1920 8 16 1 2160 interleaved:2 --overlap-grad=no 155
gpt-529.6b 2520 8 35 1 2520 interleaved:3 --overlap-grad=no 163
gpt-1008b 3072 8 64 1 3072 1f1b --overlap-grad=no 163
ROWS
