#!/bin/sh
# run.sh [BUILD_DIR] [BUDGET] - Tensor3D against Megatron-LM for an 80B GPT
# on 1024 GPUs of a Perlmutter-like cluster (issue 15, item 5): the best
# plan weft plan finds in each family, simulated, and the speedup.
#
# The model: a GPT of 80.5B parameters (64 layers, hidden 10240, 80 heads
# of 128, sequence 2048, vocabulary 51200: gpt-76.1b's shape with 64
# layers), global batch 2048 sequences (4M tokens), BF16.  The cluster:
# the perlmutter preset (4 A100-40GB and 4 Slingshot-11 NICs per node;
# its dragonfly with adaptive routing since session 46, issue 39; add
# --dragonfly-routing minimal to the plan lines for the static minimal
# routes of results.txt before that), and the same nodes on a
# non-blocking fat tree.  Each family
# searched by weft plan: megatron (1D TP, PP with interleaving, ZeRO-1,
# FSDP, HSDP), tensor3d (GX x GY x GZ grids of up to 1024 GPUs, 1-4 pieces,
# with DP and ZeRO-1); the best TOP plans by closed form simulated.
# Nothing is tuned to any published speedup.
build=${1:-build}
budget=${2:-900}
top=${TOP:-6}
model="--model gpt-76.1b --layers 64 --heads 80 --global-batch 2048"
for topo in dragonfly fat-tree; do
  for fam in megatron tensor3d; do
    "$build/weft" plan --cluster perlmutter --gpus 1024 --topology "$topo" \
      $model --family "$fam" --grid-max 64 --top "$top" --budget "$budget" -j 2 --json \
      --show "$top" >"/tmp/t3-$topo-$fam.json" || exit 1
  done
  python3 - "$topo" "/tmp/t3-$topo-megatron.json" "/tmp/t3-$topo-tensor3d.json" <<'PY'
import json, sys
topo = sys.argv[1]
best = {}
for fam, path in (("megatron", sys.argv[2]), ("tensor3d", sys.argv[3])):
    d = json.load(open(path))
    sim = [p for p in d["plans"] if p["status"] == "simulated"]
    p = sim[0]
    split = ("3D %s k%d" % (p["tensor3d"].replace(",", "x"), p["pieces"])
             if p["tensor3d"] else "TP %d" % p["tp"])
    desc = "%s PP %d DP %d mb %d %s %s %s" % (
        split, p["pp"], p["dp"], p["micro_batch"], p["schedule"],
        p["recompute"], p["sharding"])
    best[fam] = p["simulated_s"]
    print("%-9s %-9s %-58s %8.3f s %6.1f TFLOP/s  (%d of %d fitting plans simulated, Spearman %s)"
          % (topo, fam, desc, p["simulated_s"], p["tflops_per_gpu"],
             d["simulated"], d["fit"],
             "%.2f" % d["spearman"] if d["spearman"] is not None else "-"))
print("%-9s speedup of the best Tensor3D plan over the best Megatron plan: %.2fx"
      % (topo, best["megatron"] / best["tensor3d"]))
PY
done
