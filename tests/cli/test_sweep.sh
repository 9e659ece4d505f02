#!/bin/sh
# test_sweep.sh WEFT DIR - end-to-end tests of weft sweep: bad input, the
# status of every kind of scenario, kill and resume against an
# uninterrupted run, the Slurm array's chunks, --merge, and the stable CSV
# header (golden/sweep-header.csv, documented in the README).
# Prints "sweep: N passed, N failed" and fails if any case failed.
weft=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$dir/lib.sh"

# field CSV ROW COLUMN: the value of COLUMN (by header name) in data row
# ROW (1-based), for fields without quotes or commas inside.
field() {
  python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(r[int(sys.argv[2])-1][sys.argv[3]])' "$@"
}

cd "$tmp" || exit 1

# Bad input.
expect 2 "weft: sweep: no study file" sweep
expect 2 "weft: sweep: one study file, not 2 (results files go with --merge)" sweep a.xml b.xml
expect 2 "weft: sweep: give the results file with -o FILE (or -n to list the scenarios)" sweep a.xml
expect 1 "weft: --jobs: '0' is not between 1 and 64" sweep a.xml -o r.csv -j 0
expect 1 "weft: a.xml: cannot open: No such file or directory" sweep a.xml -o r.csv
expect 2 "weft: sweep --merge: give the joined file with -o FILE" sweep --merge a.csv
printf '<study><set model="gpt-1.7b"/><cross><axis name="tpp" values="1"/></cross></study>\n' >bad.xml
expect 1 "weft: bad.xml:1: <axis>: 'tpp' is not a setting of weft run; a value of the study's own needs <var name=\"tpp\"/>" sweep bad.xml -n
printf '<study><var name="mfu" value="1"/></study>\n' >clash.xml
expect 1 "weft: clash.xml: 'mfu' is also a column of the results; name the study's value otherwise" sweep clash.xml -n
printf '<study><set model="gpt-1.7b"/></study>\n' >one.xml
expect 1 "weft: --chunk: '3' is not I/N, such as 3/16" sweep one.xml -n --chunk 3
expect 1 "weft: --chunk: '3' is not between 1 and 2" sweep one.xml -n --chunk 3/2

# Every status: ok, a warning kept, no_fit with the sizes, invalid from a
# derivation and from weft run, in study order whatever -j.
cat >st.xml <<'EOF'
<study name="statuses">
  <set cluster="dgx-a100" global_batch="16"/>
  <var name="nodes_used"/>
  <scenario model="gpt-1.7b" gpus="8" tp="2" pp="1"/>
  <scenario model="gpt-1.7b" gpus="8" tp="1" pp="2" layers="25"/>
  <scenario model="gpt3-175b" gpus="8" tp="8" pp="1"/>
  <scenario model="gpt-1.7b" gpus="40" tp="5" pp="1"/>
  <scenario model="gpt-1.7b" gpus="8" tp="0" pp="1"/>
  <derive name="nodes_used" expr="gpus / 8"/>
  <derive name="dp" expr="gpus / (tp * pp)"/>
</study>
EOF
if "$weft" sweep st.xml -o st.csv -j 2 >out 2>err &&
   [ "$(field st.csv 1 status)" = ok ] && [ "$(field st.csv 1 reason)" = "" ] &&
   [ "$(field st.csv 1 dp)" = 4 ] && [ "$(field st.csv 1 nodes_used)" = 1 ] &&
   [ "$(field st.csv 1 inputs.plan.tp)" = 2 ] &&
   [ "$(field st.csv 2 status)" = ok ] &&
   field st.csv 2 reason | grep -q "^warning: 25 layers do not divide evenly" &&
   [ "$(field st.csv 3 status)" = no_fit ] &&
   field st.csv 3 reason | grep -q "^needs .* per GPU of 85.9 GB" &&
   [ "$(field st.csv 3 fits_in_memory)" = false ] &&
   [ -n "$(field st.csv 3 iteration_time_s)" ] &&
   [ "$(field st.csv 4 status)" = invalid ] &&
   [ "$(field st.csv 4 reason)" = "--tp: TP 5 does not divide 24 attention heads" ] &&
   [ "$(field st.csv 5 status)" = invalid ] &&
   [ "$(field st.csv 5 reason)" = "derive dp: division by zero" ] &&
   [ "$(field st.csv 5 iteration_time_s)" = "" ] &&
   grep -q "^weft sweep: 5 scenarios (5 run, 0 already in st.csv), 2 failed" out &&
   [ "$(cut -d, -f2 st.csv | tr '\n' ' ')" = "index 0 1 2 3 4 " ]
then ok; else ko "statuses of a sweep"; cat err; cat st.csv | cut -c1-160; fi

# Scenarios with the same values run once, with a warning.
printf '<study><set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8"/><cross><axis name="tp" values="1 2 1"/></cross></study>\n' >dup.xml
if "$weft" sweep dup.xml -o dup.csv -j 2 >out 2>err &&
   [ "$(cat err)" = "weft: warning: 1 scenarios repeat others (same values); each is simulated once" ] &&
   [ "$(cut -d, -f2 dup.csv | tr '\n' ' ')" = "index 0 1 " ]
then ok; else ko "repeated scenarios run once"; cat err dup.csv | cut -c1-100; fi

# The header is stable (a golden file, documented in the README).
if head -1 st.csv | sed 's/,nodes_used,cluster,global_batch,model,gpus,tp,pp,layers,dp,/,STUDY,/' |
   cmp -s - "$dir/golden/sweep-header.csv"
then ok; else ko "CSV header differs from golden/sweep-header.csv"; head -1 st.csv; fi

# Stragglers, iterations and goodput as a study's names (issue 41): each
# row's columns are weft run's for the same settings: iterations.* the
# spread of the times of gpu_seed 1, 2, 3 (and gpu_sigma 0 for even_s),
# held_by_rank the breakdown's, goodput.* the JSON's; refusals as rows.
cat >it.xml <<'EOF'
<study name="stragglers">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="16" tp="2" global_batch="16"/>
  <scenario gpu_sigma="2" iterations="3" train_days="54" storage_bw="2TBps" ckpt_mode="async"/>
  <scenario iterations="3"/>
  <scenario train_days="54" storage_bw="2TBps" fail_rates="nope"/>
  <scenario iterations="0" gpu_sigma="2"/>
</study>
EOF
R="run --model gpt-1.7b --cluster dgx-a100 --gpus 16 --tp 2 --global-batch 16 --json -q"
for s in 1 2 3; do "$weft" $R --gpu-sigma 2 --gpu-seed $s >"it$s.json" 2>/dev/null; done
"$weft" $R >"it0.json" 2>/dev/null
"$weft" $R --gpu-sigma 2 --breakdown >"itb.json" 2>/dev/null
"$weft" $R --gpu-sigma 2 --train-days 54 --storage-bw 2TBps --ckpt-mode async >"itg.json" 2>/dev/null
if "$weft" sweep it.xml -o it.csv -j 2 >out 2>err; [ $? -eq 0 ] &&
   python3 - it.csv >check 2>&1 <<'PY'
import csv, json, sys
r = list(csv.DictReader(open(sys.argv[1])))
t = sorted(json.load(open("it%d.json" % s))["iteration_time_s"] for s in (1, 2, 3))
g = lambda c: float(r[0][c])
bad = []
want = {"iterations.min_s": t[0], "iterations.median_s": t[1],
        "iterations.max_s": t[2], "iterations.p90_s": t[2],
        "iterations.mean_s": sum(t) / 3,
        "iterations.even_s": json.load(open("it0.json"))["iteration_time_s"]}
for k, v in want.items():
    if abs(g(k) - v) > 1e-8 * v:
        bad.append("%s %s != %r" % (k, r[0][k], v))
if r[0]["iterations.count"] != "3" or r[0]["iterations.first_seed"] != "1":
    bad.append("count/seed %s %s" % (r[0]["iterations.count"], r[0]["iterations.first_seed"]))
if abs(g("iterations.throughput_lost") - (1 - want["iterations.even_s"] / want["iterations.mean_s"])) > 1e-5:
    bad.append("throughput_lost %s" % r[0]["iterations.throughput_lost"])
cp = json.load(open("itb.json"))["breakdown"]["critical_path"]
if r[0]["held_by_rank"] != str(cp["held_by_rank"]) or abs(g("held_by_rank_s") - cp["held_by_rank_s"]) > 1e-8:
    bad.append("held %s %s != %r" % (r[0]["held_by_rank"], r[0]["held_by_rank_s"], cp))
if r[0]["iteration_time_s"] != "%.9g" % json.load(open("it1.json"))["iteration_time_s"]:
    bad.append("first iteration %s" % r[0]["iteration_time_s"])
gp = json.load(open("itg.json"))["goodput"]
for k in ("efficiency", "interval_s", "optimal_interval_s", "interruptions", "block_s"):
    if abs(g("goodput." + k) - gp[k]) > 1e-8 * abs(gp[k]):
        bad.append("goodput.%s %s != %r" % (k, r[0]["goodput." + k], gp[k]))
want_reasons = ["--iterations: the iterations differ only by the GPUs' drawn speeds: give --gpu-sigma too",
                "--fail-rates: unknown table 'nope' (llama3)",
                "--iterations: '0' is not a whole number from 1 to 1000"]
for row, why in zip(r[1:], want_reasons):
    if row["status"] != "invalid" or row["reason"] != why:
        bad.append("row %s: %s %r" % (row["index"], row["status"], row["reason"]))
if r[1]["held_by_rank"] != "" or r[1]["goodput.efficiency"] != "":
    bad.append("columns not asked for are filled: %r" % r[1])
if bad:
    print("\n".join(bad))
PY
   [ ! -s check ]
then ok; else ko "stragglers, iterations and goodput in a sweep"; cat err check; fi

# Resume: the same command again runs nothing and changes nothing; another
# study's file is refused.
cp st.csv st0.csv
if "$weft" sweep st.xml -o st.csv >out 2>&1 && cmp -s st.csv st0.csv &&
   grep -q "(0 run, 5 already in st.csv)" out
then ok; else ko "a finished sweep resumed runs nothing"; cat out; fi
expect 1 "weft: st.csv:1: its columns are not this study's (column 6 is 'nodes_used', expected 'model'); write to another file or remove it" sweep one.xml -o st.csv

# Kill mid-way (SIGKILL: no chance to clean up), resume, compare with an
# uninterrupted run: identical files, and no scenario run twice.
cat >kill.xml <<'EOF'
<study name="kill">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="64"/>
  <cross>
    <axis name="tp" values="1 2"/>
    <axis name="pp" values="1 2"/>
    <axis name="global_batch" values="256 512"/>
  </cross>
</study>
EOF
"$weft" sweep kill.xml -o full.csv -j 2 >/dev/null 2>&1
"$weft" sweep kill.xml -o part.csv -j 1 >/dev/null 2>&1 &
pid=$!
n=0
while [ "$(cat part.csv 2>/dev/null | wc -l)" -lt 3 ] && [ $n -lt 600 ]; do
  sleep 0.05; n=$((n + 1))
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
rows_before=$(($(wc -l <part.csv) - 1))
# A row cut by a crash mid-write is dropped on resume.
printf 'deadbeefdeadbeef,7,ok,,1,2' >>part.csv
"$weft" sweep kill.xml -o part.csv -j 2 >out 2>&1
if [ "$rows_before" -ge 2 ] && [ "$rows_before" -lt 8 ] && cmp -s full.csv part.csv &&
   grep -q "(.* run, $rows_before already in part.csv)" out
then ok; else ko "kill and resume (rows before: $rows_before)"; cat out; diff full.csv part.csv | head; fi

# Interrupt with SIGINT: a clean stop, exit 130, the same command resumes.
rm -f part.csv
"$weft" sweep kill.xml -o part.csv -j 1 >/dev/null 2>err &
pid=$!
n=0
while [ "$(cat part.csv 2>/dev/null | wc -l)" -lt 2 ] && [ $n -lt 600 ]; do
  sleep 0.05; n=$((n + 1))
done
kill -INT $pid
wait $pid
code=$?
"$weft" sweep kill.xml -o part.csv -j 2 >/dev/null 2>&1
if [ $code -eq 130 ] && grep -q "the same command resumes" err && cmp -s full.csv part.csv
then ok; else ko "SIGINT and resume (exit $code)"; cat err; fi

# Slurm: the script parses, its chunks cover every scenario exactly once,
# running them as the array would and merging gives the uninterrupted run.
if "$weft" sweep kill.xml --emit-slurm slurm --chunks 3 -j 2 >out 2>&1 &&
   bash -n slurm/sweep.sbatch && grep -q '^#SBATCH --array=1-3$' slurm/sweep.sbatch
then ok; else ko "--emit-slurm writes a script that bash -n accepts"; cat out; fi
"$weft" sweep kill.xml -n >all.txt
: >chunks.txt
for i in 1 2 3; do "$weft" sweep slurm/study.xml -n --chunk $i/3 >>chunks.txt; done
if [ "$(wc -l <all.txt)" -eq 8 ] && cmp -s all.txt chunks.txt
then ok; else ko "chunks cover every scenario once"; diff all.txt chunks.txt; fi
for i in 1 2 3; do SLURM_ARRAY_TASK_ID=$i bash slurm/sweep.sbatch >/dev/null 2>&1; done
if "$weft" sweep --merge -o merged.csv slurm/part-3.csv slurm/part-1.csv slurm/part-2.csv slurm/part-1.csv >out 2>&1 &&
   cmp -s merged.csv full.csv && grep -q "into merged.csv (8 scenarios)" out
then ok; else ko "merged chunks equal the whole sweep"; cat out; fi
expect 1 "weft: st.csv:1: its columns differ from full.csv's (column 6); these are not results of one study" sweep --merge -o m.csv full.csv st.csv
sed 's/^\([^,]*,0,ok,\)/\1changed/' full.csv >other.csv
key=$(sed -n 2p full.csv | cut -d, -f1)
expect 1 "weft: scenario $key (index 0) has two different rows; these files are not one study's" sweep --merge -o m.csv full.csv other.csv

# weft report: the tables (golden), every plot from a small committed
# results file (PNG and SVG, the same bytes twice), clear errors.
rep="$dir/report/strategies.csv"
if "$weft" report "$rep" >rep.txt 2>err && cmp -s rep.txt "$dir/golden/report-strategies.txt"
then ok; else ko "weft report tables (golden/report-strategies.txt)"; diff "$dir/golden/report-strategies.txt" rep.txt | head; cat err; fi
if "$weft" report "$rep" -o plots >out 2>err && "$weft" report "$rep" -o plots2 >/dev/null 2>&1; then
  good=1
  for p in throughput mfu tokens energy iteration speedup efficiency closed shares; do
    head -c 8 "plots/$p.png" | od -An -c | grep -q 'P   N   G' || good=0
    grep -q '<svg' "plots/$p.svg" || good=0
    [ -s "plots/$p.gp" ] || good=0
    cmp -s "plots/$p.svg" "plots2/$p.svg" || good=0
  done
  grep -q "^zero3-deepspeed2021 *$\|# series zero3-deepspeed2021" plots/report.dat || good=0
  # Issue 40: the legend's values under their column's name, the ends of
  # x inside the frame, room above the highest point; each series' first
  # point has speed-up 1 and efficiency 100 %, and E = 100 S G0/G.
  grep -qx "set key title 'strategy'" plots/energy.gp || good=0
  grep -qx "set xrange \[326.4:1593.6\]" plots/energy.gp || good=0
  grep -qx "set offsets 0, 0, graph 0.08, 0" plots/energy.gp || good=0
  python3 -c 'import sys
blocks = [b for b in open(sys.argv[1]).read().split("\n\n\n") if b.strip()]
for b in blocks:
    rows = [[float(v) for v in l.split()] for l in b.splitlines() if l and l[0] != "#"]
    assert rows[0][7] == 1 and rows[0][8] == 100, rows[0]
    for r in rows:
        assert abs(r[8] - 100 * r[7] * rows[0][0] / r[0]) < 1e-6 * r[8], r
        assert r[6] > 0
' plots/report.dat || good=0
  [ $good = 1 ] && ok || ko "weft report -o: every plot, PNG and SVG, deterministic"
else ko "weft report -o"; cat err; fi
printf 'a,b\n1,2\n' >notsweep.csv
expect 1 "weft: notsweep.csv:1: not a weft sweep results file (it does not start with key, index, status, reason)" report notsweep.csv
head -1 "$rep" | sed 's/,mfu,/,mfux,/' >nomfu.csv
expect 1 "weft: nomfu.csv:1: no column 'mfu' (results of another weft version?)" report nomfu.csv
head -1 "$rep" >empty.csv
expect 1 "weft: empty.csv: no scenarios" report empty.csv
expect 1 "weft: --x: 'layers' is not a column of the study in this file" report "$rep" --x layers
# --where keeps the scenarios its expression holds for.
if "$weft" report "$rep" --where "gpus == 768 && zero == 3" >w.txt 2>err &&
   head -1 w.txt | grep -q "^2 scenarios: 2 ok" &&
   [ "$(grep -c ' 24.31 ' w.txt)" = 2 ] && ! grep -q 'tp8-pp12' w.txt
then ok; else ko "weft report --where"; cat w.txt err | head; fi
expect 1 "weft: --where: 'layers' is not a column of the study in this file" report "$rep" --where "layers == 2"
expect 1 "weft: --where: no scenario is kept" report "$rep" --where "gpus > 5000"
expect 1 "weft: --where: the scenario of line 2: 'strategy' is 'zero3-deepspeed2021', not a number" report "$rep" --where "strategy == 1"
expect 1 "weft: --where: expected a number, a name or '(' at the end of 'gpus =='" report "$rep" --where "gpus =="
expect 2 "weft: report: no results file (the CSV of weft sweep)" report

echo "sweep: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
