#!/bin/sh
# coll_rows.sh [BUILD_DIR] - simulate the ring collectives of the COLL rows
# of shared/validation/calibration.csv held back from calibration (large
# messages: 64 MiB and above; the message size of the row, or 8 GiB for
# "peak" and vendor figures that print none; GTC24 "multi-node" rows taken
# as 4 nodes), ring first, then NVLS and tree, then NVLSTree (the GTC24
# plot's 32 and 8192 H100; two-node "NVLS" rows, taken as NVLSTree: NCCL
# disables NVLS across nodes without IB SHARP, tuning.cc) and NCCL's own choice (auto: Fernandez et
# al.'s scan, H100 nodes assumed; the vendor's IB SHARP row, which weft
# does not model: NCCL's CollNet), and print predicted vs measured bus
# bandwidth.  The rows calibrated on are named in
# analysis/calibrate_coll.py and are not listed here.
build=${1:-build}
printf '%-28s %-9s %4s %-13s %-5s %6s %9s %9s %7s\n' row cluster gpus op algo size predicted measured error
while read -r row cluster gpus op size meas algo; do
  algo=${algo:-ring}
  out=$("$build/weft" coll "$op" --cluster "$cluster" --gpus "$gpus" \
    --min-bytes "$size" --max-bytes "$size" --collective "$algo" --json) || exit 1
  bus=$(echo "$out" | sed 's/.*"busbw_GBps": \([0-9.e+-]*\).*/\1/')
  printf '%-28s %-9s %4s %-13s %-5s %6s %9.1f %9s %+6.1f%%\n' "$row" "$cluster" "$gpus" "$op" "$algo" "$size" "$bus" "$meas" \
    "$(echo "$bus $meas" | awk '{ print ($1 - $2) / $2 * 100 }')"
done <<'ROWS'
COLL-SB-A100-AR-64MiB dgx-a100 8 allreduce 64MiB 171.54
COLL-GTC25-AR-A100 dgx-a100 8 allreduce 8GiB 232
COLL-GTC24-AR-DGXA100-MN dgx-a100 32 allreduce 8GiB 192
COLL-TOG-H100RAW-AR-1GiB dgx-h100 8 allreduce 1GiB 360.07
COLL-TOG-H100RAW-AR-8GiB dgx-h100 8 allreduce 8GiB 368.09
COLL-TOG-H100-1N-RING dgx-h100 8 allreduce 8GiB 368.55
COLL-GTC25-AR-H100 dgx-h100 8 allreduce 8GiB 370
COLL-TOG-H100RAW-AG-64MiB dgx-h100 8 allgather 64MiB 278.45
COLL-TOG-H100RAW-AG-8GiB dgx-h100 8 allgather 8GiB 357.9
COLL-TOG-H100-2N-RING dgx-h100 16 allreduce 8GiB 368.24
COLL-GTC24-AR-DGXH100-MN dgx-h100 32 allreduce 8GiB 380
COLL-SB-H200-AR-RING-16GiB dgx-h200 8 allreduce 16GiB 367.61
COLL-GTC25-AR-B200 dgx-b200 8 allreduce 8GiB 700
COLL-TOG-B200-1N-AG-RING dgx-b200 8 allgather 8GiB 660.48
COLL-TOG-B200-1N-RS-RING dgx-b200 8 reducescatter 8GiB 684.93
COLL-UA-B200-AR-RING-1N dgx-b200 8 allreduce 16GiB 679.0
COLL-UA-B200-AR-RING-4N dgx-b200 32 allreduce 16GiB 334.8
COLL-UA-B200-AR-RING-8N dgx-b200 64 allreduce 16GiB 322.6
COLL-UA-B200-AR-RING-16N dgx-b200 128 allreduce 16GiB 306.3
COLL-UA-B200-AR-RING-32N dgx-b200 256 allreduce 16GiB 304.4
COLL-UA-B200-AG-RING-1N dgx-b200 8 allgather 16GiB 673.6
COLL-UA-B200-AG-RING-2N dgx-b200 16 allgather 16GiB 342.9
COLL-UA-B200-AG-RING-8N dgx-b200 64 allgather 16GiB 311.5
COLL-UA-B200-AG-RING-46N dgx-b200 368 allgather 16GiB 293.3
COLL-SB-H200-AR-NVLS-1MiB dgx-h200 8 allreduce 1MiB 39.93 auto
COLL-SB-P6B200-1N-16GiB dgx-b200 8 allreduce 16GiB 845.67 auto
COLL-SB-H200-AR-NVLS-16GiB dgx-h200 8 allreduce 16GiB 482.26 nvls
COLL-GTC25-AR-H100-SHARP dgx-h100 8 allreduce 8GiB 480 nvls
COLL-UA-B200-AR-NVLS-1N dgx-b200 8 allreduce 16GiB 840.8 nvls
COLL-GTC25-AR-B200-SHARP dgx-b200 8 allreduce 8GiB 850 nvls
COLL-UA-B200-AR-TREE-46N dgx-b200 368 allreduce 16GiB 193.2 tree
COLL-GTC24-NVLSTREE-32-128M dgx-h100 32 allreduce 128MiB 278 nvlstree
COLL-GTC24-NVLSTREE-32-1G dgx-h100 32 allreduce 1GiB 350 nvlstree
COLL-GTC24-NVLSTREE-32-16G dgx-h100 32 allreduce 16GiB 375 nvlstree
COLL-GTC24-NVLSTREE-8192-1G dgx-h100 8192 allreduce 1GiB 300 nvlstree
COLL-GTC24-NVLSTREE-8192-16G dgx-h100 8192 allreduce 16GiB 367 nvlstree
COLL-TOG-H100-2N-NVLS dgx-h100 16 allreduce 8GiB 479.81 nvlstree
COLL-UA-B200-AR-NVLS-2N dgx-b200 16 allreduce 16GiB 717.2 nvlstree
COLL-FERN-4N-64M dgx-h100 32 allreduce 64MiB 215 auto
COLL-FERN-4N-16G dgx-h100 32 allreduce 16GiB 350 auto
COLL-FERN-512N-64M dgx-h100 4096 allreduce 64MiB 110 auto
COLL-FERN-512N-16G dgx-h100 4096 allreduce 16GiB 345 auto
COLL-GTC24-AR-DGXH100-SHARP-MN dgx-h100 32 allreduce 8GiB 480 auto
ROWS
