#!/bin/sh
# run.sh WEFT OUTDIR - the regression set of a renovation: what weft prints
# for a fixed set of jobs (JSON of weft run without its wall time, task
# graphs, --breakdown, a Chrome trace, collectives, a plan search, a sweep),
# one file per job in OUTDIR.  Run it with the binary before and after a
# change that must not change behaviour, then `diff -r` the two folders:
#   sh tests/regress/run.sh old/weft /tmp/before
#   sh tests/regress/run.sh build/weft /tmp/after && diff -r /tmp/before /tmp/after
# Takes about a minute on two cores.
w=$1
out=$2
[ -x "$w" ] && [ -n "$out" ] || { echo "usage: run.sh WEFT OUTDIR" >&2; exit 2; }
mkdir -p "$out"
n=0
job() { # NAME ARGS... : weft run --json, sim_wall_s removed
  name=$1; shift
  "$w" run "$@" --json -q 2>"$out/$name.err" | sed 's/"sim_wall_s": [^,}]*//' >"$out/$name.json"
  echo "exit $?" >>"$out/$name.err"
  n=$((n + 1))
}
graph() { # NAME ARGS... : weft graph
  name=$1; shift
  "$w" graph "$@" -o "$out/$name.graph" >/dev/null 2>"$out/$name.gerr"
  n=$((n + 1))
}
g8="--cluster dgx-a100 --gpus 64"
job gpt-tp2-pp2 --model gpt-1.7b $g8 --tp 2 --pp 2 --global-batch 64
job gpt-interleaved --model gpt-7.5b --cluster dgx-a100 --gpus 48 --tp 2 --pp 3 --schedule interleaved:2 --global-batch 48
job gpt-zero1 --model gpt-1.7b $g8 --zero 1 --global-batch 64
job gpt-zero3 --model gpt-1.7b $g8 --zero 3 --global-batch 64
job llama-fsdp2 --model llama3-8b --cluster dgx-h100 --gpus 64 --fsdp yes --global-batch 64
job llama-hsdp --model llama3-8b --cluster dgx-h100 --gpus 64 --tp 2 --hsdp 8 --global-batch 64
job llama-megatron --model llama3-70b --cluster dgx-h100 --gpus 64 --tp 4 --pp 4 --cp 2 --sp yes --schedule interleaved:5 --dtype fp8 --zero 1 --shard-impl megatron --global-batch 128 --breakdown
job llama-overlap-gather --model llama3-8b --cluster dgx-h100 --gpus 16 --cp 2 --zero 1 --shard-impl megatron --overlap-param-gather yes --recompute selective --global-batch 64
job ds2021 --model gpt-7.5b --cluster dgx-a100 --gpus 64 --zero 3 --shard-impl deepspeed-2021 --global-batch 64
job moe-ep --model mixtral-8x7b --cluster dgx-h100 --gpus 64 --tp 1 --ep 8 --pp 2 --global-batch 64
job moe-ep-across --model mixtral-8x7b --cluster dgx-h100 --gpus 32 --tp 2 --ep 8 --pp 2 --global-batch 32
job tensor3d --model gpt-7.5b --cluster perlmutter --gpus 64 --tensor3d 2,2,2 --global-batch 64
job powersgd --model gpt-1.7b $g8 --compress powersgd:4 --global-batch 64
job topk --model gpt-1.7b $g8 --compress topk:0.01 --global-batch 64
job rail --model llama3-8b --cluster dgx-h100 --gpus 64 --topology rail --tp 2 --global-batch 64
job dragonfly --model gpt-1.7b --cluster dgx-a100 --gpus 64 --topology dragonfly --global-batch 64
job torus --model gpt-1.7b --cluster dgx-a100 --gpus 64 --topology torus --torus 4x2 --global-batch 64
job gb200 --model llama3-70b --cluster gb200-nvl72 --gpus 144 --tp 4 --zero 3 --global-batch 144
job every-rank --model gpt-1.7b $g8 --tp 2 --global-batch 64 --every-rank
job uneven --model gpt-1.7b $g8 --pp 4 --first-stage-layers 3 --global-batch 64
job future --model gpt-7.5b $g8 --generations 1 --global-batch 64
job default
graph g-interleaved --model gpt-7.5b --cluster dgx-a100 --gpus 48 --tp 2 --pp 3 --schedule interleaved:2 --global-batch 48
graph g-megatron --model llama3-8b --cluster dgx-h100 --gpus 16 --cp 2 --zero 1 --shard-impl megatron --overlap-param-gather yes --global-batch 32
graph g-zero2 --model gpt-1.7b $g8 --zero 2 --global-batch 64
graph g-fsdp --model llama3-8b --cluster dgx-h100 --gpus 16 --fsdp yes --recompute full --global-batch 32
graph g-moe --model mixtral-8x7b --cluster dgx-h100 --gpus 64 --ep 8 --pp 4 --global-batch 64
graph g-t3d --model gpt-7.5b --cluster perlmutter --gpus 64 --tensor3d 2,2,2 --global-batch 64
graph g-powersgd --model gpt-1.7b $g8 --compress powersgd:4 --global-batch 64
# The builder's less travelled paths: the other compression methods, loss
# and accumulation variants, DeepSpeed's and FSDP1's ZeRO-3, blocking and
# scatter/gather transfers with unfused attention, MXFP8, Tensor3D pieces.
g16="--cluster dgx-a100 --gpus 16 --global-batch 16"
graph g-fp16 --model gpt-1.7b $g16 --compress fp16
graph g-randomk --model gpt-1.7b $g16 --compress randomk:0.01 --cross-entropy 16bit
graph g-sign --model gpt-1.7b $g16 --compress sign --grad-accum buffer
graph g-efsign --model gpt-1.7b $g16 --compress efsign --cross-entropy fused
graph g-qsgd --model gpt-1.7b --cluster dgx-a100 --gpus 16 --compress qsgd:4 --pp 2 --global-batch 32
graph g-deepspeed --model llama3-8b --cluster dgx-h100 --gpus 16 --zero 3 --shard-impl deepspeed --global-batch 16
graph g-ds2021 --model gpt-7.5b $g16 --zero 3 --shard-impl deepspeed-2021
graph g-fsdp1-moe --model mixtral-8x7b --cluster dgx-h100 --gpus 32 --ep 8 --fsdp yes --shard-impl fsdp1 --global-batch 32
graph g-blocking --model gpt-1.7b --cluster dgx-a100 --gpus 16 --tp 2 --pp 2 --p2p blocking --attention unfused --recompute selective --global-batch 32
graph g-mxfp8 --model llama3-8b --cluster gb200-nvl72 --gpus 72 --tp 2 --pp 2 --dtype fp8 --fp8-recipe mxfp8 --global-batch 36
graph g-t3d-pieces --model gpt-1.7b --cluster perlmutter --gpus 32 --tensor3d 2,2,2 --overdecompose 2 --micro-batch 2 --recompute full --pp 2 --global-batch 32
"$w" run --model gpt-1.7b --cluster dgx-a100 --gpus 16 --tp 2 --pp 2 --global-batch 16 --chrome "$out/trace.json" -q >/dev/null 2>&1
"$w" coll allreduce --cluster dgx-h100 --gpus 64 >"$out/coll.txt" 2>&1
"$w" plan --model llama3-8b --cluster dgx-h100 --gpus 64 --global-batch 64 -j 2 2>&1 | sed "s/ in [0-9.]* s/ in (wall) s/g" >"$out/plan.txt"
cat >"$out/study.xml" <<'XML'
<study name="regress">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="64" global_batch="64"/>
  <cross><axis name="tp" values="1 2 4"/><axis name="pp" values="1 2"/></cross>
</study>
XML
"$w" sweep "$out/study.xml" -o "$out/sweep.csv" -j 2 >/dev/null 2>&1
rm -f "$out/study.xml"
echo "regress: $n jobs and graphs, a trace, coll, plan and a sweep in $out"
