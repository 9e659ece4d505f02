#!/bin/sh
# run.sh FUZZ_BUILD_DIR [SECONDS] - run every libFuzzer target for SECONDS
# (default 30) on its seeds: the files in tests/fuzz/seeds/<target>/ and
# the project's own inputs (the catalog, the cluster presets, a task graph,
# the studies of analysis/studies).
# New inputs found go to a scratch corpus that is thrown away.  Prints
# "fuzz: N passed, N failed"; a crash, a sanitizer report, a leak or a
# timeout fails the target and its reproducer is kept in FUZZ_BUILD_DIR.
build=$1
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for t in units catalog cluster workload flags graph table study expr csv \
    jsonflat hfconfig; do
  mkdir -p "$tmp/$t"
  [ -d "$here/seeds/$t" ] && cp "$here/seeds/$t"/* "$tmp/$t/" 2>/dev/null
  case $t in
    catalog) cp "$root/platforms/catalog.xml" "$tmp/$t/" ;;
    cluster) cp "$root/platforms/clusters.xml" "$tmp/$t/" ;;
    graph) cp "$root/tests/cli/golden/graph-small.txt" "$tmp/$t/" ;;
    hfconfig) cp "$root"/tests/fixtures/hf/*.json "$tmp/$t/" ;;
    study) for f in "$root"/analysis/studies/*/study.xml; do
             cp "$f" "$tmp/$t/$(basename "$(dirname "$f")").xml"
           done ;;
  esac
  if (cd "$build" && "./tests/fuzz/fuzz_$t" -max_total_time="$secs" \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=0 \
        -artifact_prefix="$build/fuzz_$t-" "$tmp/$t") >"$tmp/$t.log" 2>&1; then
    pass=$((pass + 1))
    echo "fuzz_$t: $(grep -c . "$tmp/$t.log") log lines, $(ls "$tmp/$t" | wc -l) inputs"
  else
    fail=$((fail + 1))
    echo "FAIL: fuzz_$t"
    tail -40 "$tmp/$t.log"
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
