#!/bin/sh
# Agarwal et al. (MLSys 2022) reproduced as far as weft can: sweep the
# paper's setups (study.xml), then print weft beside the paper and draw the
# plots (compare.py).  Run from the repository root after building weft:
#   sh analysis/repro-agarwal/run.sh [OUTDIR]
# 1764 scenarios (each simulated with and without compression) in about 45 s
# with -j 2 on a shared 2-core machine.
set -e
dir=$(dirname "$0")
out=${1:-$dir/out}
mkdir -p "$out"
rm -f "$out/results.csv"
build/weft sweep "$dir/study.xml" -o "$out/results.csv" -j 2
# BERT-base at 64 GPUs on 4-GPU nodes (the study's) and on the 8-GPU
# nodes that the paper's BERT script launches (run_ddp_bert.sh
# --nproc_per_node=8; README), at 10 and 25 Gb/s per node (p3.8xlarge's
# and p3.16xlarge's own rates), without and with four methods: 16 runs,
# a few seconds.  One NIC per node whatever its GPUs (--gpus-per-node alone
# keeps the GPUs per NIC and would give 8-GPU nodes two NICs).
bert="--cluster $dir/p3-cluster.xml --model gpt-1.7b --dtype fp32 --grad-dtype fp32
  --bucket 25MB --overlap-grad yes --seq 512 --host-op 3.3us --layers 12
  --hidden 768 --heads 12 --kv-heads 12 --ffn 3072 --vocab 30522
  --micro-batch 8 --gpus 64 --global-batch 512"
for gpn in 4 8; do
  for gs in 10:1 25:2.5; do
    g=${gs%:*}
    for m in none powersgd:4 powersgd:16 topk:0.01 sign; do
      c=""
      [ "$m" = none ] || c="--compress $m"
      build/weft run $bert --gpus-per-node $gpn --nics-per-node 1 --scale-nic "${gs#*:}" $c \
        --json >"$out/bert-gpn$gpn-$g-$m.json"
    done
  done
done
python3 "$dir/compare.py" "$out/results.csv" "$out"
