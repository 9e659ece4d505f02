#!/usr/bin/env python3
"""calibrate_coll.py - derive weft's collective constants from measurements.

Prints every constant of the collective model (sim/coll.c and coll.h, catalog.xml
coll_* attributes) from the rows named below, so that the calibration can be
redone, checked and extended.  The model of a ring collective (coll.c):

    t = L_p + steps * route latency
          + bytes per edge / (link bandwidth * eff * ring scale * share)

ring scale = 1 - coll_ring_loss * log2(nodes / 2) for a ring across more
than two nodes (NIC side only), else 1.

L_p is a fixed latency per collective: Simple's is the node type's coll_lat,
LL128's and LL's are fixed fractions of it.  Inside a node, steps = 2(n-1)
(all-reduce) or n-1, each over one NVLink route (1 us here).

Calibration rows (all others are held back: tests/validation/):
  Hopper   NVLink eff, coll_lat: all-reduce 128 MiB and 2 GiB of
           tests/validation/nccl_h100_8gpu_ring.csv (not rows of
           calibration.csv);
           LL fraction: the 8-byte time (COLL-TOG-H100RAW-AR-8B);
           LL128 fraction: the 32 MiB time (COLL-TOG-H100RAW-AR-32MiB).
  Ampere   NVLink eff, coll_lat: COLL-SB-A100-AR-1GiB and -16GiB.
  Blackwell coll_lat and NVLS eff: COLL-TOG-B200-1N-AR-NVLS (8 GiB) and
           COLL-SB-P6B200-1N-64MiB (taken as NVLS); NVLink eff:
           COLL-TOG-B200-1N-AR-RING (peak, 8 GiB).
  NVLS     latency fraction and Hopper eff: COLL-TOG-H100-1N-NVLS (8 GiB)
           and COLL-SB-H200-AR-NVLS-64MiB; Blackwell eff:
           COLL-TOG-B200-1N-AR-NVLS (8 GiB).
  Network  B200 NIC eff: COLL-UA-B200-AR-RING-2N; its ring loss per doubling
           of the nodes: COLL-UA-B200-AR-RING-46N (16 GiB); DGX H100 NIC eff: COLL-GTC25-AR-DGXH100-32; DGX A100
           NIC eff: COLL-GTC25-AR-DGXA100-32 (vendor slides, large messages,
           4 nodes, taken at 8 GiB).
  Tree     tree_bw (one channel's tree pipeline): COLL-UA-B200-AR-TREE-4N
           (16 GiB).
"""
import csv
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GiB, MiB = 1 << 30, 1 << 20
NVL_LAT = 1e-6           # catalog nvlink_lat of every node type
NIC_LAT, SW_LAT = 1e-6, 0.13e-6
LL128_SHARE, LL_SHARE = 0.9375, 0.5
NVLINK = {"A100": 300e9, "H100": 450e9, "B200": 900e9}
NIC = {"HDR": 25e9, "NDR": 50e9}


def curve(op):
    rows = {}
    path = os.path.join(HERE, "..", "tests", "validation",
                        "nccl_h100_8gpu_ring.csv")
    with open(path) as f:
        for r in csv.reader(line for line in f if not line.startswith("#")):
            if r[0] == op:
                rows[int(r[1])] = float(r[2]) * 1e-6
    return rows


def t_of_busbw(op, size, busbw, n):
    factor = 2.0 * (n - 1) / n if op == "allreduce" else (n - 1) / n
    return size * factor / busbw


def line(v1, t1, v2, t2):
    """Slope (bandwidth) and intercept of t = a + v / B."""
    bw = (v2 - v1) / (t2 - t1)
    return bw, t1 - v1 / bw


OUT = {}


def main():
    n = 8
    ar = curve("allreduce")
    vol = lambda s: 2.0 * (n - 1) / n * s  # bytes per ring edge, all-reduce
    steps = 2 * (n - 1)

    # Hopper: Simple line through 128 MiB and 2 GiB.
    bw_h, a_h = line(vol(128 * MiB), ar[128 * MiB], vol(2 * GiB), ar[2 * GiB])
    lat_h = a_h - steps * NVL_LAT
    eff_h = bw_h / NVLINK["H100"]
    ll = ar[8] - steps * NVL_LAT - vol(8) / (bw_h * LL_SHARE)
    ll128 = (ar[32 * MiB] - steps * NVL_LAT
             - vol(32 * MiB) / (bw_h * LL128_SHARE))
    OUT.update({("DGX-H100", "coll_nvlink_eff"): eff_h,
                ("DGX-H100", "coll_lat"): lat_h * 1e6,
                "LAT_LL": ll / lat_h,
                "LAT_LL128": ll128 / lat_h})
    print(f"Hopper    coll_nvlink_eff {eff_h:.4f}  coll_lat {lat_h*1e6:.1f} us"
          f"  (Simple line {bw_h/1e9:.1f} GB/s + {a_h*1e6:.1f} us)")
    print(f"          lat_ll {ll/lat_h:.3f} ({ll*1e6:.1f} us)"
          f"  lat_ll128 {ll128/lat_h:.3f} ({ll128*1e6:.1f} us)"
          "  (rings across nodes)")
    # Inside a node (coll.c node_ring_shape): the floor under NCCL's own
    # latencies, from the same 8-byte all-reduce less its bytes at LL's
    # capped bandwidth (NCCL's llMaxBws for one Hopper node, 141 GB/s).
    floor = ar[8] - vol(8) / min(141e9, LL_SHARE * bw_h)
    OUT[("DGX-H100", "coll_floor")] = floor * 1e6
    print(f"          coll_floor {floor*1e6:.2f} us (one-node rings)")

    # Ampere: line through the 1 GiB and 16 GiB all-reduce rows.
    t1 = t_of_busbw("allreduce", GiB, 229.04e9, n)
    t16 = t_of_busbw("allreduce", 16 * GiB, 234.89e9, n)
    bw_a, a_a = line(vol(GiB), t1, vol(16 * GiB), t16)
    OUT[("DGX-A100", "coll_nvlink_eff")] = bw_a / NVLINK["A100"]
    OUT[("DGX-A100", "coll_lat")] = (a_a - steps * NVL_LAT) * 1e6
    print(f"Ampere    coll_nvlink_eff {bw_a/NVLINK['A100']:.4f}  coll_lat "
          f"{(a_a - steps*NVL_LAT)*1e6:.1f} us")

    # NVLS: every GPU moves S up and S down once; one NVLink latency and a
    # fixed latency of its own.  Hopper: a line through 8 H100 at 8 GiB and
    # 8 H200 (same NVLink) at 64 MiB; Blackwell: its peak with that latency.
    t8 = t_of_busbw("allreduce", 8 * GiB, 477.8e9, n)
    t64 = t_of_busbw("allreduce", 64 * MiB, 346.51e9, n)
    bw_n, a_n = line(64 * MiB, t64, 8 * GiB, t8)
    lat_nvls = a_n - NVL_LAT
    OUT["LAT_NVLS"] = lat_nvls / lat_h
    OUT[("DGX-H100", "coll_nvls_eff")] = bw_n / NVLINK["H100"]
    print(f"NVLS      lat_nvls {lat_nvls/lat_h:.3f} ({lat_nvls*1e6:.1f} us)  "
          f"H100 coll_nvls_eff {bw_n/NVLINK['H100']:.4f}")
    # Blackwell: NVLS line through 8 B200 at 8 GiB (DGX) and 64 MiB (AWS
    # P6-B200, NCCL 2.27.7, which picks NVLS from 2 MiB), with Hopper's NVLS
    # latency fraction, gives coll_lat; the ring's peak row then its eff.
    t8 = t_of_busbw("allreduce", 8 * GiB, 843.53e9, n)
    t64 = t_of_busbw("allreduce", 64 * MiB, 400.6e9, n)
    bw_nb, a_nb = line(64 * MiB, t64, 8 * GiB, t8)
    lat_b = (a_nb - NVL_LAT) / OUT["LAT_NVLS"]
    OUT[("DGX-B200", "coll_nvls_eff")] = bw_nb / NVLINK["B200"]
    OUT[("DGX-B200", "coll_lat")] = lat_b * 1e6
    t = t_of_busbw("allreduce", 8 * GiB, 685.35e9, n)
    bw_b = vol(8 * GiB) / (t - lat_b - steps * NVL_LAT)
    OUT[("DGX-B200", "coll_nvlink_eff")] = bw_b / NVLINK["B200"]
    print(f"Blackwell coll_nvls_eff {bw_nb/NVLINK['B200']:.4f}  coll_lat "
          f"{lat_b*1e6:.1f} us  coll_nvlink_eff {bw_b/NVLINK['B200']:.4f}")

    # Network: rings over nodes, one channel per GPU and NIC; NIC bound.
    # t = L + route + per_edge / 8 / (nic * eff * ring scale): each step
    # carries hundreds of microseconds of bytes at these sizes, which hides
    # NCCL's per-step hop latencies (at most 14 us, coll.h), so the flows'
    # one route is the only latency beyond L.
    def ring_terms(nodes, size, leaf_cross):
        g = 8
        m = nodes * g
        st = 2 * (m - 1)
        route = 2 * NIC_LAT + SW_LAT * (3 if leaf_cross else 1)
        per_nic = 2.0 * (m - 1) / m * size / g
        assert per_nic / st / NIC["NDR"] > 14e-6, "hops not hidden"
        return st, route, per_nic

    size = 16 * GiB
    # B200: the NIC share from 2 nodes; the loss per doubling of the nodes
    # from 46 (the ring's bandwidth, not its latency, falls with the node
    # count: its 8 GiB and 16 GiB bandwidths agree within 0.1 % at 16 and
    # 32 nodes, which leaves no room for a per-step network cost).
    fit = {}
    for nodes, busbw, cross in ((2, 344.7e9, False), (46, 291.4e9, True)):
        m = nodes * 8
        t = t_of_busbw("allreduce", size, busbw, m)
        st, rl, per_nic = ring_terms(nodes, size, cross)
        fit[nodes] = per_nic / ((t - lat_b - rl) * NIC["NDR"])
    eff_b = fit[2]
    loss = (1 - fit[46] / eff_b) / math.log2(46 / 2)
    OUT[("DGX-B200", "coll_nic_eff")] = eff_b
    OUT[("DGX-B200", "coll_ring_loss")] = loss
    print(f"Network   B200 coll_nic_eff {eff_b:.4f}  coll_ring_loss {loss:.4f}")
    for name, nic, busbw, lat in (("H100", "NDR", 370e9, lat_h),
                                  ("A100", "HDR", 192e9, a_a - steps * NVL_LAT)):
        st, rl, per_nic = ring_terms(4, 8 * GiB, False)
        t = t_of_busbw("allreduce", 8 * GiB, busbw, 32)
        eff = per_nic / ((t - lat - rl) * NIC[nic])
        OUT[("DGX-" + name, "coll_nic_eff")] = eff
        print(f"          {name} coll_nic_eff {eff:.4f}")

    # Tree: each channel (one per GPU of a node) moves S/g at tree_bw; the
    # latency is coll_lat and NCCL's tree hops, 2 x ((g - 1) x 4 us +
    # log2(nodes) x 14 us) (coll.h).
    nodes, g = 4, 8
    t = t_of_busbw("allreduce", size, 190.7e9, nodes * g)
    lat = lat_b + 2e-6 * ((g - 1) * 4.0 + math.log2(nodes) * 14.0)
    OUT["TREE_BW"] = size / g / (t - lat) / 1e9
    print(f"Tree      tree_bw {size / g / (t - lat) / 1e9:.3f} GB/s")


def check():
    """Compare the derived constants with those in the sources (0.1 %)."""
    root = os.path.join(HERE, "..")
    cat = open(os.path.join(root, "platforms", "catalog.xml")).read()
    eng = open(os.path.join(root, "sim", "coll.h")).read()
    bad = 0
    for key, want in OUT.items():
        if isinstance(key, tuple):
            node, attr = key
            m = re.search(r'<node name="%s"[^>]*?%s="([0-9.e-]+)' % (node, attr),
                          cat, re.S)
        else:
            m = re.search(r"#define COLL_%s ([0-9.e-]+)" % key, eng)
        have = float(m.group(1)) if m else None
        if have is not None and key == "TREE_BW":
            have /= 1e9
        ok = have is not None and abs(have - want) <= 1e-3 * abs(want) + 5e-4
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {key}: source {have}, derived {want:.4f}")
    print(f"calibration: {len(OUT) - bad} match, {bad} differ")
    return bad == 0


if __name__ == "__main__":
    main()
    if "--check" in sys.argv[1:] and not check():
        sys.exit(1)
