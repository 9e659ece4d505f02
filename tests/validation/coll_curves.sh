#!/bin/sh
# coll_curves.sh [BUILD_DIR] - simulate the ring all-reduce, all-gather and
# reduce-scatter of 8 H100 over the sizes of the measured curves in
# nccl_h100_8gpu_ring.csv (nccl-tests, NCCL 2.26) and print predicted vs
# measured time and the error of the bus bandwidth.  Calibration points
# (analysis/calibrate_coll.py) are marked "cal"; every other point is held
# back.  Sizes below 64 KiB are left out (a flat 35 us latency floor).
build=${1:-build}
dir=$(dirname "$0")
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-13s %11s %10s %10s %7s %s\n' op bytes predicted measured error note
for op in allreduce allgather reducescatter; do
  "$build/weft" coll "$op" --cluster dgx-h100 --gpus 8 --collective ring \
    --min-bytes 64KiB --max-bytes 8GiB >"$tmp" || exit 1
  grep -v '^#' "$dir/nccl_h100_8gpu_ring.csv" | awk -F, -v op="$op" -v sim="$tmp" '
    BEGIN { while ((getline l < sim) > 0) if (l !~ /^#/) { split(l, f, " "); t[f[1]] = f[2] } }
    $1 == op && $2 >= 65536 && ($2 in t) {
      cal = (op == "allreduce" && ($2 == 8 || $2 == 33554432 || $2 == 134217728 || $2 == 2147483648)) ? "cal" : ""
      # bus bandwidth error = measured time / predicted time - 1
      printf "%-13s %11.0f %10.2f %10.2f %+6.1f%% %s\n", op, $2, t[$2], $3, ($3 / t[$2] - 1) * 100, cal
    }'
done
