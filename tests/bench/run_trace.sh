#!/bin/sh
# run_trace.sh [BUILD_DIR] [RUNS] - the cost of tracing (issue 12: a traced
# run at most 2x the untraced one): wall time of the demo job (weft run, no
# arguments) untraced, with --paje and --chrome, and with both gzipped,
# medians over RUNS runs, each overwriting the previous run's files as a
# user's repeated runs do.  Prints the traces' sizes and the ratio.
build=${1:-build}
runs=${2:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
time_runs() { # LABEL ARGS...
  label=$1; shift
  : >"$dir/t"
  for i in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" "$build/weft" run "$@" 2>>"$dir/t" >/dev/null
  done
  wall=$(awk '{ print $1 }' "$dir/t" | median)
  rss=$(awk '{ print $2 }' "$dir/t" | median)
  printf '%-22s %8s %8.0f\n' "$label" "$wall" "$((rss / 1024))"
  eval "wall_$label=$wall"
}
printf '%-22s %8s %8s\n' run wall_s rss_MB
time_runs untraced
time_runs traced --paje "$dir/a.paje" --chrome "$dir/a.json"
time_runs gzipped --paje "$dir/a.paje.gz" --chrome "$dir/a.json.gz"
mb=$(du -cm "$dir/a.paje" "$dir/a.json" | tail -1 | cut -f1)
gz=$(du -cm "$dir/a.paje.gz" "$dir/a.json.gz" | tail -1 | cut -f1)
echo "traces: $mb MB plain, $gz MB gzipped"
awk -v u="$wall_untraced" -v t="$wall_traced" -v g="$wall_gzipped" -v mb="$mb" 'BEGIN {
  printf "traced / untraced: %.2fx; gzipped / untraced: %.2fx; %.0f MB/s of trace beyond the simulation\n",
    t / u, g / u, (t > u ? mb / (t - u) : 0) }'
