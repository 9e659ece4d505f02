#!/bin/sh
# run_platform.sh [BUILD_DIR] [RUNS] - platforms of growing size, medians
# over RUNS runs (default 3).
#   1. The in-memory platform weft builds (sim/platload.c): fabric, zone,
#      links and hosts, sealed; build time (wall and CPU) and peak memory.  Target (issue
#      2): 16384 H100 GPUs in under 5 s and 500 MB.
#   2. platgen's XML of the same fat tree, written and loaded by SimGrid
#      (what `weft platform` writes), for comparison.
#   3. Issue 41's job: Llama 3 405B (TP 8, PP 16, 16 micro-batches per
#      pipeline) on 16384 to 131072 H100, the whole process (`weft run
#      --json`, platform, graph, replay and exit) and its peak memory;
#      sim_s is the JSON's sim_wall_s (up to the results, exit excluded).
#      Target: 131072 GPUs in at most 10 s and 2 GiB.
# JOBS=0 leaves part 3 out; MAX_GPUS bounds its sizes; JOB_ARGS adds
# settings to its runs (LEAF_FIT set: leaf groups of one stage's nodes,
# GPUs / 128, a what-if fabric where stage replica symmetry applies).
build=${1:-build}
runs=${2:-3}
case $runs in '' | *[!0-9]* | 0) echo "run_platform.sh: RUNS must be a positive integer" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
median() { # FIELD: median of FIELD=value over the lines of $tmp/out
  sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$tmp/out" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf '%-12s %7s %8s %8s %8s\n' preset gpus build_s cpu_s rss_MB
for spec in dgx-h100:16384 dgx-h100:32768 dgx-h100:65536 dgx-h100:131072 gb200-nvl72:16416; do
  preset=${spec%%:*}; gpus=${spec##*:}
  : >"$tmp/out"
  for i in $(seq "$runs"); do "$build/tests/bench_platform" "$preset" "$gpus" memory >>"$tmp/out"; done
  printf '%-12s %7d %8s %8s %8s\n' "$preset" "$gpus" "$(median build_s)" \
    "$(median cpu_s)" "$(median peak_rss_mb)"
done
echo
printf '%-12s %7s %8s %8s %8s %8s\n' 'preset(xml)' gpus xml_MB gen_s load_s rss_MB
for spec in dgx-h100:1024 dgx-h100:16384; do
  preset=${spec%%:*}; gpus=${spec##*:}
  : >"$tmp/out"
  for i in $(seq "$runs"); do "$build/tests/bench_platform" "$preset" "$gpus" xml >>"$tmp/out"; done
  printf '%-12s %7d %8.1f %8s %8s %8s\n' "$preset" "$gpus" \
    "$(median xml_bytes | awk '{ print $1 / 1e6 }')" "$(median gen_s)" \
    "$(median load_s)" "$(median peak_rss_mb)"
done
[ "${JOBS:-1}" = 0 ] && exit 0
echo
printf '%-12s %7s %8s %8s %8s %8s\n' job gpus wall_s cpu_s sim_s rss_MB
for gpus in 16384 32768 65536 131072; do
  [ "$gpus" -gt "${MAX_GPUS:-131072}" ] && break
  : >"$tmp/out"
  for i in $(seq "$runs"); do
    /usr/bin/time -f "wall_s=%e user_s=%U sys_s=%S rss_kb=%M" -o "$tmp/time" "$build/weft" run --json \
      --model llama3-405b --cluster dgx-h100 --gpus "$gpus" --tp 8 --pp 16 \
      --global-batch $((gpus / 8)) $JOB_ARGS \
      ${LEAF_FIT:+--nodes-per-leaf $((gpus / 128))} >"$tmp/json" 2>/dev/null ||
      { echo "llama3-405b $gpus failed"; continue 2; }
    sim=$(sed -n 's/.*"sim_wall_s": \([0-9.]*\).*/\1/p' "$tmp/json")
    t=$(tail -1 "$tmp/time")
    cpu=$(echo "$t" | sed -n 's/.*user_s=\([0-9.]*\) sys_s=\([0-9.]*\).*/\1 \2/p' |
      awk '{ printf "%.2f", $1 + $2 }')
    echo "$t cpu_s=$cpu sim_s=$sim" >>"$tmp/out"
  done
  printf '%-12s %7d %8s %8s %8s %8.0f\n' llama3-405b "$gpus" "$(median wall_s)" \
    "$(median cpu_s)" "$(median sim_s)" "$(median rss_kb | awk '{ print $1 / 1024 }')"
done
