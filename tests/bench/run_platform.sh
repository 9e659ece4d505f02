#!/bin/sh
# run_platform.sh [BUILD_DIR] [RUNS] - generate and load cluster platforms of
# growing size; print the median over RUNS runs of generation time, load time
# and peak memory.  Target (issue 2): 16384 H100 GPUs in under 5 s and 500 MB.
build=${1:-build}
runs=${2:-5}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
median() { # FIELD: median of FIELD=value over the lines of $tmp
  sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$tmp" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '%-12s %6s %8s %8s %8s %8s\n' preset gpus xml_MB gen_s load_s rss_MB
for spec in dgx-h100:64 dgx-h100:1024 dgx-h100:4096 dgx-h100:16384 gb200-nvl72:16416; do
  preset=${spec%%:*}; gpus=${spec##*:}
  : >"$tmp"
  for i in $(seq "$runs"); do "$build/tests/bench_platform" "$preset" "$gpus" >>"$tmp"; done
  printf '%-12s %6d %8.1f %8s %8s %8s\n' "$preset" "$gpus" \
    "$(median xml_bytes | awk '{ print $1 / 1e6 }')" "$(median gen_s)" \
    "$(median load_s)" "$(median peak_rss_mb)"
done
