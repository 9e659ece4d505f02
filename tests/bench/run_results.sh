#!/bin/sh
# run_results.sh [BUILD_DIR] [ROWS] [RUNS] - memory and time of reading a
# large results file (issue 35 defect 8: a 39 MB file took 2.2 GB).  Makes
# a study of ROWS scenarios (default 40000; one <var> axis), simulates one
# of them, replicates its row under every scenario's key and index (a
# results file of about 810 bytes a row), then times with GNU time the
# resume of the finished file (`weft sweep`: every row checked, the file
# rewritten), `weft sweep --merge` of its two halves, and `weft report`.
# Prints the medians over RUNS (default 3) of wall seconds and peak RSS.
build=${1:-build}
rows=${2:-40000}
runs=${3:-3}
weft="$build/weft"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/big.xml" <<XML
<study name="results-bench">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8"/>
  <var name="v"/>
  <cross><axis name="v" from="1" to="$rows" step="1"/></cross>
</study>
XML
"$weft" sweep "$tmp/big.xml" -n >"$tmp/keys" || exit 1
"$weft" sweep "$tmp/big.xml" --chunk "1/$rows" -o "$tmp/one.csv" >/dev/null 2>&1
python3 - "$tmp" <<'PY'
import csv, sys
d = sys.argv[1]
r = list(csv.reader(open(d + '/one.csv')))
hdr, row = r[0], r[1]
vi = hdr.index('v')
with open(d + '/full.csv', 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(hdr)
    for line in open(d + '/keys'):
        i, k = line.split()[:2]
        row[0], row[1], row[vi] = k, i, str(int(i) + 1)
        w.writerow(row)
PY
half=$(( $(wc -l <"$tmp/full.csv") / 2 ))
head -n "$half" "$tmp/full.csv" >"$tmp/a.csv"
{ head -1 "$tmp/full.csv"; tail -n +"$((half + 1))" "$tmp/full.csv"; } >"$tmp/b.csv"
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
measure() { # LABEL COMMAND...
  label=$1; shift
  : >"$tmp/t"
  for i in $(seq "$runs"); do
    cp "$tmp/full.csv" "$tmp/r.csv"
    /usr/bin/time -f "%e %M" -o "$tmp/t1" "$@" >/dev/null 2>&1
    cat "$tmp/t1" >>"$tmp/t"
  done
  printf '%-28s %8.2f s %10d KB\n' "$label" "$(cut -d' ' -f1 "$tmp/t" | median)" \
    "$(cut -d' ' -f2 "$tmp/t" | median)"
}
echo "results file: $(wc -c <"$tmp/full.csv") bytes, $rows scenarios; medians of $runs"
measure "resume (sweep -o)" "$weft" sweep "$tmp/big.xml" -o "$tmp/r.csv"
cmp -s "$tmp/r.csv" "$tmp/full.csv" || echo "(the resumed file changed!)"
measure "sweep --merge of 2 halves" "$weft" sweep --merge -o "$tmp/m.csv" "$tmp/a.csv" "$tmp/b.csv"
measure "report" "$weft" report "$tmp/r.csv"
