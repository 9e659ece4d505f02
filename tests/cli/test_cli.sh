#!/bin/sh
# test_cli.sh WEFT DIR - end-to-end tests of the weft command line: exit codes,
# exact error messages for bad flags and files, and golden outputs.
# Prints "cli: N passed, N failed" and fails if any case failed.
weft=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$dir/lib.sh"

# golden FILE ARGS... : stdout equals the golden file byte for byte.
golden() {
  file=$1; shift
  "$weft" "$@" >"$tmp/out" 2>"$tmp/err"
  if [ $? -eq 0 ] && cmp -s "$tmp/out" "$dir/golden/$file"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: weft $* (golden $file)"
    diff "$dir/golden/$file" "$tmp/out" | head -20
    cat "$tmp/err"
  fi
}

expect 2 "weft: unknown command 'simulate' (see weft help)" simulate
expect 2 "weft: platform: unknown option '--colour'" platform --colour red
expect 2 "weft: platform: unexpected argument 'b'" platform a b
expect 1 "weft: --gpus: missing value" platform dgx-h100 --gpus
expect 1 "weft: unknown cluster 'dgx-h900'; known clusters: selene, dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, gb300-nvl72, perlmutter, h100-oversub" platform dgx-h900
expect 1 "weft: --gpus: 12 GPUs do not divide into nodes of 8 GPUs" platform dgx-h100 --gpus 12
expect 1 "weft: --gpus: 12 GPUs do not divide into nodes of 8 GPUs" platform dgx-h100 --gpus=12
expect 1 "weft: --nodes: '1000000' exceeds the limit of 65536" platform dgx-h100 --nodes 1000000
expect 1 "weft: --gpus: '-8' is below the minimum of 1" platform dgx-h100 --gpus -8
expect 1 "weft: --gpus: 'NaN' is not an integer" platform dgx-h100 --gpus NaN
expect 1 "weft: --switch-lat: '100' has no unit; expected a time such as 0.35us" platform dgx-h100 --switch-lat 100
expect 1 "weft: --gpu: unknown GPU 'Z100' (see weft list gpus)" platform dgx-h100 --gpu Z100
expect 1 "weft: --scale: unknown factor 'memory'; expected compute, hbm_bw, hbm_cap, nvlink or nic" platform dgx-h100 --scale memory=2
expect 1 "weft: /nonexistent/c.xml: cannot open: No such file or directory" platform /nonexistent/c.xml
expect 1 "weft: /nonexistent/dir/p.xml: cannot write: No such file or directory" platform dgx-h100 -o /nonexistent/dir/p.xml
expect 2 "weft: list: unknown list 'cpus'; expected models, gpus, nics, nodes, switches, trends, clusters, collectives or stacks" list cpus

# weft graph: bad workloads.
expect 1 "weft: no model: give --model NAME (weft list models), a workload file with <model>, or a custom model's --layers, --hidden, --heads, --ffn, --vocab and --seq" graph --global-batch 8
expect 1 "weft: --model: unknown model 'gpt-9'; known models: gpt-1.7b, gpt-3.6b, gpt-7.5b, gpt-18.4b, gpt-39.1b, gpt-76.1b, gpt-145.6b, gpt-310.1b, gpt-529.6b, gpt-1008b, gpt3-175b, llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, qwen3-8b, qwen3-32b, mixtral-8x22b, deepseek-v3, qwen3-30b-a3b, qwen3-235b-a22b, gpt-oss-20b, gpt-oss-120b, llama4-scout" graph --model gpt-9
expect 2 "weft: graph: unknown option '--colour'" graph --model gpt-1.7b --colour red
expect 1 "weft: --tp: TP 3 x PP 1 x CP 1 = 3 does not divide 32 GPUs" graph --model gpt-1.7b --gpus 32 --tp 3 --global-batch 64
expect 1 "weft: --global-batch: global batch 100 is not a multiple of micro-batch 1 x DP 32" graph --model gpt-1.7b --gpus 32 --global-batch 100
expect 1 "weft: --heads: 25 heads do not divide hidden size 2304" graph --model gpt-1.7b --heads 25 --global-batch 32
expect 1 "weft: --hidden, --heads, --ffn, --vocab and --seq: required by a model of no preset (or name one: --model NAME, weft list models)" graph --layers 4
expect 1 "weft: --gpus: 12 GPUs do not divide into nodes of 8 GPUs" graph --model gpt-1.7b --gpus 12 --global-batch 12
printf '<workload>\n  <model preset="gpt-1.7b"/>\n  <plan tp="2" global_batch="64"\n        recompute="sometimes"/>\n  <cluster preset="selene" gpus="16"/>\n</workload>\n' >"$tmp/w.xml"
expect 1 "weft: $tmp/w.xml:3: <plan> attribute 'recompute': 'sometimes' is not none, selective or full" graph "$tmp/w.xml"
printf '<workload>\n  <model preset="gpt-1.7b"/>\n  <optimizer kind="adam"/>\n</workload>\n' >"$tmp/w.xml"
expect 1 "weft: $tmp/w.xml:3: <optimizer>: unknown element; expected model, plan or cluster" graph "$tmp/w.xml"

# weft graph: a workload file, flags on top, a summary on stderr.
printf '<workload name="t">\n  <model preset="gpt-1.7b" layers="4"/>\n  <plan tp="2" pp="2" global_batch="8" schedule="interleaved:2"/>\n  <cluster preset="selene" gpus="8"/>\n</workload>\n' >"$tmp/w.xml"
expect 0 "weft: gpt-1.7b on 8 GPUs (TP 2, PP 2, DP 2): 2 stage programs, 607 tasks; 4.036e+13 model FLOPs, 4.036e+13 with recomputation; 3.527 GB per GPU of 85.9 GB (fits)" graph "$tmp/w.xml" -o "$tmp/g.txt"
golden graph-small.txt graph "$tmp/w.xml" --micro-batch 2 --global-batch 8 --recompute full

printf '<cluster name="c" node="DGX-H100"\n  nodes="2" oversubscription="0"/>\n' >"$tmp/c.xml"
expect 1 "weft: $tmp/c.xml:1: <cluster> attribute 'oversubscription': '0' is below the minimum of 1" platform "$tmp/c.xml"
printf '<cluster name="c" node="DGX-H100" nodes="2">\n<gpu name="g"/>\n</cluster>\n' >"$tmp/c.xml"
expect 1 "weft: $tmp/c.xml:2: <gpu>: missing attribute 'fp32'" platform "$tmp/c.xml"
printf '<cluster name="c" node="DGX-H100" nodes="2">\n' >"$tmp/c.xml"
expect 1 "weft: $tmp/c.xml:2: malformed XML: Premature end of data in tag cluster line 1" platform "$tmp/c.xml"
printf '<catalog>\n<nic name="HDR" bw="200" lat="1us"/>\n</catalog>\n' >"$tmp/cat.xml"
expect 1 "weft: $tmp/cat.xml:2: <nic>: attribute 'bw': '200' has no unit; expected a bandwidth such as 450GBps" list gpus --catalog "$tmp/cat.xml"
expect 1 "weft: $tmp/cat.xml:2: <nic>: attribute 'bw': '200' has no unit; expected a bandwidth such as 450GBps" platform --catalog "$tmp/cat.xml"

# Inline hardware a cluster file defines but does not use is warned about
# (issue 40: the README's <node> without node= on <cluster> was ignored).
printf '<cluster name="future" preset="dgx-h100" nodes="2">\n  <future name="H100-NVL2x" base="H100-SXM" nvlink="2"/>\n  <node name="Box" gpu="H100-NVL2x" gpus="8" nic="XDR" nics="8" nvlink_lat="0.5us"/>\n</cluster>\n' >"$tmp/inline.xml"
"$weft" platform "$tmp/inline.xml" -o "$tmp/p.xml" 2>"$tmp/err"
if [ "$(head -2 "$tmp/err")" = "weft: warning: $tmp/inline.xml: <node> 'Box' is defined but not used: the cluster's nodes are DGX-H100 (node=\"Box\" on <cluster> or --node Box uses it)
weft: warning: $tmp/inline.xml: GPU 'H100-NVL2x' is defined but not used: the cluster's GPU is H100-SXM (a <node> with gpu=\"H100-NVL2x\" that the cluster uses, or --gpu H100-NVL2x, uses it)" ]; then ok; else ko "unused inline hardware"; cat "$tmp/err"; fi
"$weft" platform "$tmp/inline.xml" --node Box -o "$tmp/p.xml" 2>"$tmp/err"
if head -1 "$tmp/err" | grep -q "^weft: wrote .*: 16 GPUs (2 nodes of 8 x H100-NVL2x), fat-tree, 100 GB/s NICs$"; then ok; else ko "inline node used"; cat "$tmp/err"; fi
"$weft" run --model gpt-1.7b --layers 2 --gpus 16 --global-batch 16 --cluster "$tmp/inline.xml" -q >/dev/null 2>"$tmp/err"
if [ ! -s "$tmp/err" ]; then ok; else ko "-q silences the unused hardware"; cat "$tmp/err"; fi

# What-if hardware is in the summary's headline and the line under it
# (issue 40); a --scale factor given twice is refused like any setting.
expect 1 "weft: --scale: factor compute given twice" run --model gpt-1.7b --scale compute=2 --scale compute=3
expect 1 "weft: --scale: factor nic given twice" platform dgx-h100 --scale nic=2,compute=2,nic=3
expect 1 "weft: --scale-compute: factor compute given twice (with --scale)" platform dgx-h100 --scale compute=2 --scale-compute 3
"$weft" run --model gpt-1.7b --layers 2 --cluster dgx-h100 --gpus 8 --global-batch 8 --scale compute=2 >"$tmp/whatif" 2>&1
if [ "$(head -2 "$tmp/whatif")" = "gpt-1.7b on 8 x H100-SXM what-if (dgx-h100): TP 1, PP 1, DP 8, micro-batch 1, global batch 8, 1f1b, recompute none
  what-if hardware compute x2: 1979 TFLOP/s bf16, HBM 85.52 GB at 3.35 TB/s, NVLink 450 GB/s, NIC 50 GB/s" ]; then ok; else ko "--scale in the summary"; head -2 "$tmp/whatif"; fi
"$weft" run --model gpt-1.7b --layers 2 --cluster dgx-h100 --gpus 8 --global-batch 8 --generations 1 >"$tmp/whatif" 2>&1
if sed -n 2p "$tmp/whatif" | grep -qx "  what-if hardware GPU 2.33 years and NIC 2.33 years ahead by the datasheets trend: 2645 TFLOP/s bf16, HBM 145.2 GB at 6.799 TB/s, NVLink 805.7 GB/s, NIC 104.5 GB/s"; then ok; else ko "--generations in the summary"; head -2 "$tmp/whatif"; fi

# Success paths: a file is written and the summary goes to stderr.
expect 0 "weft: wrote $tmp/p.xml: 64 GPUs (8 nodes of 8 x A100-80GB), fat-tree, 25 GB/s NICs
weft: fat-tree fabric of 64 GPUs (8 nodes): 64 NIC ports, 1 switch of 64 ports (1 + 0 + 0 by tier), 64 switch ports, 64 cables; power unknown (no HDR switch in the catalog); cost unknown (the catalog lacks price= of <nic> HDR, a <switch> of nic=\"HDR\" with price= and link_price=)" platform selene --gpus 64 -o "$tmp/p.xml"
expect 0 "weft: wrote $tmp/t.xml: 64 GPUs (8 nodes of 8 x H100-SXM), torus, 50 GB/s NICs
weft: torus fabric of 64 GPUs (8 nodes): 64 NIC ports, 0 switches of 64 ports (0 + 0 + 0 by tier), 0 switch ports, 16 cables; 1.574 kW at full traffic (NICs); cost unknown (the catalog lacks price= of <nic> NDR, link_price= of <switch> QM9790)" platform dgx-h100 --gpus 64 --topology torus --torus 2x4 -o "$tmp/t.xml"
# Prices from a catalog of one's own: NICs x price + switches x price +
# cables x link price (1024 x 2000 + 48 x 30000 + 2048 x 1500 dollars).
cat >"$tmp/prices.xml" <<'XML'
<catalog>
  <nic name="NDR" bw="400Gbps" lat="1us" idle_power="21W" max_power="24.6W" price="2000" source="made-up prices"/>
  <switch name="QM9790" nic="NDR" ports="64" idle_power="1228W" max_power="1292W" price="30000" link_price="1500" source="made-up prices"/>
</catalog>
XML
"$weft" platform dgx-h100 --gpus 1024 --catalog "$tmp/prices.xml" --parts >"$tmp/parts" 2>&1
if grep -q '48 switches of 64 ports (32 + 16 + 0 by tier), 3072 switch ports, 2048 cables; 87.21 kW at full traffic (NICs and switches); \$6.56 M at the catalog' "$tmp/parts"; then ok; else ko "parts with prices: $(cat "$tmp/parts")"; fi
# Switch counts follow the NIC's rate (issue 40, item 10): NDR NICs scaled
# to 800 Gb/s get the XDR generation's Q3400 (144 ports); scaled beyond
# any catalog switch they keep their own, and say so.
"$weft" platform dgx-h100 --gpus 64 --scale nic=2 -o "$tmp/p.xml" 2>"$tmp/parts"
if tail -1 "$tmp/parts" | grep -q '1 switch of 144 ports (1 + 0 + 0 by tier), 64 switch ports, 64 cables (switches: Q3400.s 144 ports, of the XDR NICs. rate, for the scaled NICs. 800 Gb/s); power unknown (no power figure of the Q3400 switch in the catalog); '; then ok; else ko "scaled NICs' switches: $(cat "$tmp/parts")"; fi
"$weft" platform dgx-h100 --gpus 64 --scale nic=4 -o "$tmp/p.xml" 2>"$tmp/parts"
if tail -1 "$tmp/parts" | grep -q ' 64 cables (switches: QM9790.s 64 ports, of the catalog.s NDR NICs, not of the scaled ones); '; then ok; else ko "NICs faster than any switch: $(cat "$tmp/parts")"; fi
# XDR fabrics count Quantum-X800 Q3400 switches; their power is unknown
# (no datasheet figure found) and the energy says which switch lacks it.
"$weft" platform gb300-nvl72 --gpus 4608 --parts >"$tmp/parts" 2>&1
if grep -q '^fat-tree fabric of 4608 GPUs (64 nodes): 4608 NIC ports, 160 switches of 144 ports (64 + 64 + 32 by tier), 23040 switch ports, 13824 cables; power unknown (no power figure of the Q3400 switch in the catalog); cost unknown (the catalog lacks price= of <nic> XDR, price= of <switch> Q3400, link_price= of <switch> Q3400)$' "$tmp/parts"; then ok; else ko "XDR parts: $(cat "$tmp/parts")"; fi
"$weft" run --model gpt-1.7b --cluster gb300-nvl72 --gpus 144 --global-batch 144 >"$tmp/xdr" 2>&1
if grep -q 'switches not counted (no power figure of the Q3400 switch in the catalog)' "$tmp/xdr" && ! grep -q '()' "$tmp/xdr"; then ok; else ko "XDR energy: $(cat "$tmp/xdr")"; fi
# Prices without sources print none (no "(; )"), and a switch priced
# without its NIC lacks the NIC's price alone (issue 40).
printf '<catalog>\n<nic name="NDR" bw="400Gbps" lat="1us" price="2000"/>\n<switch name="QM9790" nic="NDR" ports="64" idle_power="1228W" max_power="1292W" price="30000" link_price="1500"/>\n</catalog>\n' >"$tmp/nosrc.xml"
"$weft" platform dgx-h100 --gpus 64 --catalog "$tmp/nosrc.xml" -o "$tmp/p.xml" -q 2>"$tmp/parts"
if tail -1 "$tmp/parts" | grep -q 'cables; 1.292 kW at full traffic (NICs and switches); \$0.254 M at the catalog.s prices$'; then ok; else ko "prices without sources: $(cat "$tmp/parts")"; fi
printf '<catalog>\n<switch name="QM9790" nic="NDR" ports="64" idle_power="1228W" max_power="1292W" price="30000" link_price="1500"/>\n</catalog>\n' >"$tmp/swonly.xml"
"$weft" platform dgx-h100 --gpus 64 --catalog "$tmp/swonly.xml" -o "$tmp/p.xml" -q 2>"$tmp/parts"
if tail -1 "$tmp/parts" | grep -q 'cost unknown (the catalog lacks price= of <nic> NDR)$'; then ok; else ko "switch priced, NIC not: $(cat "$tmp/parts")"; fi
# A torus cable carries 8 NICs / 4 ports = 2 ports' bandwidth: 16 cables
# priced as 32 links (64 x 2000 + 32 x 1500 dollars).
"$weft" platform dgx-h100 --gpus 64 --topology torus --torus 2x4 --catalog "$tmp/prices.xml" --parts >"$tmp/parts" 2>&1
if grep -q '16 cables; 1.574 kW at full traffic (NICs); \$0.176 M at the catalog' "$tmp/parts"; then ok; else ko "torus parts with prices: $(cat "$tmp/parts")"; fi
n=$("$weft" run --model gpt-1.7b --cluster dgx-h100 --gpus 64 --global-batch 64 --catalog "$tmp/prices.xml" --json -q | python3 -c 'import json,sys; n=json.load(sys.stdin)["network"]; print(n["switches"], n["cables"], n["power_w"], n["cost_usd"])')
if [ "$n" = "1 64 2866.4 254000" ]; then ok; else ko "network of weft run --json: $n"; fi
# Part of an NVL72 rack (issue 38): 64 GPUs are 16 of a rack's 18 trays,
# one NVLink domain, so TP, DP and PP all stay on NVLink and no byte
# crosses a NIC; 144 GPUs are two whole racks joined by the NIC fabric
# (DP 18 crosses them); 66 GPUs are not whole trays.
n=$("$weft" run --model llama3-70b --cluster gb200-nvl72 --gpus 64 --tp 4 --pp 2 --global-batch 64 --json -q | python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["inputs"]["cluster"]; print(c["nodes"], c["gpus_per_node"], c["nics_per_node"], d["dp"], d["network_bytes"])')
if [ "$n" = "1 64 64 8 0" ]; then ok; else ko "64 GPUs of an NVL72 rack: $n"; fi
n=$("$weft" run --model llama3-70b --cluster gb200-nvl72 --gpus 144 --tp 4 --pp 2 --global-batch 144 --json -q | python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["inputs"]["cluster"]; print(c["nodes"], c["gpus_per_node"], d["network_bytes"] > 0)')
if [ "$n" = "2 72 True" ]; then ok; else ko "144 GPUs on two NVL72 racks: $n"; fi
expect 1 "weft: --gpus: 66 GPUs are not whole compute trays of GB200-NVL72 (4 GPUs per tray, 72 per rack)" run --model llama3-70b --cluster gb200-nvl72 --gpus 66
n=$("$weft" platform gb300-nvl72 --gpus 128 | sed -n 7,9p)
if [ "$n" = "  128 GPUs: 2 nodes of 64 x GB300 (2.5 Pflop/s), node type GB300-NVL72.
  Each node is one rack (one NVLink domain): the job uses 16 of its 18
  trays of 4 GPUs; the other 8 GPUs are idle, not part of the job." ]; then ok; else ko "weft platform of partial GB300 racks: $n"; fi
printf '<catalog><switch name="X" nic="NDR" ports="64" idle_power="1W" max_power="2W" price="-5"/></catalog>\n' >"$tmp/bad.xml"
expect 1 "weft: $tmp/bad.xml:1: <switch>: attribute 'price': '-5' is negative" platform dgx-h100 --catalog "$tmp/bad.xml"
expect 1 "weft: topology rail at 512 GPUs: its routes depend on both GPUs, so its XML lists one per pair (261632); weft platform writes it up to 256 GPUs, weft run builds it in memory at any size" platform dgx-h100 --gpus 512 --topology rail
expect 1 "weft: --torus: 2x2 is 4 nodes, but the cluster has 8 (64 GPUs of 8 per node)" platform dgx-h100 --gpus 64 --topology torus --torus 2x2
golden dgx-a100-16.xml platform dgx-a100 --gpus 16 --nodes-per-leaf 1 --leaves-per-pod 1
golden list-gpus.txt list gpus
golden list-clusters.txt list clusters
golden list-collectives.txt list collectives
expect 2 "weft: --collective: unknown algorithm 'butterfly' (see weft list collectives)" coll allreduce --collective butterfly
expect 2 "weft: --fidelity: 'packet' is not flow, step or auto" coll allreduce --fidelity packet

# weft run and weft coll.
expect 2 "weft: coll: unknown operation 'allsum'; expected allreduce, allgather, reducescatter, alltoall or broadcast" coll allsum
expect 2 "weft: coll: give an operation: allreduce, allgather, reducescatter, alltoall or broadcast" coll
expect 1 "weft: --min-bytes: '1.5' has no unit; expected a size such as 80GiB" coll allreduce --min-bytes 1.5
expect 2 "weft: run: unknown option '--colour'" run --model gpt-1.7b --colour red
expect 1 "weft: /nonexistent.csv: cannot open: No such file or directory" run --model gpt-1.7b --gpus 8 --global-batch 8 --kernel-table /nonexistent.csv
# weft coll --json is one JSON object with a result per size.
"$weft" coll allgather --cluster dgx-h100 --gpus 16 --min-bytes 1MiB --max-bytes 4MiB --json >"$tmp/coll.json"
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["op"] == "allgather" and d["gpus"] == 16 and [r["bytes"] for r in d["results"]] == [1048576, 2097152, 4194304] and all(r["busbw_GBps"] > 0 for r in d["results"])' "$tmp/coll.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft coll --json"; cat "$tmp/coll.json"; fi

# GPU energy: idle power all along plus TDP - idle while computing
# (A100: 50 W, 400 W), for every GPU.
"$weft" run --json >"$tmp/run.json"
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); e = d["gpus"] * (50 * d["iteration_time_s"] + 350 * d["compute_s"]); assert abs(d["gpu_energy_j"] - e) <= 1e-5 * e, (d["gpu_energy_j"], e)' "$tmp/run.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: GPU energy"; fi

# weft --version is the JSON's weft_version; the main help is not cut off
# (issue 40's small items); coll takes nccl-tests' -b, -e, -f, -g and bare
# byte counts (K, M, G binary as nccl-tests' parsesize).
"$weft" --version >"$tmp/version" 2>&1
if python3 -c 'import json, sys; v = open(sys.argv[2]).read(); assert v == "weft %s\n" % json.load(open(sys.argv[1]))["weft_version"], v' "$tmp/run.json" "$tmp/version"; then ok; else ko "weft --version"; cat "$tmp/version"; fi
if "$weft" --help | grep -q -- "--compress none|fp16|powersgd\[:R\]|topk\[:F\]|randomk\[:F\]|sign|efsign|qsgd\[:B\]$"; then ok; else ko "weft --help cut off"; fi
"$weft" coll allreduce -b 1K -e 8192 -f 8 -g 16 --json >"$tmp/coll.json" 2>&1
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["gpus"] == 16 and [r["bytes"] for r in d["results"]] == [1024, 8192], d' "$tmp/coll.json"; then ok; else ko "coll -b -e -f -g"; cat "$tmp/coll.json"; fi
expect 2 "weft: -g: given with --gpus (they are the same)" coll allreduce -g 8 --gpus 8
expect 1 "weft: --min-bytes: '8x' has unknown unit 'x'; expected a size such as 80GiB" coll allreduce -b 8x

# The demo job is the job of no settings; any setting leaves it out
# (issue 40): no model is an error, a custom model from flags is labelled
# custom, and unset plan settings take their documented defaults.
expect 1 "weft: no model: give --model NAME (weft list models), a workload file with <model>, or a custom model's --layers, --hidden, --heads, --ffn, --vocab and --seq" run --gpus 128 --global-batch 256
expect 1 "weft: no model: give --model NAME (weft list models), a workload file with <model>, or a custom model's --layers, --hidden, --heads, --ffn, --vocab and --seq" run --tp 2
expect 1 "weft: --ffn, --vocab and --seq: required by a model of no preset (or name one: --model NAME, weft list models)" run --layers 4 --hidden 1024 --heads 8 --global-batch 8
expect 1 "weft: --global-batch: global batch is required (set global_batch= or --global-batch)" run --model llama3-8b
"$weft" run --layers 80 --hidden 8192 --heads 64 --kv-heads 8 --ffn 29568 --ffn-kind swiglu --vocab 152064 --seq 4096 --style llama --cluster dgx-h100 --gpus 64 --tp 8 --pp 4 --sp yes --global-batch 64 >"$tmp/custom" 2>&1
if head -1 "$tmp/custom" | grep -qx "custom on 64 x H100-SXM (dgx-h100): TP 8, PP 4, DP 2, SP, micro-batch 1, global batch 64, 1f1b, recompute none"; then ok; else ko "custom model from flags"; cat "$tmp/custom"; fi
# --dry-run (-n) resolves the job and prints it in one line, unsimulated.
"$weft" run --model gpt3-175b --cluster selene --gpus 1536 --tp 8 --pp 8 --global-batch 1536 -n >"$tmp/dry" 2>&1
if [ $? -eq 0 ] && [ "$(cat "$tmp/dry")" = "gpt3-175b on 1536 x A100-80GB (selene): TP 8, PP 8, DP 24, CP 1, EP 1, micro-batch 1, global batch 1536; not simulated (--dry-run)" ]; then ok; else ko "run --dry-run"; cat "$tmp/dry"; fi
expect 1 "weft: --tp: TP 3 x PP 1 x CP 1 = 3 does not divide 32 GPUs" run --model gpt-1.7b --gpus 32 --tp 3 --global-batch 64 --dry-run
# A job that does not fit says so on its second line, before its figures;
# --must-fit makes it exit 3 (issue 40), text or JSON; a job that fits
# exits 0 with it.
"$weft" run --model llama3-8b --gpus 8 --global-batch 8 >"$tmp/oom" 2>"$tmp/err"
if [ $? -eq 0 ] && sed -n 2p "$tmp/oom" | grep -qx "  DOES NOT FIT     171.7 GB per GPU of 85.9 GB: this job cannot run as planned; the figures below assume a GPU with the memory (to fit: --zero 2, 73.35 GB)"; then ok; else ko "does not fit, first"; head -3 "$tmp/oom"; fi
expect 3 "weft: --must-fit: the job does not fit in GPU memory" run --model llama3-8b --gpus 8 --global-batch 8 --must-fit
expect 3 "weft: --must-fit: the job does not fit in GPU memory" run --model llama3-8b --gpus 8 --global-batch 8 --must-fit --json
if python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["fits_in_memory"] is False' "$tmp/out"; then ok; else ko "--must-fit --json still prints"; fi
expect 0 "" run --model gpt-1.7b --layers 2 --gpus 8 --global-batch 8 --must-fit
"$weft" run --model gpt-1.7b --layers 2 --gpus 32 --tp 2 --global-batch 64 >"$tmp/plain" 2>&1
if head -1 "$tmp/plain" | grep -qx "gpt-1.7b on 32 x A100-80GB (selene): TP 2, PP 1, DP 16, micro-batch 1, global batch 64, 1f1b, recompute none"; then ok; else ko "plan defaults, not the demo's"; cat "$tmp/plain"; fi
# The summary says which symmetric shortcut ran, and --every-rank none.
"$weft" run --model gpt-1.7b --layers 2 --cluster selene --gpus 32 --global-batch 64 >"$tmp/sym" 2>&1
"$weft" run --model gpt-1.7b --layers 2 --cluster selene --gpus 32 --global-batch 64 --every-rank >"$tmp/all" 2>&1
if tail -1 "$tmp/sym" | grep -q "(replica symmetry: node 0's ranks; --every-rank for all)$" &&
   tail -1 "$tmp/all" | grep -q "flows in [0-9.]* s$"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: shortcut note"; tail -1 "$tmp/sym" "$tmp/all"; fi
"$weft" run --model gpt-1.7b --layers 2 --cluster selene --gpus 16 --tp 8 --pp 2 --global-batch 16 >"$tmp/sym" 2>&1
if tail -1 "$tmp/sym" | grep -q "(TP symmetry: one TP rank per node; --every-rank for all)$"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: TP symmetry note"; tail -1 "$tmp/sym"; fi
golden coll-h100-8.txt coll allreduce --cluster dgx-h100 --gpus 8 --min-bytes 8B --max-bytes 8GiB --step-factor 64
# Determinism: sim_wall_s is the only field that varies, across runs and
# working directories (issue 11's guard).
"$weft" run --json | sed 's/"sim_wall_s": [0-9.]*/"sim_wall_s": 0/' >"$tmp/r1"
mkdir -p "$tmp/elsewhere"
(cd "$tmp/elsewhere" && "$weft" run --json) | sed 's/"sim_wall_s": [0-9.]*/"sim_wall_s": 0/' >"$tmp/r2"
(cd / && "$weft" run --json) | sed 's/"sim_wall_s": [0-9.]*/"sim_wall_s": 0/' >"$tmp/r3"
if cmp -s "$tmp/r1" "$tmp/r2" && cmp -s "$tmp/r1" "$tmp/r3" && grep -q '"iteration_time_s"' "$tmp/r1" &&
   python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/r1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft run --json not deterministic or malformed"; cat "$tmp/r1" "$tmp/r2"; fi

# Tracing changes no figure: the same JSON with and without a trace (an
# FSDP job inside one node, whose gathers and reduce-scatters overlap on
# NVLink: the closed form of whole-node collectives once ignored that and
# reported less overlapped communication untraced).
fsdp8="--model llama3-8b --layers 4 --cluster dgx-h100 --gpus 8 --fsdp yes --global-batch 8"
"$weft" run $fsdp8 --json -q | sed 's/"sim_wall_s": [^,}]*//' >"$tmp/u.json"
"$weft" run $fsdp8 --json -q --chrome "$tmp/u.trace" | sed 's/"sim_wall_s": [^,}]*//' >"$tmp/t.json"
if cmp -s "$tmp/u.json" "$tmp/t.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a trace changes weft run's figures"; diff "$tmp/u.json" "$tmp/t.json" | head -5; fi

# --attention sdpa is FlashAttention-2 where the GPU runs it (H100), the
# GPU's default where it does not (B200).
sd="--model llama3-8b --layers 2 --gpus 8 --global-batch 8 --json -q"
a=$("$weft" run $sd --cluster dgx-h100 --attention sdpa | sed 's/.*"iteration_time_s": \([^,]*\).*/\1/')
b=$("$weft" run $sd --cluster dgx-h100 --attention flash2 | sed 's/.*"iteration_time_s": \([^,]*\).*/\1/')
c=$("$weft" run $sd --cluster dgx-b200 --attention sdpa | sed 's/.*"iteration_time_s": \([^,]*\).*/\1/')
d=$("$weft" run $sd --cluster dgx-b200 | sed 's/.*"iteration_time_s": \([^,]*\).*/\1/')
if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$c" ] && [ "$c" = "$d" ] && [ "$a" != "$("$weft" run $sd --cluster dgx-h100 | sed 's/.*"iteration_time_s": \([^,]*\).*/\1/')" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --attention sdpa ($a $b $c $d)"; fi

# Traces: identical runs give identical files; pj_dump parses the Paje one
# and the Chrome one is valid JSON.
small="--model gpt-1.7b --layers 4 --cluster selene --gpus 16 --tp 2 --pp 2 --global-batch 16"
"$weft" run $small --paje "$tmp/a.paje" --chrome "$tmp/a.json" >/dev/null
(cd "$tmp/elsewhere" && "$weft" run $small --paje b.paje --chrome b.json >/dev/null)
mv "$tmp/elsewhere/b.paje" "$tmp/elsewhere/b.json" "$tmp/"
if cmp -s "$tmp/a.paje" "$tmp/b.paje" && cmp -s "$tmp/a.json" "$tmp/b.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: traces differ between identical runs"; fi
if command -v pj_dump >/dev/null; then
  if pj_dump "$tmp/a.paje" >"$tmp/dump" 2>&1 && grep -q '^State, gpu7 compute, Work' "$tmp/dump" &&
     grep -q '^Variable, gpu9 NIC, receive GB/s' "$tmp/dump"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: pj_dump rejects the Paje trace"; head -5 "$tmp/dump"; fi
  # Issue 40, item 5, in PajeNG's terms: cluster > node > GPU > stream,
  # link ports under the nodes; states valued by kind of work (19 kinds
  # at most), with layer and micro-batch as fields (pj_dump -u); only the
  # streams used (no cp, t3 or ag here); transfers as links between GPUs.
  pj_dump -c "$tmp/a.paje" >"$tmp/tree" 2>&1
  pj_dump -u "$tmp/a.paje" >"$tmp/dumpu" 2>&1
  if grep -q '^reportContainer || node1 (node1)$' "$tmp/tree" && grep -q '^reportContainer | | gpu9 (gpu9)$' "$tmp/tree" &&
     grep -q '^reportContainer |  | gpu9 compute (gpu9 compute)$' "$tmp/tree" && grep -q '^reportContainer | | gpu9 NIC (gpu9 NIC)$' "$tmp/tree" &&
     ! grep -Eq ' (cp|t3|ag) \(' "$tmp/tree" &&
     [ "$(awk -F', *' '$1 == "State" { print $8 }' "$tmp/dump" | sort -u | wc -l)" -le 19 ] &&
     grep -q '^State, gpu7 compute, Work, [0-9.]*, [0-9.]*, [0-9.]*, [0-9.]*, gemm, fwd, 1, 1, -, ' "$tmp/dumpu" &&
     grep -q '^Link, cluster, Transfer, [0-9.]*, [0-9.]*, [0-9.]*, NIC, gpu4, gpu12, f[0-9]*$' "$tmp/dump"
  then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: Paje hierarchy, kinds of work or transfers"; head -20 "$tmp/tree"; fi
  # GEMM names as a field (item 5): the four GEMMs of a layer, forward,
  # and both gradients of one, each with its own value.
  n=$(awk -F', *' '$1 == "State" && $8 == "gemm" && $10 == 1 { print $13 }' "$tmp/dumpu" | sort -u | grep -cE '^(qkv|proj|fc1|fc2)\.(fwd|dgrad|wgrad)$')
  if [ "$n" -eq 12 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: GEMM names in Paje ($n of 12)"; fi
  # No state of zero length, even at pj_dump's 6 decimals: no idle state
  # between a task and the next one starting at once (they were about half
  # of all states) or at the end, no receive shown from its posting (all
  # at once) rather than from its transfer.
  z=$(awk -F', *' '$1 == "State" { n++; if ($4 == $5) z++ } END { print (z == 0 && n > 0) ? "ok" : z "/" n }' "$tmp/dump")
  if [ "$z" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: zero-length states in the Paje trace: $z"; fi
fi
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); x = [e for e in d["traceEvents"] if e.get("ph") == "X"]; assert x and all(e["dur"] > 0 for e in x)' "$tmp/a.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: Chrome trace is not valid JSON or has events of zero length"; fi
# Issue 40, item 6: link rates never exceed the link (300 GB/s A100
# NVLink, 25 GB/s HDR NIC); each flow at its whole-life average showed
# 556 GB/s on this job's NVLinks.
"$weft" run --model gpt-1.7b --layers 4 --cluster selene --gpus 16 --tp 2 --pp 4 --global-batch 16 --paje "$tmp/r.paje" -q >/dev/null
if command -v pj_dump >/dev/null; then
  m=$(pj_dump "$tmp/r.paje" | awk -F', *' '$1 == "Variable" { split($2, a, " "); k = a[2]; if ($7 > m[k]) m[k] = $7 } END { print m["NVLink"] + 0, m["NIC"] + 0 }')
  if [ "$m" = "300 25" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: link rates above the links' bandwidth: $m"; fi
fi
# The same traces whether couriers send the flows or not (sgbridge.h):
# the link rates' samples and the transfers' keys do not depend on the
# order in which flows that end together are seen to end.
WEFT_COURIERS=on "$weft" run --model gpt-1.7b --layers 4 --cluster selene --gpus 16 --tp 2 --pp 4 --global-batch 16 --paje "$tmp/co.paje" --chrome "$tmp/co.json" -q >/dev/null
WEFT_COURIERS=off "$weft" run --model gpt-1.7b --layers 4 --cluster selene --gpus 16 --tp 2 --pp 4 --global-batch 16 --paje "$tmp/cf.paje" --chrome "$tmp/cf.json" -q >/dev/null
if cmp -s "$tmp/co.paje" "$tmp/cf.paje" && cmp -s "$tmp/co.json" "$tmp/cf.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: traces differ with couriers"; fi
# Chrome (issue 40, item 7): no two events of one thread overlap (1 ns
# overlaps from rounding once); every send has a flow arrow to its
# receive; NVLink and NIC counters.
if python3 - "$tmp/a.json" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1]))["traceEvents"]
by = collections.defaultdict(list)
for e in d:
    if e["ph"] == "X":
        by[e["pid"], e["tid"]].append((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
for v in by.values():
    v.sort()
    assert all(a[1] <= b[0] for a, b in zip(v, v[1:])), "overlap"
sends = sum(1 for e in d if e["ph"] == "X" and e["name"].split()[1] == "send")
s = {e["id"]: e for e in d if e["ph"] == "s"}
f = {e["id"]: e for e in d if e["ph"] == "f"}
assert sends and len(s) == sends and s.keys() == f.keys(), (sends, len(s), len(f))
assert all(s[i]["pid"] != f[i]["pid"] and f[i]["tid"] == 2 for i in s)
c = {e["name"] for e in d if e["ph"] == "C"}
assert c == {"NVLink GB/s", "NIC GB/s", "memory GB"}, c
# GEMMs named by linear and pass (item 5): a layer's four, forward
gemms = {e["args"].get("gemm") for e in d if e["ph"] == "X" and e["args"].get("layer") == 0}
assert {"qkv.fwd", "proj.fwd", "fc1.fwd", "fc2.fwd", "fc1.wgrad"} <= gemms, gemms
PY
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: Chrome overlaps, flows or counters"; fi
# Memory in use (item 7): the counter's maximum is the accounting's peak
# (memory_per_gpu_bytes of the JSON) within its printed precision, 1 kB.
"$weft" run $small --chrome "$tmp/m.json" --json -q >"$tmp/m.out"
if python3 - "$tmp/m.json" "$tmp/m.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
peak = json.loads(open(sys.argv[2]).read().replace(", ,", ","))["memory_per_gpu_bytes"]
v = [e["args"]["in use"] for e in d if e["ph"] == "C" and e["name"] == "memory GB"]
assert v and abs(max(v) - peak / 1e9) < 1e-6, (max(v), peak)
PY
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: Chrome memory counter's peak"; fi
expect 1 "weft: /nonexistent/t.paje: cannot write: No such file or directory" run $small --paje /nonexistent/t.paje
# Gzipped traces decompress to the plain ones; a selection keeps exactly the
# selected events (issue 12, item 3).
"$weft" run $small --paje "$tmp/a.paje.gz" --chrome "$tmp/a.json.gz" >/dev/null
if gzip -dc "$tmp/a.paje.gz" | cmp -s - "$tmp/a.paje" && gzip -dc "$tmp/a.json.gz" | cmp -s - "$tmp/a.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: gzipped traces differ from the plain ones"; fi
"$weft" run $small --chrome "$tmp/s.json" --paje "$tmp/s.paje" --trace-ranks 1,3-4 --trace-level comm --trace-window 10ms:40ms >/dev/null
if python3 - "$tmp/a.json" "$tmp/s.json" <<'PY'
import json, sys
full = json.load(open(sys.argv[1]))["traceEvents"]
sel = json.load(open(sys.argv[2]))["traceEvents"]
kernels = {"gemm", "attn", "attn_bwd", "norm", "elemwise", "embed", "loss", "optim"}
key = lambda e: (e["pid"], e["tid"], e["ts"], e["dur"], e["name"], e["args"]["task"])
want = sorted(key(e) for e in full if e["ph"] == "X" and e["pid"] in (1, 3, 4)
              and e["name"].split()[1] not in kernels
              and e["ts"] + e["dur"] >= 10000 and e["ts"] <= 40000)
got = sorted(key(e) for e in sel if e["ph"] == "X")
assert want and got == want, (len(want), len(got))
assert sorted({e["pid"] for e in sel}) == [1, 3, 4]
PY
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: trace selection"; fi
if command -v pj_dump >/dev/null; then
  if pj_dump "$tmp/s.paje" >"$tmp/dump" 2>&1 && ! grep -q 'gpu0[ ,]' "$tmp/dump" && grep -q '^State, gpu3 ' "$tmp/dump"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: pj_dump rejects a selected Paje trace"; head -5 "$tmp/dump"; fi
fi
# Issue 40, item 8: tracing turns the symmetric shortcuts off, and says
# so on stderr, with the cost; not under -q, nor where the job takes none
# (pipelines keep every rank and flow).
tp8="--model gpt-1.7b --layers 2 --cluster selene --gpus 16 --tp 8 --global-batch 16 --chrome $tmp/n.json --trace-ranks 0-7"
expect 0 "weft: note: tracing replays every rank and every flow, so this job's shortcuts are off (TP symmetry, replica symmetry, whole-node collectives in closed form): 16 ranks simulated instead of 1, each collective as its flows, whatever --trace-ranks keeps; expect a replay many times slower (the figures agree with an untraced run's)" run $tp8
expect 0 "" run $tp8 -q
expect 0 "" run $small --chrome "$tmp/n.json"
expect 1 "weft: --trace-ranks: rank 80 is beyond the job's 16 ranks" run $small --paje "$tmp/x.paje" --trace-ranks 0-80
expect 1 "weft: --trace-level: 'kernels' is not all or comm" run $small --paje "$tmp/x.paje" --trace-level kernels

# Placement: an all-reduce ring over 4 nodes in 2 pods under 1:8 pod
# up-links crosses each up-link direction once per channel packed (nodes
# 0,1 | 2,3) and twice spread (pods 0,1,0,1): half the bus bandwidth.
pl="coll allreduce --cluster dgx-h100 --gpus 32 --nodes-per-leaf 1 --leaves-per-pod 2 --pod-oversubscription 8 --min-bytes 1GiB --max-bytes 1GiB --collective ring --json"
a=$("$weft" $pl --placement packed | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["busbw_GBps"])')
b=$("$weft" $pl --placement spread | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["busbw_GBps"])')
if python3 -c "import sys; r = $a / $b; sys.exit(0 if 1.98 < r < 2.02 else 1)"
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: spread placement busbw $b, packed $a"; fi
expect 1 "weft: --placement: unknown placement 'rail'; expected packed, spread or random[:SEED]" run --model llama3-8b --cluster dgx-h100 --gpus 8 --placement rail --json

expect 1 "weft: --collective: torus collectives run on a torus fabric, and this cluster's is fat-tree" coll allreduce --cluster dgx-h100 --gpus 16 --collective torus
expect 1 "weft: --collective: torus collectives run on a torus fabric, and this cluster's is rail" run --model gpt-1.7b --cluster dgx-h100 --gpus 16 --topology rail --global-batch 16 --collective torus

# A precision the GPU lacks is refused (A100 has no FP8).
expect 1 "weft: --dtype: A100-80GB has no fp8 compute (weft list gpus shows what each GPU has)" run --model llama3-8b --gpus 8 --dtype fp8 --json
expect 1 "weft: --fp8-recipe: H100-SXM has no block-scaled FP8 (MXFP8: Blackwell and later; weft list gpus shows which GPUs have it)" run --model llama3-8b --cluster dgx-h100 --gpus 8 --dtype fp8 --fp8-recipe mxfp8 --json
expect 1 "weft: --fp8-recipe: the mxfp8 recipe scales FP8 tensors: it needs dtype fp8 (--dtype fp8)" run --model llama3-8b --cluster dgx-b200 --gpus 8 --fp8-recipe mxfp8 --json
expect 1 "weft: --attention: A100-80GB has no flash3 attention kernel (weft list gpus shows the kernels of each GPU)" run --model llama3-8b --gpus 8 --attention flash3 --json

# Arguments are never dropped or silently overridden (issue 11, item 6).
expect 1 "weft: --model: missing value" run --model --json --gpus 8
expect 1 "weft: --gpus: given twice" run --gpus 8 --gpus 16
expect 2 "weft: --json: given twice" run --json --json
expect 2 "weft: run: unknown option '-o'" run -o x
expect 1 "weft: --scale: empty item in ',,,'; expected e.g. compute=2,nic=1.5" platform --scale ,,,
expect 1 "weft: --cluster: given twice (or with a CLUSTER argument)" platform selene --cluster dgx-h100
expect 2 "weft: run: more than 256 arguments" run $(i=0; while [ $i -lt 129 ]; do printf -- '--tp 1 '; i=$((i + 1)); done)
"$weft" coll allreduce --max-bytes 64KiB --json >"$tmp/coll.json" 2>&1
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert [r["bytes"] for r in d["results"]] == [65536]' "$tmp/coll.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: coll --max-bytes alone"; cat "$tmp/coll.json"; fi

# Writes are checked (issue 11, item 7): a full standard output fails; a
# file that cannot be written whole leaves the old one and no temporary.
if [ -w /dev/full ]; then
  "$weft" list gpus >/dev/full 2>"$tmp/err"
  if [ $? -eq 1 ] && [ "$(cat "$tmp/err")" = "weft: standard output: write error: No space left on device" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: list to /dev/full"; cat "$tmp/err"; fi
  "$weft" run --json --model gpt-1.7b --layers 2 --gpus 8 --global-batch 8 >/dev/full 2>"$tmp/err"
  if [ $? -eq 1 ] && grep -q 'standard output: write error' "$tmp/err"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: run --json to /dev/full"; fi
fi
echo old >"$tmp/big.xml"
(ulimit -f 100; trap '' XFSZ; "$weft" platform dgx-h100 --gpus 1024 -o "$tmp/big.xml") 2>"$tmp/err"
if [ $? -eq 1 ] && grep -q "big.xml: write error: File too large" "$tmp/err" && [ "$(cat "$tmp/big.xml")" = old ] &&
   [ "$(ls "$tmp" | grep -c 'big.xml.weft-')" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a failed platform write"; cat "$tmp/err"; fi
(ulimit -f 100; trap '' XFSZ; "$weft" run $small --paje "$tmp/t.paje" --chrome "$tmp/t.json" >/dev/null) 2>"$tmp/err"
if [ $? -eq 1 ] && [ ! -e "$tmp/t.paje" ] && [ "$(ls "$tmp" | grep -c 'weft-')" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a failed trace write"; cat "$tmp/err"; fi
(ulimit -f 10; trap '' XFSZ; "$weft" graph --model gpt-1.7b --gpus 8 --global-batch 64 -o "$tmp/g2.txt") 2>"$tmp/err"
if [ $? -eq 1 ] && [ ! -e "$tmp/g2.txt" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a failed graph write"; cat "$tmp/err"; fi

# Messages about a file name it (issue 11, item 8).
printf '<workload>\n  <model preset="gpt-1.7b"/>\n  <plan tp="2"/>\n</workload>\n' >"$tmp/w.xml"
expect 1 "weft: $tmp/w.xml:3: <plan>: global batch is required (set global_batch= or --global-batch)" graph "$tmp/w.xml"
printf '<workload>\n  <model preset="gpt-1.7b"/>\n</workload>\n' >"$tmp/w.xml"
expect 1 "weft: $tmp/w.xml: global batch is required (set global_batch= or --global-batch)" graph "$tmp/w.xml"
printf '<workload>\n  <model preset="gpt-1.7b"/>\n  <plan global_batch="16"/>\n</workload>\n\0<plan tp="3"/>' >"$tmp/w.xml"
expect 1 "weft: $tmp/w.xml:5: NUL byte: not a text file" graph "$tmp/w.xml"
printf '<cluster name="c" node="DGX-H100"\0 nodes="2"/>\n' >"$tmp/c.xml"
expect 1 "weft: $tmp/c.xml:1: NUL byte: not a text file" platform "$tmp/c.xml"

# A killed run leaves no temporary platform behind (issue 11, item 5).
before=$(ls /tmp | grep -c '^weft-platform')
"$weft" run --model gpt-1.7b --cluster dgx-h100 --gpus 16384 --global-batch 16384 >/dev/null 2>&1 &
sleep 0.5 # while the platform is written and loaded (about 0.1 to 1 s in)
kill -9 $! 2>/dev/null
wait $! 2>/dev/null
if [ "$(ls /tmp | grep -c '^weft-platform')" -eq "$before" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: a killed run left its platform file"; fi

# Work is bounded before it starts (issue 11, item 3).
expect 1 "weft: the task graph of this job would take about 496.2 GB (6.44e+09 tasks), above the limit of 4.295 GB; use fewer micro-batches or layers per stage, or --force" graph --model gpt-1.7b --layers 4096 --gpus 8 --pp 8 --global-batch 65536
expect 1 "weft: /dev/zero:1: NUL byte: not a text file" run --model gpt-1.7b --gpus 8 --global-batch 8 --kernel-table /dev/zero

# Long runs show progress on a terminal, and nothing when stderr is not one
# (issue 11, item 4).
long="--model gpt3-175b --cluster selene --gpus 1024 --tp 8 --pp 8 --global-batch 1536 --recompute full --json --every-rank"
"$weft" run $long >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: progress printed when stderr is not a terminal"; fi
if command -v script >/dev/null; then
  script -qc "$weft run $long" /dev/null >"$tmp/tty" 2>&1
  if grep -q 'of the tasks, .* s simulated, .* s wall' "$tmp/tty" && grep -q '"iteration_time_s"' "$tmp/tty"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: no progress on a terminal"; cat "$tmp/tty"; fi
fi

# The option layer: one declaration per command gives parsing and help.
expect 2 "weft: run: unknown option '--bogus-option'" run --bogus-option
expect 2 "weft: --json: takes no value" coll allreduce --json=1
expect 2 "weft: list: unexpected argument 'b'" list gpus b
expect 2 "weft: -o: missing FILE" graph --model gpt-1.7b -o
expect 2 "weft: help: unknown command 'fly'" help fly
"$weft" help run >"$tmp/help" 2>&1
if [ $? -eq 0 ] && grep -q -- '--kernel-table FILE' "$tmp/help" && grep -q -- '--pod-oversubscription' "$tmp/help" &&
   grep -q -- '--global-batch' "$tmp/help" && "$weft" run --help | cmp -s - "$tmp/help"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft help run"; cat "$tmp/help"; fi
"$weft" help >"$tmp/help" 2>&1
if [ $? -eq 0 ] && grep -q '^  weft platform \[CLUSTER\] \[options\]' "$tmp/help" && grep -q -- '--moe-imbalance' "$tmp/help"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft help"; cat "$tmp/help"; fi

# Determinism: the same command twice gives byte-identical platforms.
"$weft" platform dgx-h100 --gpus 1024 -o "$tmp/a.xml" 2>/dev/null
"$weft" platform dgx-h100 --gpus 1024 -o "$tmp/b.xml" 2>/dev/null
if cmp -s "$tmp/a.xml" "$tmp/b.xml"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: platform output not deterministic"; fi

# The sharded-data-parallel implementation is named in the summary and the
# JSON; --every-rank gives the symmetric shortcuts' answer.
"$weft" run --model gpt-1.7b --layers 2 --gpus 32 --zero 3 \
  --shard-impl deepspeed-2021 --global-batch 32 >"$tmp/sym" 2>&1
"$weft" run --model gpt-1.7b --layers 2 --gpus 32 --zero 3 \
  --shard-impl deepspeed-2021 --global-batch 32 --every-rank >"$tmp/all" 2>&1
if head -1 "$tmp/sym" | grep -q 'ZeRO-3 (deepspeed-2021)' &&
   [ "$(sed -n 2p "$tmp/sym")" = "$(sed -n 2p "$tmp/all")" ] &&
   "$weft" run --json --model gpt-1.7b --layers 2 --gpus 16 --fsdp yes \
     --shard-impl fsdp2 --global-batch 16 | grep -q '"shard_impl": "fsdp2"'; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: shard_impl in the summary and JSON, --every-rank"
fi

# FSDP with pipeline parallelism: FSDP2 only, refused otherwise with the
# flag named; interleaved HSDP under the stage symmetry gives every rank's
# answer.
expect 1 "weft: --fsdp: ZeRO-3 with pipeline parallelism (PP 2) is modelled as torchtitan runs it, on FSDP2 (PyTorch's pipelining drives FSDP2 modules only; DeepSpeed refuses ZeRO-3 with PP); this plan's shard_impl is ideal: add --shard-impl fsdp2" \
  run --model llama3-8b --layers 4 --gpus 16 --pp 2 --fsdp yes --global-batch 16
fpp="--stack torchtitan --model llama3-8b --layers 4 --cluster dgx-h100 --gpus 32 --pp 2 --hsdp 8 --schedule interleaved:2 --global-batch 64"
"$weft" run $fpp >"$tmp/sym" 2>&1
"$weft" run $fpp --every-rank >"$tmp/all" 2>&1
if head -1 "$tmp/sym" | grep -q 'PP 2.*fsdp2' &&
   [ "$(sed -n 2p "$tmp/sym")" = "$(sed -n 2p "$tmp/all")" ]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: FSDP x PP under the stage symmetry, --every-rank"
fi

# A split of the layers nobody asked to be uneven is said, not silent.
expect 0 "weft: warning: 5 layers do not divide evenly over 2 pipeline stages; layers per stage: 3 2 (first_stage_layers and last_stage_layers choose the split)" \
  run --json --model gpt-1.7b --layers 5 --pp 2 --gpus 8 --global-batch 8
expect 0 "" run --json -q --model gpt-1.7b --layers 5 --pp 2 --gpus 8 --global-batch 8
expect 0 "weft: gpt-1.7b on 8 GPUs (TP 1, PP 2, DP 4): 2 stage programs, 286 tasks; 4.755e+13 model FLOPs, 4.755e+13 with recomputation; 6.645 GB per GPU of 85.9 GB (fits)" \
  graph --quiet --model gpt-1.7b --layers 5 --pp 2 --gpus 8 --global-batch 8 -o /dev/null
expect 0 "" run --json --model gpt-1.7b --layers 5 --pp 2 --first-stage-layers 3 \
  --gpus 8 --global-batch 8

# Help: every command answers --help, -h and weft help CMD alike (exit 0),
# and its help names every flag of the parsing tables it takes, each with
# a meaning: the commands' own option tables (sim/cmd_*.c) and the
# settings tables (platforms/cluster.c, workloads/model.c, plan.c).
src=$dir/../..
keys() { # FILE: the names of a settings table, as flags
  sed -n 's/^ *\[[A-Z_]*\] = {"\([a-z0-9_]*\)".*/\1/p' "$1" | tr _ -
}
for cmd in run graph coll platform list; do
  "$weft" "$cmd" --help >"$tmp/h1" 2>&1; r1=$?
  "$weft" "$cmd" -h >"$tmp/h2" 2>&1; r2=$?
  "$weft" help "$cmd" >"$tmp/h3" 2>&1; r3=$?
  missing=""
  flags=$(sed -n 's/^ *{"\([a-z-]*\)", [0-9a-z\x27]*, OPT_.*/\1/p' "$src/sim/cmd_$cmd.c")
  case $cmd in
  run|graph) flags="$flags $(keys "$src/platforms/cluster.c") $(keys "$src/workloads/model.c") $(keys "$src/workloads/plan.c") cluster model catalog scale" ;;
  coll|platform) flags="$flags $(keys "$src/platforms/cluster.c") cluster catalog scale" ;;
  list) flags="$flags catalog" ;;
  esac
  for f in $flags; do
    grep -q -- "^  --$f[ ,]\|^  --$f\$\|^  -., --$f" "$tmp/h1" || missing="$missing --$f"
  done
  if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ] && cmp -s "$tmp/h1" "$tmp/h2" &&
     cmp -s "$tmp/h1" "$tmp/h3" && [ -z "$missing" ] && grep -q '^examples:' "$tmp/h1"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: weft $cmd --help (exit $r1 $r2 $r3; missing:$missing)"
  fi
done
"$weft" help --man >"$tmp/weft.1"
if [ $? -eq 0 ] && head -1 "$tmp/weft.1" | grep -q '^\.TH WEFT 1' &&
   grep -q 'cross\\-entropy' "$tmp/weft.1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft help --man"; fi
expect 2 "weft: run: unknown option '--modle' (did you mean '--model'?)" run --modle gpt-1.7b
expect 2 "weft: run: unknown option '--global-bach' (did you mean '--global-batch'?)" run --global-bach 8
expect 1 "weft: --model: unknown model 'llama3-8' (did you mean 'llama3-8b'?); known models: gpt-1.7b, gpt-3.6b, gpt-7.5b, gpt-18.4b, gpt-39.1b, gpt-76.1b, gpt-145.6b, gpt-310.1b, gpt-529.6b, gpt-1008b, gpt3-175b, llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, qwen3-8b, qwen3-32b, mixtral-8x22b, deepseek-v3, qwen3-30b-a3b, qwen3-235b-a22b, gpt-oss-20b, gpt-oss-120b, llama4-scout" run --model llama3-8

# weft run --json carries every field the README's table documents and
# nothing else (three runs: one that fits, one that does not, which adds
# the fit hint, and a ZeRO-3 one, which adds shard_impl, with torchtitan's
# memory, which adds mem_framework); its memory terms sum to the total.
"$weft" run --json >"$tmp/j1" 2>/dev/null
"$weft" run --json --model gpt3-175b --gpus 64 --tp 8 --global-batch 64 \
  >"$tmp/j2" 2>/dev/null
"$weft" run --json --model gpt-1.7b --layers 2 --gpus 16 --zero 3 \
  --shard-impl deepspeed --global-batch 16 --mem-framework torchtitan \
  >"$tmp/j3" 2>/dev/null
"$weft" run --json --breakdown --model gpt-1.7b --layers 4 --gpus 16 --tp 2 \
  --pp 2 --cp 2 --global-batch 8 >"$tmp/j4" 2>/dev/null
# inputs.plan.tp_comm_overlap and async_tp_grad are printed only when on,
# and inputs.model.head_dim, qkv_bias, qk_norm and tied only when set,
# goodput only with a run length
"$weft" run --json --model gpt-1.7b --layers 2 --gpus 8 --tp 4 --sp yes \
  --tp-comm-overlap te --async-tp-grad yes --global-batch 8 --head-dim 96 --qkv-bias no \
  --qk-norm yes --tied no --train-days 7 --storage-bw 100GBps \
  >"$tmp/j5" 2>/dev/null
# and the MoE settings only when not their defaults (the all-to-all
# overlap only when on)
"$weft" run --json --model mixtral-8x7b --layers 2 --gpus 8 --ep 8 \
  --global-batch 16 --moe-dispatcher deepep --moe-capacity 1 --moe-pad yes \
  --moe-max-nodes 1 --overlap-moe-expert-parallel-comm yes \
  --delay-wgrad-compute yes \
  >"$tmp/j6" 2>/dev/null
# and the MoE, MLA, MTP, window and chunk model settings only when on (and
# the expert TP degree, --etp, only when set)
"$weft" run --json --model deepseek-v3 --layers 4 --seq 256 --moe-every 2 \
  --vocab-pad 128 --gpus 8 --ep 8 --etp 1 --global-batch 8 >"$tmp/j7" 2>/dev/null
"$weft" run --json --model gpt-oss-20b --layers 2 --seq 256 --gpus 8 \
  --ep 8 --global-batch 8 >"$tmp/j8" 2>/dev/null
"$weft" run --json --model llama4-scout --layers 4 --seq 256 --attn-chunk 128 \
  --gpus 8 --ep 8 --global-batch 8 >"$tmp/j9" 2>/dev/null
# and the shared experts' overlap only when on
"$weft" run --json --model llama4-scout --layers 2 --seq 256 --gpus 8 \
  --ep 8 --global-batch 8 --moe-dispatcher alltoall \
  --moe-shared-expert-overlap yes >"$tmp/j10" 2>/dev/null
if python3 - "$src/README.md" "$tmp/j1" "$tmp/j2" "$tmp/j3" "$tmp/j4" "$tmp/j5" \
  "$tmp/j6" "$tmp/j7" "$tmp/j8" "$tmp/j9" "$tmp/j10" <<'PY'
import json, re, sys
doc = open(sys.argv[1]).read()
sec = doc[doc.index("### `weft run --json`"):]
sec = sec[:sec.index("\n## ")]
documented = set()
for line in sec.splitlines():
    if line.startswith("| `"):
        documented |= set(re.findall(r"`([a-zA-Z0-9_.\[\]]+)`", line.split(" | ")[0]))
def fields(o, pre=""):
    out = set()
    for k, v in o.items():
        if isinstance(v, dict):
            out |= fields(v, pre + k + ".")
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for e in v:
                out |= fields(e, pre + k + "[].")
        else:
            out.add(pre + k)
    return out
seen = set()
for f in sys.argv[2:]:
    d = json.load(open(f))
    seen |= fields(d)
    m = d["memory"]
    parts = sum(m[k] for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes",
                               "activations_bytes", "transient_bytes", "buffers_bytes"))
    assert abs(parts - m["total_bytes"]) <= 1e-9 * m["total_bytes"] + 2, f
assert json.load(open(sys.argv[3]))["memory"]["fit_hint"] == "--zero 3", "fit hint"
# The breakdown: each stage's terms sum to the iteration, the kinds to the
# overlapped and exposed means, the critical path to the iteration.
d = json.load(open(sys.argv[5]))
T, b = d["iteration_time_s"], d["breakdown"]
assert len(b["stages"]) == d["pp"] == len(b["critical_path"]["stage_s"])
for st in b["stages"]:
    tot = st["compute_s"] + sum(st["exposed_s"].values()) + st["idle_s"]
    assert abs(tot - T) <= 1e-6 * T, (tot, T)
    assert abs(sum(st[k] for k in ("compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "compute_optimizer_s")) - st["compute_s"]) <= 1e-6 * T
ex = sum(sum(st["exposed_s"].values()) for st in b["stages"]) / len(b["stages"])
assert abs(ex - d["exposed_comm_s"]) <= 1e-6 * T, (ex, d["exposed_comm_s"])
cp = b["critical_path"]
assert abs(cp["total_s"] - T) <= 1e-6 * T and abs(sum(cp["stage_s"]) - T) <= 1e-6 * T
assert abs(sum(cp["comm_s"].values()) + sum(cp[k] for k in ("compute_gemm_s", "compute_attention_s", "compute_memory_bound_s", "compute_optimizer_s")) - T) <= 1e-6 * T
# A sweep's rows only (tests/cli/test_sweep.sh checks them there).
documented = {f for f in documented
              if not f.startswith(("iterations.", "held_by_rank"))}
if seen != documented:
    print("undocumented:", sorted(seen - documented), "missing:", sorted(documented - seen))
    sys.exit(1)
PY
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft run --json against README's field table"; fi

# Tensor3D (GPT 7.5B on 64 A100, a 2 x 2 x 2 grid): the node-wide grid's
# symmetric shortcut against every rank; over-decomposition into 4 pieces
# hides communication, and on a network 100x faster leaves the iteration
# within 2 % of its computation.
t3run() { # PIECES SCALE [FLAGS]: iteration, compute and exposed seconds
  k=$1; sc=$2; shift 2
  "$weft" run --json --model gpt-7.5b --gpus 64 --global-batch 128 \
    --micro-batch 4 --tensor3d 2,2,2 --overdecompose "$k" \
    --scale nvlink="$sc",nic="$sc" "$@" | python3 -c 'import json,sys
d = json.load(sys.stdin)
print(d["iteration_time_s"], d["compute_s"], d["exposed_comm_s"])'
}
set -- $(t3run 1 1) $(t3run 1 1 --every-rank) $(t3run 4 1) $(t3run 4 100)
if awk -v a="$1" -v b="$4" -v x1="$3" -v x4="$9" -v it="${10}" -v c="${11}" \
     'BEGIN { exit !(a / b > 0.999 && a / b < 1.001 && x4 < x1 && it < 1.02 * c) }'
then pass=$((pass + 1)); else fail=$((fail + 1))
  echo "FAIL: Tensor3D runs: 1 piece $1 s (every rank $4 s), exposed $3 s; 4 pieces exposed $9 s; fast network ${10} s for ${11} s of compute"; fi

# Gradient compression: on a very slow network FP16 casting approaches
# its compression ratio (2x), in the simulation and in Agarwal et al.'s
# model; the summary names the method and the baseline.
set -- $("$weft" run --json --model gpt-1.7b --gpus 32 --global-batch 64 \
  --grad-dtype fp32 --compress fp16 --scale nic=1e-4 | python3 -c 'import json,sys
c = json.load(sys.stdin)["compression"]
print(c["speedup"], c["model_speedup"], c["method"])')
if awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > 1.95 && a <= 2 && b > 1.95 && b <= 2) }' &&
   [ "$3" = fp16 ]
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: fp16 on a slow network: speedup $1, model $2, method $3"; fi
if "$weft" run --model gpt-1.7b --gpus 16 --global-batch 32 --compress powersgd:4 |
   grep -q "^    without compression .* speedup .*x; Agarwal et al.'s model"
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the compression summary"; fi

# Goodput (workloads/goodput.h): the run's wall time splits into training,
# rework, checkpoints and restarts; interruptions are wall time over the
# MTBF; --train-tokens gives the training time the simulated rate needs;
# the settings are refused without a run length or a storage bandwidth.
gp="--model gpt-1.7b --layers 4 --gpus 16 --global-batch 16 --storage-bw 10GBps"
set -- $("$weft" run $gp --train-days 30 --json | python3 -c 'import json,sys
d = json.load(sys.stdin); g = d["goodput"]
parts = g["work_s"] + g["rework_s"] + g["checkpoint_s"] + g["restart_s"]
print(abs(parts / g["wall_s"] - 1) < 1e-8, abs(g["interruptions"] * g["mtbf_s"] / (30 * 86400) - 1) < 1e-5,
      abs(g["work_s"] / g["wall_s"] - g["efficiency"]) < 1e-5, g["interval_s"] == g["optimal_interval_s"], g["ckpt_mode"])')
if [ "$*" = "True True True True sync" ]; then ok; else ko "goodput JSON: $*"; fi
set -- $("$weft" run $gp --train-tokens 1e9 --ckpt-mode async --ckpt-interval 1h --json | python3 -c 'import json,sys
d = json.load(sys.stdin); g = d["goodput"]
print(abs(g["work_s"] * d["tokens_per_s"] / 1e9 - 1) < 1e-5, g["interval_s"], g["ckpt_mode"])')
if [ "$*" = "True 3600 async" ]; then ok; else ko "goodput of tokens: $*"; fi
if "$weft" run $gp --train-days 30 | grep -q "^    effective training time [0-9.]* % "; then ok; else ko "goodput summary"; fi
if "$weft" run --model gpt-1.7b --layers 4 --gpus 16 --global-batch 16 --json | grep -q goodput; then ko "goodput without a run length"; else ok; fi
expect 2 "weft: --train-days: needs --storage-bw (storage_bw of the cluster), the storage tier's write bandwidth (no default; Llama 3's Tectonic sustains 2TBps)" run --train-days 54
expect 2 "weft: --ckpt-mode: needs a run length, --train-days or --train-tokens" run --model gpt-1.7b --global-batch 64 --storage-bw 2TBps --ckpt-mode async
expect 1 "weft: --storage-bw: '2TB' has unknown unit 'TB'; expected a bandwidth such as 450GBps" run --train-days 54 --storage-bw 2TB
expect 2 "weft: --train-days and --train-tokens: give one run length, not both" run --model gpt-1.7b --global-batch 64 --train-days 1 --train-tokens 1e12 --storage-bw 2TBps
expect 2 "weft: --ckpt-mode: 'always' is not sync or async" run --model gpt-1.7b --global-batch 64 --train-days 1 --storage-bw 2TBps --ckpt-mode always
expect 2 "weft: --fail-rates: unknown table 'meta' (llama3)" run --model gpt-1.7b --global-batch 64 --train-days 1 --storage-bw 2TBps --fail-rates meta
expect 2 "weft: --ckpt-copy-bw: only with --ckpt-mode async" run --model gpt-1.7b --global-batch 64 --train-days 1 --storage-bw 2TBps --ckpt-copy-bw 32GBps
expect 2 "weft: --train-days: '0' is below the minimum of 1e-06" run --model gpt-1.7b --global-batch 64 --train-days 0 --storage-bw 2TBps

# The README's Llama 3 check: its goodput lines, on the same job with one
# micro-batch per pipeline (the lines do not depend on the iteration).
"$weft" run --model llama3-405b --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 \
  --global-batch 128 --account-embedding-loss yes --recompute full --zero 1 \
  --shard-impl megatron --train-days 54 --storage-bw 2TBps | sed -n '/^  goodput/,$p' >"$tmp/gp.txt"
sed -n '/^  goodput over 54 days/,/^```/p' "$src/README.md" | sed '$d' >"$tmp/gp-readme.txt"
if [ -s "$tmp/gp.txt" ] && cmp -s "$tmp/gp.txt" "$tmp/gp-readme.txt"; then ok; else ko "README's goodput lines"; diff "$tmp/gp-readme.txt" "$tmp/gp.txt"; fi
# Stragglers and per-GPU variation (issue 41, item 2): errors name the
# flag; the slow rank is named on the critical path; --iterations prints
# the spread and the loss against a run without variation.
expect 1 "weft: --slow-gpu: rank 9 is not a GPU of the job (0 to 7)" run --model gpt-1.7b --gpus 8 --global-batch 8 --slow-gpu 9:2
expect 1 "weft: --slow-nic: rank 3: the factor '0.5' is not a number from 1 to 1000 (how many times slower)" run --model gpt-1.7b --gpus 8 --global-batch 8 --slow-nic 3:0.5
expect 2 "weft: --iterations: the iterations differ only by the GPUs' drawn speeds and the clock of the day: give --gpu-sigma or --diurnal too" run --model gpt-1.7b --gpus 8 --global-batch 8 --iterations 3
expect 2 "weft: --iterations: '0' is not a whole number from 1 to 1000" run --model gpt-1.7b --gpus 8 --global-batch 8 --gpu-sigma 2 --iterations 0
if "$weft" run --model gpt-1.7b --layers 2 --gpus 8 --tp 2 --pp 2 --global-batch 8 --slow-gpu 5:1.5 --breakdown 2>/dev/null |
   grep -q "^    held back by rank 5: "
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --breakdown names the slow rank"; fi
"$weft" run --model gpt-1.7b --layers 2 --gpus 16 --global-batch 16 --gpu-sigma 2 --iterations 4 >"$tmp/out" 2>"$tmp/err"
if grep -q "^  iterations       4, gpu_seed 1 to 4, GPU speeds of sigma 2 %: min .* s, median .* s, mean .* s, max .* s$" "$tmp/out" &&
   grep -q "^    without variation .* s: the mean loses .* % of its throughput$" "$tmp/out" &&
   grep -q "^weft: note: slow_gpu, slow_nic, gpu_sigma and down_links make the ranks differ" "$tmp/err"
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --iterations"; cat "$tmp/out" "$tmp/err"; fi

# Links down and the diurnal clock (issue 41, item 2): errors name the
# flag and the value; a leaf group's up-link with cables down slows a ring
# that leaves it; --iterations runs with --diurnal alone, the clock
# advancing; weft platform writes the degraded links.
expect 1 "weft: --down-links: no link 'leaf7-up' on this cluster (its NICs are node0-nic0 to node3-nic7, up-links leaf0-up to pod0-up, as weft platform names them)" coll allreduce --cluster dgx-h100 --gpus 32 --nodes-per-leaf 2 --down-links leaf7-up
expect 1 "weft: --down-links: 'leaf0-up:16': leaf0-up stands for 16 cable(s); 16 down would cut it off (at most 15)" coll allreduce --cluster dgx-h100 --gpus 32 --nodes-per-leaf 2 --down-links leaf0-up:16
expect 1 "weft: --down-links: links down are modelled on fat-tree, rail, rail-only and multi-plane fabrics (their up-links' parallel cables and their NICs), not on a torus" coll allreduce --cluster dgx-h100 --gpus 32 --topology torus --torus 2x2 --down-links node0-nic0
expect 1 "weft: --diurnal-hour: the hour of the day matters only with a diurnal variation: give diurnal too" run --model gpt-1.7b --gpus 8 --global-batch 8 --diurnal-hour 12
expect 2 "weft: --iterations-apart: it spaces the iterations over the day's clock: give --iterations and --diurnal too" run --model gpt-1.7b --gpus 8 --global-batch 8 --gpu-sigma 1 --iterations 2 --iterations-apart 10
c1=$("$weft" coll allreduce -b 1GiB -e 1GiB --cluster dgx-h100 --gpus 32 --nodes-per-leaf 2 2>/dev/null | tail -1 | awk '{print $2}')
c2=$("$weft" coll allreduce -b 1GiB -e 1GiB --cluster dgx-h100 --gpus 32 --nodes-per-leaf 2 --down-links leaf0-up:12 2>/dev/null | tail -1 | awk '{print $2}')
if [ -n "$c1" ] && [ -n "$c2" ] && awk -v a="$c1" -v b="$c2" 'BEGIN { exit !(b > 1.9 * a && b < 2 * a) }'
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --down-links leaf0-up:12 ($c1 us, $c2 us)"; fi
"$weft" platform dgx-h100 --gpus 16 --nodes-per-leaf 1 --down-links leaf0-up:6,node1-nic2 >"$tmp/out" 2>"$tmp/err"
if grep -q '<link id="leaf0-up" bandwidth="1e+11Bps"' "$tmp/out" && grep -q '<link id="node1-nic2" bandwidth="4.375e+10Bps"' "$tmp/out" &&
   grep -q '<link id="leaf1-up" bandwidth="4e+11Bps"' "$tmp/out" && grep -q '<link id="node0-nic2" bandwidth="5e+10Bps"' "$tmp/out" &&
   grep -q '^    leaf0-up: 6 of its 8 cables down$' "$tmp/out" && grep -q '^    node1-nic2: down$' "$tmp/out"
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: weft platform --down-links"; grep -E '<link id="(leaf0-up|node1-nic2)"' "$tmp/out"; cat "$tmp/err"; fi
"$weft" run --model gpt-1.7b --layers 2 --gpus 16 --global-batch 16 --diurnal 2 --diurnal-hour 6 --iterations 3 --iterations-apart 100000 >"$tmp/out" 2>"$tmp/err"
if grep -q "^  iterations       3, clock 06:00 to 07:.. (one in 100000), kernels at 1.0029 to 1.00.. times their time (diurnal 2 %): min .* s, median .* s, mean .* s, max .* s$" "$tmp/out" &&
   grep -q "^    without variation .* s: the mean loses .* % of its throughput$" "$tmp/out"
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --iterations with --diurnal"; cat "$tmp/out" "$tmp/err"; fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
