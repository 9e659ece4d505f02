#!/bin/sh
# run_graph.sh [BUILD_DIR] [RUNS] - build task graphs of growing jobs; print
# the median over RUNS runs of build time and peak memory.
build=${1:-build}
runs=${2:-5}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
median() {
  sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$tmp" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '%-44s %9s %8s %8s\n' job tasks build_s rss_MB
while read -r name args; do
  : >"$tmp"
  for i in $(seq "$runs"); do "$build/tests/bench_graph" $args >>"$tmp"; done
  printf '%-44s %9s %8s %8s\n' "$name" "$(median tasks)" "$(median build_s)" "$(median peak_rss_mb)"
done <<'JOBS'
gpt3-175b/1024(tp8,pp8,dp16,gb1536) gpt3-175b 1024 8 8 1536
gpt3-175b/1024(interleaved:2,full) gpt3-175b 1024 8 8 1536 interleaved:2 full
llama3-405b/16384(tp8,pp16,dp128,gb2048) llama3-405b 16384 8 16 2048
gpt-1008b/3072(tp8,pp64,interleaved:2,full) gpt-1008b 3072 8 64 3072 interleaved:2 full
JOBS
