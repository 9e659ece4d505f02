#!/bin/sh
# check.sh WEFT - the engine under valgrind memcheck.  ASan and UBSan see
# weft's code but not inside libsimgrid, where the bridge's mistakes land
# (a completion callback that drops the last reference to an activity
# SimGrid still reads, say).  A small run, a collective sweep and a traced
# run must report no error, and so must flows sent by courier actors.  No suppressions are needed with Debian's
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
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
