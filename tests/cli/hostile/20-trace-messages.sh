# 20-trace-messages.sh - issue 35: traces that keep no event, and messages
# that named the wrong problem (short options with attached values, study
# times, torus sizes, one-GPU collectives, catalog overrides, plan's cut
# first choice, directories given as files).  Sourced by test_hostile.sh,
# which sets weft, dir and tmp; argument lists in variables are split on
# purpose.
# shellcheck disable=SC2086,SC2154

# json_ok FILE WHAT: FILE (gzipped if it ends in .gz) parses as JSON.
json_ok() {
  if python3 -c 'import gzip, json, sys
f = sys.argv[1]
json.load(gzip.open(f, "rt") if f.endswith(".gz") else open(f))' "$1" 2>"$tmp/err"
  then ok
  else ko "$2: $1 is not valid JSON"; tail -2 "$tmp/err"
  fi
}

# Chrome traces with no event: a window past the end of the iteration, and
# one GPU traced at level comm (no collective); plain and gzipped.
one="--model gpt-1.7b --gpus 1 --gpus-per-node 1 --tp 1 --pp 1 --schedule 1f1b --global-batch 8"
for f in w.json w.json.gz; do
  expect 0 "" run --model gpt-1.7b --cluster dgx-h100 --gpus 8 --global-batch 8 \
    --trace-window 1000s:1001s --chrome $f --paje w.paje -q
  json_ok $f "--trace-window past the end"
done
for f in c.json c.json.gz; do
  expect 0 "" run $one --trace-level comm --chrome $f --paje c.paje -q
  json_ok $f "--trace-level comm on one GPU"
done
# The Paje traces of no event: definitions, one container created and
# destroyed at time 0 per kept rank, nothing else.
if [ "$(grep -c '^2 0 gpu' w.paje)" -eq 8 ] && [ "$(grep -c '^3 0.000000000 GPU gpu' w.paje)" -eq 8 ] &&
   ! grep -q '^[46] ' w.paje && [ "$(grep -c '^[23] ' c.paje)" -eq 2 ] && ! grep -q '^[46] ' c.paje
then ok; else ko "Paje trace of no event"; tail -3 w.paje c.paje; fi

# A short option's value attached (-j1, -oFILE), as getopt takes it; flags
# given together are refused by name; other words stay positional.
small="--model gpt-1.7b --cluster dgx-h100 --gpus 8 --global-batch 8"
expect 0 "" plan $small -j1 --top 1 -q
expect 2 "weft: --jobs: '0' is below the minimum of 1" plan $small -j0
expect 1 "weft: --jobs: 'x' is not an integer" sweep -jx -n nonexistent.xml
expect 2 "weft: -n: takes no value (in '-nq'; give flags one at a time)" sweep -nq study.xml
expect 1 "weft: nonexistent.xml: cannot open: No such file or directory" sweep -j1 -n nonexistent.xml
if "$weft" platform dgx-h100 -oplat.xml 2>/dev/null && [ -s plat.xml ]; then ok
else ko "platform -oplat.xml"; fi

# A study range with times="1" never grows: say so, not "below the minimum
# of 1".
printf '<study name="t">\n<set model="gpt-1.7b" global_batch="8"/>\n<cross>\n<axis name="gpus" from="8" to="64" times="%s"/>\n</cross>\n</study>\n' 1 >times1.xml
expect 1 "weft: times1.xml:4: <axis>: attribute 'times': 1 is not above 1 (each value is the one before times it, up to 'to')" sweep -n times1.xml

# A torus dimension too large is too large, not "not whole numbers".
expect 1 "weft: --torus: '2147483647x2': a dimension of 2147483647 nodes exceeds the limit of 65536" platform dgx-h100 --topology torus --torus 2147483647x2
expect 1 "weft: --torus: '2x99999999999999999999x2': a dimension of 99999999999999999999 nodes exceeds the limit of 65536" run --model gpt-1.7b --topology torus --torus 2x99999999999999999999x2
expect 1 "weft: --torus: '1x2' is not AxB or AxBxC (whole numbers of nodes, at least 2)" platform dgx-h100 --topology torus --torus 1x2

# A collective on one GPU moves nothing: "-" for its bandwidths in the table
# and null in JSON, never inf or nan.
"$weft" coll allreduce --gpus 1 --gpus-per-node 1 --max-bytes 2MiB >coll1.txt 2>&1
if [ "$(grep -c '^ *[0-9]* *0.00 *- *-$' coll1.txt)" -eq 2 ] && ! grep -qi 'inf\|nan' coll1.txt
then ok; else ko "coll on one GPU: table"; cat coll1.txt; fi
"$weft" coll allreduce --gpus 1 --gpus-per-node 1 --json >coll1.json
if python3 -c 'import json, sys
d = json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit("bare " + c))
assert d["gpus"] == 1 and d["results"]
assert all(r["time_s"] == 0 and r["algbw_GBps"] is None and r["busbw_GBps"] is None for r in d["results"])' coll1.json
then ok; else ko "coll on one GPU: JSON"; cat coll1.json; fi

# A --catalog entry with a built-in's name replaces it, with a warning that
# names the file, the line and the entry (-q silences it); a new name or a
# second user file's entry of the same name says nothing.
gpu='fp32="67Tf" tf32="495Tf" bf16="2000Tf" fp16="990Tf" fp8="1979Tf" hbm="80GB" hbm_bw="3350GBps" nvlink_bw="450GBps" idle_power="70W" max_power="700W"'
printf '<catalog>\n<!-- a faster H100 -->\n<gpu name="h100-sxm" %s/>\n<gpu name="Z100" %s/>\n</catalog>\n' "$gpu" "$gpu" >over.xml
printf '<catalog>\n<gpu name="Z100" %s/>\n</catalog>\n' "$gpu" >new.xml
expect 0 "weft: warning: over.xml:3: <gpu> 'h100-sxm' replaces the built-in entry of that name" list gpus --catalog over.xml
expect 0 "" list gpus --catalog over.xml -q
expect 0 "" list gpus --catalog new.xml --catalog new.xml
expect 0 "weft: warning: over.xml:3: <gpu> 'h100-sxm' replaces the built-in entry of that name" list nodes --catalog new.xml --catalog over.xml

# A directory where a file is read: "PATH: is a directory", for every file
# argument and option of run, graph, platform, plan, sweep and list.
mkdir -p dir
for args in "run dir" "graph dir" "plan dir" "sweep -n dir" "run --catalog dir" \
            "list gpus --catalog dir" "run --cluster dir" "platform dir" \
            "coll allreduce --cluster dir" \
            "run --model gpt-1.7b --cluster dgx-h100 --gpus 8 --global-batch 8 --kernel-table dir"; do
  expect 1 "weft: dir: is a directory" $args
done
expect 1 "weft: dir/: is a directory" run --cluster dir/
