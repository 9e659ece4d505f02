# Sweeps (issue 35, defects 3, 4 and 6): study values never become
# options, one sweep at a time per results file, rows of another or an
# edited study refused, failed rows retried, relative names from the
# study's directory, rows checked on resume and merge, honest counts.
cat >kill.xml <<'XML'
<study name="kill">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="64"/>
  <cross>
    <axis name="tp" values="1 2"/>
    <axis name="pp" values="1 2"/>
    <axis name="global_batch" values="256 512"/>
  </cross>
</study>
XML
"$weft" sweep kill.xml -o full.csv -j 2 >/dev/null 2>&1

# Defect 3: a value that looks like an option is a file name, not an
# option (before: it wrote x.json, status ok).  Every scenario invalid:
# exit 3 and a message.
printf '<study><set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8"/><cross><axis name="workload" values="--chrome=x.json"/></cross></study>\n' >inj.xml
"$weft" sweep inj.xml -o inj.csv >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 3 ] && [ ! -e x.json ] && grep -q '^[0-9a-f]*,0,invalid,./--chrome=x.json: cannot open' inj.csv &&
   [ "$(cat "$tmp/err")" = "weft: sweep: no scenario ran: all 1 are invalid (see the reason column of inj.csv)" ]
then ok; else ko "option injection through a workload value (exit $rc)"; cat "$tmp/err"; ls; fi

# Defect 4: a second sweep on a results file in use is refused, naming
# the process; so are two chunks at once on one file.
wait_rows() { # FILE N: until FILE has N lines (at most 30 s)
  n=0
  while [ "$(cat "$1" 2>/dev/null | wc -l)" -lt "$2" ] && [ $n -lt 600 ]; do
    sleep 0.05; n=$((n + 1))
  done
}
"$weft" sweep kill.xml -o busy.csv -j 1 >/dev/null 2>&1 &
pid=$!
wait_rows busy.csv 1
"$weft" sweep kill.xml -o busy.csv -j 1 >/dev/null 2>"$tmp/err"
rc=$?
"$weft" sweep kill.xml --chunk 2/2 -o busy.csv -j 1 >/dev/null 2>"$tmp/err2"
rc2=$?
wait $pid
if [ $rc -eq 1 ] && grep -q "^weft: busy.csv: in use by process $pid (.*weft sweep kill.xml -o busy.csv -j 1); wait for it to finish or write to another file$" "$tmp/err" &&
   [ $rc2 -eq 1 ] && grep -q "in use by process $pid" "$tmp/err2" && cmp -s busy.csv full.csv
then ok; else ko "a results file in use (exits $rc, $rc2)"; cat "$tmp/err" "$tmp/err2"; fi
"$weft" sweep --merge -o busy.csv full.csv >/dev/null 2>&1 &&
  "$weft" sweep kill.xml -o busy.csv -j 1 >/dev/null 2>&1 && cmp -s busy.csv full.csv && ok ||
  ko "the lock is released when the sweep ends"

# Defect 6: a study edited after a partial run is refused on resume.
"$weft" sweep kill.xml --chunk 1/2 -o part.csv >/dev/null 2>&1
sed 's/256 512/256 1024/' kill.xml >edited.xml
sed 's/256 512/256 1024/' kill.xml >part.xml
"$weft" sweep part.xml -o part.csv >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^weft: part.csv:2: a row of another study, or of this one before it or its files changed (study [0-9a-f]*/8; now [0-9a-f]*/8); write to another file or remove it$" "$tmp/err"
then ok; else ko "an edited study resumed (exit $rc)"; cat "$tmp/err"; fi
# ... and so is a change in a file the study names.
mkdir sub
cp "$dir/../../platforms/catalog.xml" sub/cat.xml
printf '<study><set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8" catalog="cat.xml"/><cross><axis name="tp" values="1 2"/></cross></study>\n' >sub/rel.xml
# Relative names start at the study's directory, whatever the current one.
"$weft" sweep sub/rel.xml --chunk 1/2 -o rel.csv >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(cut -d, -f3 rel.csv | tail -1)" = ok ]; then ok
else ko "a relative catalog from another directory (exit $rc)"; cat "$tmp/err"; cut -d, -f3,4 rel.csv; fi
echo '<!-- changed -->' >>sub/cat.xml
"$weft" sweep sub/rel.xml -o rel.csv >/dev/null 2>"$tmp/err"
if [ $? -eq 1 ] && grep -q "a row of another study, or of this one before it or its files changed" "$tmp/err"
then ok; else ko "a changed catalog resumed"; cat "$tmp/err"; fi

# Failed rows are retried with --retry, and counted honestly.
"$weft" sweep kill.xml -o t.csv --timeout 1ms >out 2>"$tmp/err"
rc=$?
if [ $rc -eq 3 ] && grep -q "8 failed (0 invalid, 8 error)" out &&
   grep -q "^weft: sweep: 8 scenarios ended in error (see the reason column of t.csv); --retry runs them again$" "$tmp/err"
then ok; else ko "timed-out scenarios: exit $rc"; cat out "$tmp/err"; fi
"$weft" sweep kill.xml -o t.csv >out 2>&1
if [ $? -eq 3 ] && grep -q "(0 run, 8 already in t.csv), 8 failed (0 invalid, 8 error)" out
then ok; else ko "a resumed sweep counts the failed rows already there"; cat out; fi
"$weft" sweep kill.xml -o t.csv --retry >out 2>&1
if [ $? -eq 0 ] && cmp -s t.csv full.csv && grep -q "(8 run, 0 already in t.csv), 0 failed" out
then ok; else ko "--retry"; cat out; fi

# A row cut mid-file by hand: an error naming its line, on resume and in
# a merge (before: counted done, copied, and report refused the file).
awk 'NR == 4 { print substr($0, 1, 40); next } { print }' full.csv >cut.csv
expect 1 "weft: cut.csv:4: 5 fields, but the header has 183 (a row cut or edited by hand?); remove the line or write to another file" sweep kill.xml -o cut.csv
expect 1 "weft: cut.csv:4: 5 fields, but the header has 183 (a row cut or edited by hand?)" sweep --merge -o m.csv full.csv cut.csv
# A row whose key is not its index's scenario.
awk -F, 'NR == 3 { sub(/^[0-9a-f]*/, "0123456789abcdef") } { print }' full.csv >badkey.csv
expect 1 "weft: badkey.csv:3: scenario '0123456789abcdef' is not scenario '1' of this study" sweep kill.xml -o badkey.csv

# Merge: another study's rows are refused; a missing chunk is named.
"$weft" sweep edited.xml -o other.csv >/dev/null 2>&1
"$weft" sweep --merge -o m.csv full.csv other.csv >/dev/null 2>"$tmp/err"
if [ $? -eq 1 ] && grep -q "^weft: other.csv:2: a row of study [0-9a-f]*/8, the others are of study [0-9a-f]*/8; these files are not one study's$" "$tmp/err"
then ok; else ko "--merge of two studies"; cat "$tmp/err"; fi
for i in 1 3; do "$weft" sweep kill.xml --chunk $i/4 -o c$i.csv >/dev/null 2>&1; done
"$weft" sweep --merge -o m.csv c1.csv c3.csv >/dev/null 2>"$tmp/err"
if [ $? -eq 0 ] && [ "$(cat "$tmp/err")" = "weft: warning: m.csv: 4 of the study's 8 scenarios; missing: 2-3, 6-7 (a chunk not run or not given?)" ]
then ok; else ko "--merge names a missing chunk"; cat "$tmp/err"; fi

# --emit-slurm takes neither -o nor --chunk (it ignored both).
expect 2 "weft: sweep: --emit-slurm writes a job array whose tasks choose their own chunk and file; leave out -o" sweep kill.xml --emit-slurm sl -o x.csv
expect 2 "weft: sweep: --emit-slurm writes a job array whose tasks choose their own chunk and file; leave out --chunk" sweep kill.xml --emit-slurm sl --chunk 1/2

# Repeated scenarios are counted alike on a first run and on resume.
printf '<study><set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8"/><cross><axis name="tp" values="1 2 1"/></cross></study>\n' >dup.xml
"$weft" sweep dup.xml -o dup.csv >out1 2>/dev/null
"$weft" sweep dup.xml -o dup.csv >out2 2>/dev/null
if grep -q "^weft sweep: 2 scenarios (2 run, 0 already" out1 && grep -q "^weft sweep: 2 scenarios (0 run, 2 already" out2
then ok; else ko "repeated scenarios counted alike"; cat out1 out2; fi
