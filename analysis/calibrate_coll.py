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
  NVLSTree the network hop of its trees: COLL-GTC24-NVLSTREE-8192-128M;
           less NCCL's tuner hop (20.9 us) it is what every network hop
           of a tree costs beyond NCCL's hop (COLL_NET_STEP).

Point-to-point (a pipeline send, sim/coll.c coll_p2p_extra):

    t = p2p_lat + bytes / (link bandwidth * eff)

eff is the rings' share (coll_nvlink_eff, coll_nic_eff); p2p_lat is not
fitted: it is NCCL's own cost of one Simple step of a ring (tuning.cc base
latency + the link's hardware latency), NVLink and network, in the NCCL of
the node type's measurements.  The measurements printed after it check it
(they are not calibration rows).
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

    # NVLSTree (coll.c nvlstree_estimate): NVLS's fixed cost, 2 x
    # floor(log2 nodes) network hops, and the bytes at the slower of NVLS
    # inside the node (S at nvls_eff) and the busiest head's NIC (its S/8
    # on the 4 edges of its two trees, half on each: S/4 at nic_eff).  The
    # hop from COLL-GTC24-NVLSTREE-8192-128M (1024 DGX H100, 128 MiB, 155
    # GB/s read off a plot, +-10 GB/s); NCCL 2.30.7's tuner says 20.9 us.
    nodes, g, s = 1024, 8, 128 * MiB
    t = t_of_busbw("allreduce", s, 155e9, nodes * g)
    byts = max(s / (OUT[("DGX-H100", "coll_nvls_eff")] * NVLINK["H100"]),
               4 * s / g / 2 / (NIC["NDR"] * OUT[("DGX-H100", "coll_nic_eff")]))
    hop = (t - lat_nvls - byts) / (2 * math.log2(nodes))
    OUT["NVLSTREE_HOP_NET"] = hop * 1e6
    print(f"NVLSTree  hop {hop * 1e6:.2f} us (NCCL's tuner: 20.9 us)")
    # The network step (issue 37): trees' network hops cost NCCL's hop
    # latency plus the NVLSTree hop less the tuner's (coll.h COLL_NET_STEP, the difference of the two constants);
    # Fernandez et al.'s all-reduce scan is held back
    # (tests/validation/fern_scan.sh), and so is the LL send below.
    OUT["NET_STEP"] = hop * 1e6 - 20.9
    print(f"Network   step {hop * 1e6 - 20.9:.2f} us (the hop less NCCL's 20.9 us)")


def p2p():
    """The p2p latencies per node type, and the send/recv measurements that
    check them and the bandwidth shares."""
    # NCCL's tuner constants, microseconds (src/graph/tuning.cc): the Ring
    # algorithm's Simple base latency and its hardware latencies of one step
    # (Simple; LL for the check below).  NCCL 2.8.3 to 2.9.9 (baseLat,
    # hwLat) and 2.30.7 (ncclTunerConstantsDefaults); the IB and socket
    # transports report no latency of their own (net_ib/init.cc: latency
    # 0), so graph->latencyInter adds nothing.
    nccl = {"2.8-2.9": (8.4, 3.4, 9.6), "2.30.7": (8.4, 3.4, 14.0)}
    ll_base, ll_nvl, ll_net = 6.6, 0.6, 2.7   # 2.30.7, Ring, LL
    era = {"DGX-A100": "2.8-2.9", "DGX-A100-40GB": "2.8-2.9",
           "EX235n-A100": "2.8-2.9", "DGX-H100": "2.30.7",
           "DGX-H200": "2.30.7", "DGX-B200": "2.30.7",
           "GB200-NVL72": "2.30.7", "GB300-NVL72": "2.30.7"}
    for node, ver in era.items():
        base, nvl, net = nccl[ver]
        OUT[(node, "p2p_nvlink_lat")] = base + nvl
        OUT[(node, "p2p_net_lat")] = base + net
    print("P2P       NCCL 2.8-2.9 (A100): p2p_nvlink_lat %.1f us, p2p_net_lat "
          "%.1f us; NCCL 2.30.7: %.1f us, %.1f us"
          % (sum(nccl["2.8-2.9"][:2]), nccl["2.8-2.9"][0] + nccl["2.8-2.9"][2],
             sum(nccl["2.30.7"][:2]), nccl["2.30.7"][0] + nccl["2.30.7"][2]))
    # Checks.  Latency over NVLink: the single-node all-to-all of 8 H100
    # (NCCL runs it as grouped send/recv) takes 7.6 us at its smallest
    # (Hugging Face, The Smol Training Playbook, 2025, "GPU-to-GPU
    # communication", AWS p5); NCCL's LL model of the same step says:
    print("  check   NVLink LL send: NCCL model %.1f us, 8 H100 all-to-all "
          "measured 7.6 us (%+.0f %%)"
          % (ll_base + ll_nvl, 100 * ((ll_base + ll_nvl) / 7.6 - 1)))
    # Across nodes the small sends measured are slower than NCCL's model:
    # 31-34 us between two A40 nodes at 256 B-8 KiB (nccl-tests issue 214),
    # 40-53 us on AWS p5 over EFA (the Playbook); neither is a DGX on
    # InfiniBand, so the model's value stands, marked doubtful.
    print("  check   network LL send: NCCL model %.1f us; measured 31-34 us "
          "(2 A40 nodes), 40-53 us (p5, EFA): the network latency is "
          "doubtful" % (ll_base + ll_net))
    # With the network step of the collectives (coll.h COLL_NET_STEP,
    # 24.8 us: the NVLSTree hop less NCCL's) the LL send agrees; pipeline
    # sends (p2p_net_lat) do not carry it yet (NEEDSWORK in coll.c).
    step = 45.7 - 20.9
    print("  check   network LL send with the network step: %.1f us "
          "(measured 31-34 us, 2 A40 nodes)" % (ll_base + ll_net + step))
    # Bandwidth: sendrecv_perf at its largest sizes against the rings'
    # shares of the catalog (no share of its own where they agree).
    for what, meas, link, eff in (
            ("H100 NVLink, 2 GPUs, 8 GiB (Playbook)", 364.93e9,
             NVLINK["H100"], 0.8133),
            ("A100 NVLink, SM copies (nccl-tests issue 149, ~230)", 230e9,
             NVLINK["A100"], 0.7843),
            ("B200 NVLink, 8 GPUs, 16 GiB (together use3a-ss)", 641.6e9,
             NVLINK["B200"], 0.7647),
            ("B200 NDR, 2 nodes, 16 GiB (COLL-UA-B200-SENDRECV-2N)", 42.6e9,
             NIC["NDR"], 0.8625)):
        model = link * eff
        print("  check   %s: %.1f GB/s, model %.1f GB/s (%+.1f %%)"
              % (what, meas / 1e9, model / 1e9, 100 * (model / meas - 1)))


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
    p2p()
    if "--check" in sys.argv[1:] and not check():
        sys.exit(1)
