#!/bin/sh
# test_share.sh WEFT DIR - end-to-end tests of weft share: bad input with
# its exact messages; two identical jobs on disjoint nodes of a
# non-blocking fat tree run as fast as alone (slowdown exactly 0); two
# data-parallel jobs whose rings cross the leaves of a 2:1 fabric, each
# using the leaves' uplinks at their capacity alone, slow each other
# down; the same jobs packed in their own leaves do not.
# Prints "share: N passed, N failed" and fails if any case failed.
weft=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$dir/lib.sh"

J='--layers 2 --hidden 1024 --heads 8 --ffn 4096 --vocab 32000 --seq 512 --global-batch 8 --tp 8'
H='--cluster dgx-h100 --nodes 4'
expect 2 "weft: share: name the jobs, NODES:JOB each (weft share --help)" share $H
expect 2 "weft: job 2 (nodes 1-2): node 1 is job 1's already: jobs take disjoint nodes" share $H "0-1:$J" "1-2:$J"
expect 2 "weft: job 1 (nodes 0-4): node 4 is not on the cluster, whose nodes are 0 to 3" share $H "0-4:$J"
expect 2 "weft: job 1 (0-1): not NODES:JOB, such as '0-3:job.xml'" share $H "0-1"
expect 2 "weft: job 1: 'x' is not a list of nodes such as 0-3,8" share $H "x:$J"
expect 2 "weft: job 1: '0-' is not a list of nodes such as 0-3,8" share $H "0-:$J"
expect 2 "weft: job 1 (nodes 0,0): node 0 is listed twice" share $H "0,0:$J"
expect 2 "weft: job 1 (nodes 0-1): --nics-per-node is the cluster's: give it to weft share, once for every job" share $H "0-1:$J --nics-per-node 4"
expect 2 "weft: job 1 (nodes 0-1): --cluster is the cluster's: give it to weft share, once for every job" share $H "0-1:$J --cluster selene"
expect 2 "weft: job 1 (nodes 0-1): --json is not a job's option here: a job takes a workload file, model and plan settings, --collective, --fidelity and --force" share $H "0-1:$J --json"
expect 2 "weft: job 1 (nodes 0): no job after the nodes: a workload file or model and plan settings" share $H "0:"
expect 2 "weft: --steps: '0' is not a whole number from 1 to 100" share $H --steps 0 "0:$J"
expect 2 "weft: share: --placement places one job's nodes; here each job's list places it (spread one by listing nodes of alternate leaves)" share $H --placement spread "0-1:$J"
expect 2 "weft: share: slow_gpu, slow_nic and gpu_sigma name one job's ranks: not with weft share" share $H --gpu-sigma 0.01 "0-1:$J"
expect 1 "weft: --gpus: 32 GPUs contradict --nodes (2 nodes of 8 GPUs)
weft: (in job 1, nodes 0-1)" share $H "0-1:$J --gpus 32"

expect 2 "weft: job 2 (nodes 2-3): start '-1s': '-1s' is negative" share $H "0-1:$J" "2-3@-1s:$J"
expect 2 "weft: job 2 (nodes 2-3): start 'x': 'x' is not a number; expected a time such as 0.35us" share $H "0-1:$J" "2-3@x:$J"
expect 2 "weft: job 2 (nodes 2-3): start '2e6s' is not from 0 to 1e6 s" share $H "0-1:$J" "2-3@2e6s:$J"

# A job that starts late (NODES@OFFSET): the other's iterations begun
# before are lead-in; on a non-blocking tree nothing changes the times.
"$weft" share $H "0-1:$J" "2-3@10ms:$J" --json >"$tmp/late.json" 2>"$tmp/err"
python3 - "$tmp/late.json" >"$tmp/check" 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"]
a = j[0]["alone_s"]
bad = []
# job 1 began iterations at 0, a, 2a, ... < 10 ms: ceil(10 ms / a) of them
import math
if j[0]["lead_in"] != math.ceil(0.010 / a) or j[1]["lead_in"] != 0:
    bad.append("lead_in %r" % j)
if j[1]["start_s"] != 0.01 or j[0]["start_s"] != 0:
    bad.append("start_s %r" % j)
if any(x["slowdown"] != 0 or x["measured"] < 2 for x in j):
    bad.append("slowdown or measured %r" % j)
if bad:
    print("\n".join(bad))
PY
if [ ! -s "$tmp/check" ] && [ ! -s "$tmp/err" ]; then ok; else ko "share late start: $(cat "$tmp/check" "$tmp/err")"; fi
# @0 is no offset: the output is the same as without.
"$weft" share $H "0-1:$J" "2-3@0s:$J" >"$tmp/at0" 2>&1
"$weft" share $H "0-1:$J" "2-3:$J" >"$tmp/no" 2>&1
if cmp -s "$tmp/at0" "$tmp/no"; then ok; else ko "share @0s differs from no offset"; fi

# Identical jobs on disjoint nodes of a non-blocking fat tree: no link
# in common below the flows' rate, the same time as alone.
"$weft" share $H "0-1:$J" "2-3:$J" --json >"$tmp/nb.json" 2>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ]; then ok; else ko "share non-blocking: $(cat "$tmp/err")"; fi
if grep -c '"slowdown": 0,' "$tmp/nb.json" | grep -qx 2; then ok
else ko "share non-blocking: slowdown not 0: $(cat "$tmp/nb.json")"; fi

# h100-oversub at 32 nodes: two leaves of 16, uplinks of 8 nodes' NICs
# (2:1).  Spread over both leaves in alternation (8 nodes in each), a
# job's DP rings cross the uplinks at every step and fill them alone;
# two such jobs take half each, so both slow down alike.  Packed, each
# job in its own leaf: nothing in common.
D='--layers 4 --hidden 8192 --heads 64 --ffn 32768 --vocab 32000 --seq 1024 --global-batch 16 --tp 8 --collective ring'
A=0,16,1,17,2,18,3,19,4,20,5,21,6,22,7,23
B=8,24,9,25,10,26,11,27,12,28,13,29,14,30,15,31
O='--cluster h100-oversub --nodes 32'
"$weft" share $O "$A:$D" "$B:$D" --json >"$tmp/spread.json" 2>"$tmp/err" &&
"$weft" share $O "0-15:$D" "16-31:$D" --json >"$tmp/packed.json" 2>>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ]; then ok; else ko "share oversub: $(cat "$tmp/err")"; fi
python3 - "$tmp/spread.json" "$tmp/packed.json" >"$tmp/check" 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["jobs"]
p = json.load(open(sys.argv[2]))["jobs"]
bad = []
if not (s[0]["slowdown"] > 0.3 and s[0]["slowdown"] == s[1]["slowdown"]):
    bad.append("spread: %r" % s)
if abs(s[0]["alone_s"] - p[0]["alone_s"]) > 1e-4 * p[0]["alone_s"]:
    # alone, the spread job fills the uplinks exactly: as fast as packed
    # but for the spine hops' latency (a few us)
    bad.append("alone spread %r != packed %r" % (s[0]["alone_s"], p[0]["alone_s"]))
if any(j["slowdown"] != 0 for j in p):
    bad.append("packed: %r" % p)
if bad:
    print("\n".join(bad))
PY
if [ ! -s "$tmp/check" ]; then ok; else ko "share oversub: $(cat "$tmp/check")"; fi

# Racks of trays (GB200 NVL72: 18 trays of 4 GPUs): jobs take trays,
# numbered rack by rack; a job's NVLink domain is its trays of a rack.
T='--model llama3-8b --tp 4 --global-batch 36 --seq 4096'
N='--cluster gb200-nvl72 --nodes 2'
expect 2 "weft: job 1 (trays 0-4,18-21): 5 trays in rack 0, 4 in rack 1: a job takes as many trays in each of its racks" share $N "0-4,18-21:$T"
expect 2 "weft: job 1 (trays 0-36): tray 36 is not on the cluster, whose trays are 0 to 35" share $N "0-36:$T"
expect 2 "weft: job 2 (trays 8-9): tray 8 is job 1's already: jobs take disjoint trays" share $N "0-8:$T" "8-9:$T"
expect 2 "weft: share: the cluster's racks are whole here (72 GPUs each) and jobs take trays of them: give the racks with --nodes, not part of each with --gpus" share --cluster gb200-nvl72 --gpus 36 "0-8:$T"
# Nine trays in the middle of a rack, alone: the same time as weft run
# of the job on a rack of its 36 GPUs (every rank simulated).
"$weft" run --cluster gb200-nvl72 --gpus 36 --nodes 1 $T --every-rank --json 2>"$tmp/err" |
  grep -o '"iteration_time_s": [0-9.e-]*' | sed 's/.*: //' >"$tmp/run"
"$weft" share $N "4-12:$T" "13-16,18-21:--model llama3-8b --tp 4 --global-batch 32 --seq 4096" --json 2>>"$tmp/err" >"$tmp/trays.json"
python3 - "$tmp/trays.json" "$(cat "$tmp/run")" >"$tmp/check" 2>&1 <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
bad = []
if j["place_by"] != "trays":
    bad.append("place_by %r" % j["place_by"])
if "%.9g" % j["jobs"][0]["alone_s"] != "%.9g" % float(sys.argv[2]):
    bad.append("alone %r, run %s" % (j["jobs"][0]["alone_s"], sys.argv[2]))
if bad:
    print("\n".join(bad))
PY
if [ ! -s "$tmp/check" ] && [ ! -s "$tmp/err" ]; then ok; else ko "share trays: $(cat "$tmp/check" "$tmp/err")"; fi

echo "share: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
