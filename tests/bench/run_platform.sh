#!/bin/sh
# run_platform.sh [BUILD_DIR] [RUNS] - generate and load cluster platforms of
# growing size; print the median over RUNS runs of generation time, load time
# and peak memory.  Target (issue 2): 16384 H100 GPUs in under 5 s and 500 MB.
build=${1:-build}
runs=${2:-5}
printf '%-12s %6s %10s %8s %8s %9s\n' preset gpus xml_MB gen_s load_s rss_MB
for spec in dgx-h100:64 dgx-h100:1024 dgx-h100:4096 dgx-h100:16384 gb200-nvl72:16416; do
  preset=${spec%%:*}; gpus=${spec##*:}
  for i in $(seq "$runs"); do "$build/tests/bench_platform" "$preset" "$gpus"; done |
    awk -v p="$preset" -v g="$gpus" '
      { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1], NR] = kv[2] } n = NR }
      function med(k,   a, i, m) { for (i = 1; i <= n; i++) a[i] = v[k, i]; m = asort(a); return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
      END { printf "%-12s %6d %10.1f %8.3f %8.3f %9.1f\n", p, g, med("xml_bytes") / 1e6, med("gen_s"), med("load_s"), med("peak_rss_mb") }'
done
