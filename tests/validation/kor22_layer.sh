#!/bin/sh
# kor22_layer.sh [BUILD_DIR [SETTINGS]] - one Transformer layer of the 22B
# GPT of Korthikanti et al. (KOR22-T4-* rows of
# shared/validation/calibration.csv: h 6144, 64 heads, s 2048, micro-batch
# 4, TP 8 on 8 A100, unfused attention as they ran it): forward and
# backward time of one layer, per recomputation mode and with sequence
# parallelism, against the published times.  A sanity check of the
# operator cost model and the TP collectives; not fitted.
#
# SETTINGS (default: KOR22's code, below; "-" for weft's defaults): the
# paper's code is Megatron-LM of 2022 (the sequence_parallel branch, e.g.
# cfd2e21, 2022-04), whose layer has the kernels of --fusion jit
# (ColumnParallelLinear's explicit `output + bias` in
# LinearWithGradAccumulationAndAsyncCommunication, baddbmm, the
# permute(...).contiguous() of the context, split_tensor_along_last_dim,
# bias_dropout_add_fused_train, scaled_upper_triang_masked_softmax) and
# runs the column-parallel layers' input-gradient all-reduce (with SP: the
# input's all-gather and the reduce-scatter) asynchronously beside the
# GEMMs (--async-tp-grad yes; mpu/layers.py; arguments.py's
# --no-async-tensor-model-parallel-allreduce, on by default).
# The times are spans: from the first task of the layer's forward (or
# backward, with its recomputation) to the last one's end, so that
# communication beside a GEMM counts once.
build=${1:-build}
settings=${2:---fusion jit --async-tp-grad yes}
[ "$settings" = - ] && settings=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-16s %9s %9s %9s   %s\n' row fwd_ms bwd_ms total_ms published
while read -r row flags pub; do
  "$build/weft" run --model gpt-18.4b --hidden 6144 --heads 64 --ffn 24576 \
    --layers 2 --cluster selene --gpus 8 --tp 8 --micro-batch 4 --global-batch 4 \
    --attention unfused $settings $(echo "$flags" | tr ',' ' ') --chrome "$tmp/t.json" >/dev/null || exit 1
  python3 - "$tmp/t.json" "$row" "$pub" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
span = {True: [], False: []}
for e in ev:
    if e.get("ph") != "X" or e["pid"] != 0 or " L1" not in e["name"]:
        continue
    # forward; else the backward and its recomputation
    span[e["name"].startswith("fwd")].append((e["ts"], e["ts"] + e["dur"]))
f, b = ((max(x[1] for x in span[k]) - min(x[0] for x in span[k]))
        for k in (True, False))
print("%-16s %9.2f %9.2f %9.2f   %s" % (sys.argv[2], f / 1e3, b / 1e3, (f + b) / 1e3, sys.argv[3]))
PY
done <<'ROWS'
KOR22-T4-BASE --recompute,none 7.7/11.9/19.6
KOR22-T4-SP --recompute,none,--sp,yes 7.2/11.8/19.0
KOR22-T4-FULL --recompute,full 7.7/19.5/27.2
KOR22-T4-SEL --recompute,selective 7.7/13.2/20.9
KOR22-T4-SELSP --recompute,selective,--sp,yes 7.2/13.1/20.3
ROWS
