#!/bin/sh
# fern_scan.sh [BUILD_DIR] - weft's all-reduce on 4-512 DGX H100 nodes
# (auto) against Fernandez et al.'s nccl-tests scan as read off its plot
# (analysis/repro-fernandez/out/allreduce-paper.dat, +-10 GB/s; held back
# from every calibration: issue 37).  Prints nodes, bytes, measured and
# predicted bus bandwidth (GB/s) and the error, then one line per size
# band: small (2-16 MiB), mid (32-512 MiB), large (1 GiB and up).
build=${1:-build}
dir=$(dirname "$0")
paper="$dir/../../analysis/repro-fernandez/out/allreduce-paper.dat"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%5s %12s %8s %9s %7s\n' nodes bytes measured predicted error
for n in 4 8 16 32 64 128 256 512; do
  "$build/weft" coll all_reduce --cluster dgx-h100 --nodes $n -b 2MiB \
    -e 16GiB -q >"$tmp" || exit 1
  # Block k (blank-line separated, after the header) is node count k.
  awk -v n=$n -v sim="$tmp" '
    BEGIN { while ((getline l < sim) > 0) if (l !~ /^#/) { split(l, f, " "); w[f[1]] = f[4] }
            split("4 8 16 32 64 128 256 512", ns, " "); for (i in ns) idx[ns[i]] = i }
    /^#/ { next }
    NF == 0 { if (seen) { blk++; seen = 0 } next }
    { seen = 1 }
    blk + 1 == idx[n] && ($1 in w) {
      printf "%5d %12.0f %8.0f %9.1f %+6.1f%%\n", n, $1, $2, w[$1], (w[$1] - $2) / $2 * 100 }' "$paper"
done >"$tmp.rows"
cat "$tmp.rows"
awk '{ e = $5; sub("%", "", e); e += 0; if (e < 0) e = -e
       b = $2 <= 16777216 ? "small" : $2 <= 536870912 ? "mid" : "large"
       n[b]++; s[b] += e; if (e > m[b]) m[b] = e }
     END { split("small mid large", o, " ")
           for (i = 1; i <= 3; i++)
             printf "%s: %d points, mean |error| %.2f %%, worst %.2f %%\n", o[i], n[o[i]], s[o[i]] / n[o[i]], m[o[i]] }' "$tmp.rows"
rm -f "$tmp.rows"
