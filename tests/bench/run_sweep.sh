#!/bin/sh
# run_sweep.sh [BUILD_DIR] [RUNS] - the cost of weft sweep beyond the
# simulations (issue 13's target: under 20 ms per scenario) and its memory
# (under 2 GiB).  A study of 48 small scenarios (GPT 1.7B on 8-64 A100, tens
# of milliseconds each) is run RUNS times by `weft sweep -j 1` and by a
# shell loop of the same `weft run --json` command lines (from
# `weft sweep -n`); the difference of the medians per scenario is the
# sweep's overhead (negative: the fork without exec is cheaper than a
# program start).  Also prints the sweep's own CPU per scenario and the
# peak RSS of the sweep with its children (GNU time's %M).
build=${1:-build}
runs=${2:-5}
weft="$build/weft"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/study.xml" <<'XML'
<study name="bench">
  <set model="gpt-1.7b" cluster="dgx-a100" layers="8"/>
  <cross>
    <axis name="gpus" values="8 16 32 64"/>
    <axis name="tp" values="1 2 4 8"/>
    <axis name="global_batch" values="64 128 256"/>
  </cross>
</study>
XML
"$weft" sweep "$tmp/study.xml" -n | sed 's/^[0-9]* [0-9a-f]* weft run/"$weft" run/; s/$/ >\/dev\/null 2>\&1/' >"$tmp/loop.sh"
n=$(wc -l <"$tmp/loop.sh")
now() { date +%s.%N; }
: >"$tmp/sweep.t"; : >"$tmp/loop.t"
for i in $(seq "$runs"); do
  rm -f "$tmp/r.csv"
  t0=$(now)
  /usr/bin/time -f "%M" -o "$tmp/rss" "$weft" sweep "$tmp/study.xml" -o "$tmp/r.csv" -j 1 >"$tmp/out"
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$tmp/sweep.t"
  cat "$tmp/rss" >>"$tmp/rss.all"
  t0=$(now)
  weft="$weft" sh "$tmp/loop.sh"
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >>"$tmp/loop.t"
done
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ms=$(med "$tmp/sweep.t"); ml=$(med "$tmp/loop.t"); rss=$(med "$tmp/rss.all")
printf 'scenarios %d, runs %d (medians)\n' "$n" "$runs"
printf 'weft sweep -j 1     %8.3f s\n' "$ms"
printf 'loop of weft run    %8.3f s\n' "$ml"
printf 'overhead            %8.2f ms per scenario\n' "$(awk -v a="$ms" -v b="$ml" -v n="$n" 'BEGIN { print (a - b) * 1000 / n }')"
printf 'sweep peak RSS      %8.0f MB\n' "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')"
sed -n 's/.*; \(.*\) of the sweep.s own CPU per scenario run/own CPU            \1/p' "$tmp/out"
