#!/bin/sh
# test_plan.sh WEFT DIR - end-to-end tests of weft plan: bad input with its
# exact messages; a search small enough to simulate every plan, whose best
# must be the fastest of `weft run`s of the same plans, and none of whose
# plans may exceed the GPU's memory; a fixed dimension stays fixed.
# Prints "plan: N passed, N failed" and fails if any case failed.
weft=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$dir/lib.sh"

expect 2 "weft: the global batch is required (--global-batch or global_batch= in the workload file)" plan --model gpt-1.7b --gpus 8
expect 2 "weft: --budget: 'x' is not a number; expected a time such as 0.35us" plan --model gpt-1.7b --gpus 8 --global-batch 8 --budget x
expect 2 "weft: --top: '-1' is below the minimum of 0" plan --model gpt-1.7b --gpus 8 --global-batch 8 --top -1
expect 2 "weft: --jobs: '0' is below the minimum of 1" plan --model gpt-1.7b --gpus 8 --global-batch 8 -j 0
expect 1 "weft: --tp: TP 3 x PP 1 x CP 1 = 3 does not divide 8 GPUs" plan --model gpt-1.7b --gpus 8 --global-batch 8 --tp 3
expect 1 "weft: none of the 759 valid plans fits in the 86 GB of a H100-SXM: the least needs 817.4 GB per GPU (fix fewer settings, or give the job more GPUs)" plan --model llama3-405b --cluster dgx-h100 --gpus 8 --global-batch 8

# Every plan of GPT 1.7B on 8 A100 with a global batch of 16, simulated.
"$weft" plan --model gpt-1.7b --gpus 8 --global-batch 16 --top 100000 \
  --budget 600 --show 0 --json >"$tmp/all.json" 2>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ]; then ok; else ko "plan of every plan: $(cat "$tmp/err")"; fi
# Checks of the JSON: all simulated, in order, within memory; prints the
# weft run flags of the first plan and of every 17th after it.
python3 - "$tmp/all.json" >"$tmp/runs" 2>"$tmp/check" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
plans = d["plans"]
bad = []
if d["simulated"] != len(plans) or d["fit"] != len(plans) or not plans:
    bad.append("not every plan simulated: %d of %d" % (d["simulated"], len(plans)))
times = [p["simulated_s"] for p in plans]
if times != sorted(times):
    bad.append("not in simulated order")
for i, p in enumerate(plans):
    if p["rank"] != i + 1 or p["status"] != "simulated":
        bad.append("plan %d: rank %s, %s" % (i + 1, p["rank"], p["status"]))
    if p["memory_per_gpu_bytes"] > 80e9:
        bad.append("plan %d needs %.1f GB" % (i + 1, p["memory_per_gpu_bytes"] / 1e9))
for b in bad:
    print(b, file=sys.stderr)
shard = {"none": "", "zero-1": "--zero 1", "fsdp": "--fsdp yes", "hsdp": "--hsdp 8"}
for p in plans[::17]:
    split = ("--tensor3d %s --overdecompose %d" % (p["tensor3d"], p["pieces"])
             if p["tensor3d"] else "--tp %d" % p["tp"])
    flags = "%s --pp %d --cp %d --micro-batch %d --recompute %s %s %s %s" % (
        split, p["pp"], p["cp"], p["micro_batch"], p["recompute"],
        "--schedule " + p["schedule"] if p["pp"] > 1 else "",
        "--sp yes" if p["tp"] > 1 and not p["tensor3d"] else "",
        shard[p["sharding"]])
    print("%.9g %s" % (p["simulated_s"], flags))
PY
if [ -s "$tmp/check" ]; then ko "plan JSON: $(cat "$tmp/check")"; else ok; fi
# The same plans through weft run: the same times, none faster than the
# first, and each fits.
best=$(head -1 "$tmp/runs" | cut -d' ' -f1)
n=0
while read -r want flags; do
  # shellcheck disable=SC2086
  out=$("$weft" run --json --model gpt-1.7b --gpus 8 --global-batch 16 $flags)
  got=$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.9g %s" % (d["iteration_time_s"], d["fits_in_memory"]))')
  if [ "$got" = "$want True" ] && awk -v a="$best" -v b="$want" 'BEGIN { exit !(a <= b) }'; then ok
  else ko "weft run $flags: $got, plan said $want (best $best)"; fi
  n=$((n + 1))
done <"$tmp/runs"
[ "$n" -ge 5 ] && ok || ko "only $n plans checked"

expect 2 "weft: --family: 'ddp' is not megatron, tensor3d or all" plan --model gpt-1.7b --gpus 8 --global-batch 8 --family ddp
# --family keeps to one family of plans.
for fam in megatron tensor3d; do
  "$weft" plan --model gpt-1.7b --gpus 8 --global-batch 16 --family "$fam" \
    --budget 0 --show 0 --json >"$tmp/fam.json" 2>"$tmp/err"
  got=$(python3 -c 'import json,sys
p = json.load(open(sys.argv[1]))["plans"]
print(len(p) > 0 and all((x["tensor3d"] is not None) == (sys.argv[2] == "tensor3d") for x in p))' "$tmp/fam.json" "$fam")
  if [ "$got" = True ]; then ok; else ko "--family $fam: $(cat "$tmp/err")"; fi
done

expect 2 "weft: --compress: weft plan ranks plans without gradient compression; run the plan it finds with --compress" plan --model gpt-1.7b --gpus 8 --global-batch 8 --compress fp16
# No plan twice (a fixed grid and pieces; ZeRO-1 with one data-parallel
# rank), and a TP degree beyond the NVLink domain is searched when asked.
for args in "--tensor3d 2,2,2 --overdecompose 2 --tp 8" "--tp 16 --family megatron"; do
  tp=$(echo "$args" | sed 's/.*--tp \([0-9]*\).*/\1/')
  # shellcheck disable=SC2086
  "$weft" plan --model gpt-7.5b --gpus 16 --global-batch 16 $args \
    --budget 0 --show 0 --json >"$tmp/dup.json" 2>"$tmp/err"
  got=$(python3 -c 'import json,sys
p = json.load(open(sys.argv[1]))["plans"]
keys = [tuple(sorted((k, str(v)) for k, v in x.items() if k not in ("rank", "estimate_rank", "estimate_s", "exposed_comm_s", "memory_per_gpu_bytes", "status", "simulated_s", "tflops_per_gpu"))) for x in p]
print(len(p) > 0 and len(set(keys)) == len(keys) and all(x["tp"] == int(sys.argv[2]) for x in p))' "$tmp/dup.json" "$tp")
  if [ "$got" = True ]; then ok; else ko "plan $args: duplicates, none or a wrong TP: $(cat "$tmp/err")"; fi
done

# A fixed dimension stays fixed; --budget 0 ranks by estimate only.
"$weft" plan --model gpt-1.7b --gpus 8 --global-batch 16 --tp 2 --pp 2 \
  --budget 0 --show 0 --json >"$tmp/fixed.json" 2>"$tmp/err"
python3 - "$tmp/fixed.json" >"$tmp/check" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["plans"]
est = [x["estimate_s"] for x in p]
ok = p and all(x["tp"] == 2 and x["pp"] == 2 and x["status"] == "estimated" for x in p) \
    and est == sorted(est) and d["simulated"] == 0
print("ok" if ok else "bad")
PY
if [ "$(cat "$tmp/check")" = ok ]; then ok; else ko "fixed TP 2 PP 2: $(cat "$tmp/check") $(cat "$tmp/err")"; fi

echo "plan: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
