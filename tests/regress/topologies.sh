#!/bin/sh
# topologies.sh WEFT OUTDIR - what weft prints for every fabric and option
# family: `weft platform` XML and --parts, and `weft run --json` (without
# its wall time), one file per job in OUTDIR.  The companion of run.sh for
# changes to platforms/topo*, platgen, the closed form's hop counts and the
# symmetry decision; use it the same way:
#   sh tests/regress/topologies.sh old/weft /tmp/before
#   sh tests/regress/topologies.sh build/weft /tmp/after
#   diff -r /tmp/before /tmp/after
w=$1
out=$2
[ -x "$w" ] && [ -n "$out" ] || {
  echo "usage: topologies.sh WEFT OUTDIR" >&2
  exit 2
}
mkdir -p "$out"
n=0
# fabric NAME ARGS... : the platform's XML and parts, and a run, of one
# cluster; small enough that the XML is written (flat zones: 256 GPUs).
fabric() {
  name=$1
  shift
  "$w" platform "$@" -o "$out/$name.xml" -q 2>"$out/$name.xe"
  echo "exit $?" >>"$out/$name.xe"
  # the message names the output file: OUTDIR stands for the folder
  sed "s|$out/|OUTDIR/|g" "$out/$name.xe" >"$out/$name.xerr"
  rm -f "$out/$name.xe"
  "$w" platform "$@" --parts -q >"$out/$name.parts" 2>&1
  echo "exit $?" >>"$out/$name.parts"
  n=$((n + 1))
}
# job NAME ARGS... : weft run --json, sim_wall_s removed.
job() {
  name=$1
  shift
  {
    "$w" run "$@" --json -q 2>"$out/$name.err"
    echo "exit $?" >>"$out/$name.err"
  } | sed 's/"sim_wall_s": [^,}]*//' >"$out/$name.json"
  n=$((n + 1))
}
a="--cluster dgx-a100"
h="--cluster dgx-h100"
m="--model gpt-1.7b --global-batch 64"
m128="--model gpt-1.7b --global-batch 128"
fabric ft $a --gpus 64 --nodes-per-leaf 2 --leaves-per-pod 2
fabric ft-over $a --gpus 64 --nodes-per-leaf 2 --leaves-per-pod 2 --oversubscription 2 --pod-oversubscription 1.5
fabric ft-default
fabric rail $h --gpus 64 --topology rail --nodes-per-leaf 2 --leaves-per-pod 2
fabric rail-nopxn $h --gpus 64 --topology rail --pxn 0 --nodes-per-leaf 2 --leaves-per-pod 2 --oversubscription 2
fabric rail-only $h --gpus 64 --topology rail-only --nodes-per-leaf 2 --leaves-per-pod 2 --oversubscription 2 --pod-oversubscription 2
fabric rail-only-default $h --gpus 64 --topology rail-only
fabric planes $h --gpus 64 --topology multi-plane --planes 4 --nodes-per-leaf 2 --oversubscription 2
fabric df $a --gpus 128 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1
fabric df-valiant $a --gpus 128 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1 --dragonfly-routing valiant --local-links 2
fabric torus2 $a --gpus 64 --topology torus --torus 4x2
fabric torus3 $a --gpus 96 --topology torus --torus 3x2x2
fabric nvl72 --cluster gb200-nvl72 --gpus 144
fabric nvl-rack $h --gpus 32 --nvl-rack 4 --nvl-oversubscription 2
fabric nvl-rack-rail $h --gpus 32 --topology rail --nvl-rack 4 --nvl-oversubscription 2
fabric big-ft $h --gpus 1024
fabric big-rail $h --gpus 1024 --topology rail
job r-ft $m $a --gpus 64 --nodes-per-leaf 2 --leaves-per-pod 2
job r-ft-tp $m $a --gpus 64 --tp 8 --nodes-per-leaf 2 --leaves-per-pod 2
job r-ft-over $m $a --gpus 64 --nodes-per-leaf 2 --leaves-per-pod 2 --oversubscription 2 --pod-oversubscription 1.5
job r-ft-over-tp $m $a --gpus 64 --tp 8 --nodes-per-leaf 2 --leaves-per-pod 2 --oversubscription 2
job r-ft-over-tp-every $m $a --gpus 64 --tp 8 --nodes-per-leaf 2 --oversubscription 2 --every-rank
job r-rail $m $h --gpus 64 --topology rail --nodes-per-leaf 2 --leaves-per-pod 2
job r-rail-tp $m $h --gpus 64 --tp 8 --topology rail --nodes-per-leaf 2 --leaves-per-pod 2 --pod-oversubscription 2
job r-rail-nopxn $m $h --gpus 64 --tp 2 --topology rail --pxn 0 --nodes-per-leaf 2 --oversubscription 2
job r-rail-only $m $h --gpus 64 --tp 2 --pp 2 --topology rail-only --nodes-per-leaf 2 --leaves-per-pod 2
job r-rail-only-tp $m $h --gpus 64 --tp 8 --topology rail-only --nodes-per-leaf 2 --oversubscription 2
job r-planes $m $h --gpus 64 --topology multi-plane --planes 4 --nodes-per-leaf 2 --oversubscription 2
job r-planes-tp $m $h --gpus 64 --tp 8 --topology multi-plane --nodes-per-leaf 2
job r-df $m128 $a --gpus 128 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1
job r-df-tp $m128 $a --gpus 128 --tp 8 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1
job r-df-valiant $m128 $a --gpus 128 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1 --dragonfly-routing valiant
job r-torus2 $m $a --gpus 64 --topology torus --torus 4x2
job r-torus2-tp $m $a --gpus 64 --tp 8 --topology torus --torus 4x2
job r-torus3 --model gpt-1.7b --global-batch 96 $a --gpus 96 --topology torus --torus 3x2x2
job r-nvl72 --model llama3-8b --cluster gb200-nvl72 --gpus 144 --tp 4 --global-batch 144
job r-nvl-rack --model llama3-8b $h --gpus 32 --tp 8 --nvl-rack 4 --nvl-oversubscription 2 --global-batch 32
job r-nvl-rack-rail --model llama3-8b $h --gpus 32 --tp 2 --topology rail --nvl-rack 4 --global-batch 32
job r-spread $m $a --gpus 64 --nodes-per-leaf 2 --leaves-per-pod 2 --placement spread --oversubscription 2
job r-random $m $a --gpus 64 --nodes-per-leaf 2 --placement random:7 --oversubscription 2
job r-df-spread $m128 $a --gpus 128 --topology dragonfly --routers-per-group 4 --global-links 2 --nodes-per-leaf 1 --placement spread
# Settings a fabric does not take, and a bad torus: the exact errors.
job e-pxn $m $a --gpus 64 --pxn 0
job e-torus $m $a --gpus 64 --topology torus
job e-torus-random $m $a --gpus 64 --topology torus --torus 4x2 --placement random
job e-valiant $m $a --gpus 64 --topology dragonfly --dragonfly-routing valiant
job e-unknown $m $a --gpus 64 --topology hypercube
job e-torus-dims $m $a --gpus 64 --topology torus --torus 2x2x2x1
job e-torus-1d $m $a --gpus 64 --topology torus --torus 8
job e-torus-size $m $a --gpus 64 --topology torus --torus 4x4
job e-torus-x $m $a --gpus 64 --topology torus --torus 4x2x
job e-torus-spread $m $a --gpus 64 --topology torus --torus 4x2 --placement spread
job e-routing $m $a --gpus 64 --topology dragonfly --dragonfly-routing ugal
job e-global $m $a --gpus 128 --topology dragonfly --routers-per-group 2 --global-links 2 --nodes-per-leaf 1
job e-planes $m $h --gpus 64 --topology rail --planes 2
job e-oversub $m $a --gpus 64 --topology torus --torus 4x2 --oversubscription 2
job e-nvl $m $h --gpus 64 --nvl-oversubscription 2
job e-nvl-rack $m $h --gpus 64 --nvl-rack 3
job r-torus-coll $m $a --gpus 64 --topology torus --torus 4x2 --collective torus
job e-coll-torus $m $a --gpus 64 --collective torus
echo "topologies: $n platforms and runs in $out"
