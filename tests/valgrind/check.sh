#!/bin/sh
# check.sh WEFT - the engine under valgrind memcheck.  ASan and UBSan see
# weft's code but not inside libsimgrid, where the bridge's mistakes land
# (a completion callback that drops the last reference to an activity
# SimGrid still reads, say).  A small run, a collective sweep and a traced
# run must report no error, and so must flows sent by courier actors and
# the study layer (sweep, resume, merge, report, plan).  No suppressions are needed with Debian's
# SimGrid 3.32.  Prints "valgrind: N passed, N failed".
weft=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
vg() { # NAME ARGS...
  name=$1; shift
  if valgrind --error-exitcode=99 --leak-check=no -q "$weft" "$@" \
       >"$tmp/out" 2>"$tmp/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: valgrind weft $*"; head -40 "$tmp/err"
  fi
}
vg run run --model gpt-1.7b --layers 4 --gpus 8 --tp 2 --pp 2 --global-batch 8
vg breakdown run --model gpt-1.7b --layers 4 --gpus 16 --tp 2 --pp 2 --cp 2 \
  --global-batch 8 --breakdown --json
vg coll coll allreduce --cluster dgx-h100 --gpus 16 --max-bytes 64MiB
# Tensor3D on two nodes (X, Y, Z groups as representatives of a node-wide
# grid), and gradient compression with its second, baseline replay.
vg tensor3d run --model gpt-1.7b --layers 4 --gpus 16 --tensor3d 2,2,2 \
  --overdecompose 2 --micro-batch 2 --global-batch 8
vg compress run --model gpt-1.7b --layers 4 --gpus 16 --global-batch 16 \
  --compress powersgd:2
vg traced run --model gpt-1.7b --layers 4 --gpus 16 --tp 2 --pp 2 \
  --global-batch 16 --collective tree --paje "$tmp/t.paje" --chrome "$tmp/t.json"
# Replica symmetry and representative rings and trees (engine.c, coll.c):
# ZeRO-3 as DeepSpeed 2021 ran it on 4 nodes (rings and tree all-reduces).
vg symmetric run --model gpt-1.7b --layers 4 --cluster selene --gpus 32 \
  --zero 3 --shard-impl deepspeed-2021 --global-batch 32
vg pat coll allgather --cluster dgx-h100 --gpus 64 --max-bytes 1MiB \
  --collective pat
# Every flow sent by courier actors (sgbridge.cpp): expert all-to-alls over
# two nodes, and the rings and sends of a pipeline.
export WEFT_COURIERS=on
vg couriers run --model mixtral-8x7b --layers 1 --gpus 32 --tp 2 --ep 8 \
  --global-batch 32
vg couriers-pp run --model gpt-1.7b --layers 4 --gpus 16 --tp 2 --pp 2 \
  --global-batch 16 --every-rank
unset WEFT_COURIERS
# The study layer (issue 35): a sweep (its parent: the pool, the locked
# results file, resume checks, the streaming sort), a resume with --retry,
# a merge, the report's tables and gnuplot scripts, and a plan search.
cat >"$tmp/s.xml" <<'XML'
<study name="vg">
  <set model="gpt-1.7b" layers="4" cluster="dgx-a100" gpus="8" global_batch="8"/>
  <var name="lab"/>
  <cross><axis name="tp" values="1 2"/><axis name="lab" values="a b"/></cross>
</study>
XML
vg sweep sweep "$tmp/s.xml" -o "$tmp/r.csv" -j 2
vg resume sweep "$tmp/s.xml" -o "$tmp/r.csv" --retry
vg sweep-chunk sweep "$tmp/s.xml" --chunk 1/2 -o "$tmp/c1.csv" -j 2
vg merge sweep --merge -o "$tmp/m.csv" "$tmp/c1.csv" "$tmp/r.csv"
vg report report "$tmp/r.csv" -o "$tmp/plots"
vg plan plan --model gpt-1.7b --layers 4 --cluster dgx-a100 --gpus 8 \
  --global-batch 8 --top 2 -j 2
# Two jobs on one fabric (weft share): one replay per job alone, then
# both in one run, the shorter one restarted beside the longer.
vg share share --cluster dgx-h100 --nodes 4 --steps 2 \
  "0:--model gpt-1.7b --layers 4 --tp 4 --pp 2 --global-batch 8" \
  "1-3:--model gpt-1.7b --layers 4 --tp 8 --global-batch 24"
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
