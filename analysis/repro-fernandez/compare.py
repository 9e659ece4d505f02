#!/usr/bin/env python3
"""Fernandez et al. (arXiv 2411.13055) beside weft, from weft's sweep.

usage: compare.py RESULTS.csv OUTDIR

Reads the results of study.xml and writes OUTDIR/report.txt, the figures
of the paper that could be read (setups.md says from where) beside
weft's for the same quantity, and draws OUTDIR/scaling.svg: tokens per
second per GPU against GPUs, relative to 128 GPUs, one line per model and
layout (weak scaling, H100), with the paper's 128 -> 2048 GPU point.
Only the standard library and gnuplot (if installed) are used.
"""
import csv
import json
import os
import subprocess
import sys

# The paper's figures, as read (setups.md, rows P1-P4).  P2-P4 come from
# summaries of the paper by others, not from its body: see setups.md.
PAPER_THR_128_2048 = -37.22   # % change of throughput, 128 -> 2048 GPUs
PAPER_PWR_128_2048 = -5.87    # % change of power per GPU, same
PAPER_MFU_A100 = 59.67        # % MFU on A100
PAPER_MFU_H100 = 40.77        # % MFU on H100

# NCCL all-reduce bus bandwidth (GB/s) against bytes, for 4 to 512 nodes
# of the paper's H100 cluster: a read-off (readoff_allreduce.py, +-10
# GB/s) of the nccl-tests scan plot that Bekman's ml-engineering book
# reproduces with arXiv 2411.13055 as its source (setups.md, S8, P6); the
# paper's own text says its Figure 2 benchmarks NCCL's AllReduce and
# AllGather (S7).  Ticks where a series hides under another are missing.
PAPER_AR_UNC = 10.0
PAPER_AR = {
    4: {2097152: 29, 4194304: 47, 8388608: 68, 16777216: 114, 33554432: 166, 67108864: 217, 134217728: 255, 268435456: 270, 536870912: 319, 1073741824: 338, 2147483648: 348},
    8: {2097152: 21, 4194304: 35, 8388608: 51, 16777216: 88, 33554432: 137, 67108864: 189, 134217728: 233, 268435456: 280, 536870912: 311, 1073741824: 329, 2147483648: 339, 4294967296: 350, 8589934592: 354},
    16: {8388608: 42, 16777216: 72, 33554432: 112, 67108864: 163, 134217728: 218, 268435456: 264, 536870912: 302},
    32: {2097152: 14, 4194304: 24, 8388608: 36, 16777216: 58, 33554432: 93, 67108864: 152, 134217728: 205, 268435456: 254, 1073741824: 314, 4294967296: 338, 8589934592: 348, 17179869184: 352},
    64: {2097152: 10, 4194304: 17, 8388608: 28, 16777216: 44, 33554432: 86, 67108864: 136, 134217728: 179, 268435456: 245, 536870912: 288, 1073741824: 303, 2147483648: 327, 4294967296: 330, 8589934592: 341, 17179869184: 348},
    128: {33554432: 78, 67108864: 125, 268435456: 234, 536870912: 250, 2147483648: 321},
    256: {67108864: 117, 134217728: 171, 2147483648: 314, 4294967296: 320, 8589934592: 331, 17179869184: 338},
    512: {33554432: 64, 67108864: 112, 134217728: 164, 268435456: 219, 536870912: 260, 1073741824: 285, 2147483648: 308},
}
AR_NODES = (4, 8, 16, 32, 64, 128, 256, 512)


def num(r, k):
    v = r.get(k, "")
    return float(v) if v not in ("", "null") else None


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py RESULTS.csv OUTDIR")
    rows = list(csv.DictReader(open(sys.argv[1])))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    by = {}
    for r in rows:
        if r["status"] not in ("ok", "no_fit"):
            continue
        it = num(r, "iteration_time_s")
        g = int(r["gpus"])
        by[(r["fixed_gb"], r["model"], r["hw"], r["layout"], g)] = {
            "fit": r["status"] == "ok",
            "tok": num(r, "tokens_per_s") / g,
            "tflops": num(r, "tflops_per_gpu"),
            "mfu": 100 * num(r, "mfu"),
            "exp": 100 * num(r, "exposed_comm_s") / it,
            "ovl": 100 * num(r, "overlapped_comm_s") / it,
            "watt": num(r, "gpu_energy_j") / it / g,
        }
    L = []
    w = L.append
    w("Fernandez et al. (arXiv 2411.13055) against weft (study.xml)")
    w("paper figures: setups.md (P1 abstract; P2-P5 summaries by others; "
      "P6 a plot attributed to the paper, read off)")
    w("")
    w("1. Throughput per GPU and power per GPU, 128 -> 2048 GPUs")
    w("   paper: throughput %+.2f %%, power per GPU %+.2f %% (P2)" %
      (PAPER_THR_128_2048, PAPER_PWR_128_2048))
    w("   %-7s %-10s %-4s %-13s %9s %9s %8s %9s %9s" %
      ("regime", "model", "GPU", "layout", "tok/s 128", "tok/s 2k",
       "change", "W change", "exp 2k %"))
    for reg in ("0", "2048"):
        for m in ("llama2-7b", "llama2-70b"):
            for hw, lay in (("H100", "fsdp"), ("H100", "hsdp8"),
                            ("H100", "fsdp-tp2"), ("H100", "fsdp-tp4"),
                            ("H100", "fsdp-compile"), ("H100", "fsdp-pp2"),
                            ("H100", "fsdp-pp4"), ("H100", "fsdp-tp4-pp4"),
                            ("A100", "fsdp"),
                            ("H100-2nic", "fsdp"),
                            ("H100-2nic", "fsdp-tp4")):
                a = by.get((reg, m, hw, lay, 128))
                b = by.get((reg, m, hw, lay, 2048))
                if not a or not b:
                    continue
                w("   %-7s %-10s %-4s %-13s %9.0f %9.0f %+7.1f%% %+8.1f%% "
                  "%9.1f%s" %
                  ("weak" if reg == "0" else "strong", m, hw, lay, a["tok"],
                   b["tok"], 100 * (b["tok"] / a["tok"] - 1),
                   100 * (b["watt"] / a["watt"] - 1), b["exp"],
                   "" if b["fit"] else "  (does not fit)"))
    w("")
    w("2. MFU, A100 against H100 (FSDP, weak scaling)")
    w("   paper: A100 %.2f %%, H100 %.2f %% (P3; model and scale not "
      "known)" % (PAPER_MFU_A100, PAPER_MFU_H100))
    for m in ("llama2-7b", "llama2-70b"):
        for g in (128, 2048):
            a = by.get(("0", m, "A100", "fsdp", g))
            h = by.get(("0", m, "H100", "fsdp", g))
            if a and h:
                w("   weft %-10s %4d GPUs: A100 %.1f %% (%.0f TFLOP/s), "
                  "H100 %.1f %% (%.0f TFLOP/s); exposed comm A100 %.1f %%, "
                  "H100 %.1f %%" % (m, g, a["mfu"], a["tflops"], h["mfu"],
                                     h["tflops"], a["exp"], h["exp"]))
    w("")
    w("3. Best layout at 2048 H100 (weak scaling), of those that fit")
    w("   paper: TP or PP of degree 2-4 beats FSDP alone at scale (P1, P4)")
    for m, hwn in (("llama2-7b", "H100"), ("llama2-70b", "H100"),
                   ("llama2-7b", "H100-2nic")):
        c = [(v["tok"], lay) for (reg, mm, hw, lay, g), v in by.items()
             if reg == "0" and mm == m and hw == hwn and g == 2048 and
             v["fit"] and lay != "fsdp-compile"]
        c.sort(reverse=True)
        w("   weft %-10s %-9s " % (m, hwn) +
          ", ".join("%s %.0f" % (l, t) for t, l in c) + " tokens/s/GPU")
    w("")
    w("4. Weak scaling, H100: tokens/s per GPU and exposed / overlapped "
      "communication (% of iteration)")
    for m in ("llama2-7b", "llama2-70b"):
        for lay in ("fsdp", "hsdp8", "fsdp-tp2", "fsdp-tp4", "fsdp-compile",
                    "fsdp-pp2", "fsdp-pp4", "fsdp-tp4-pp4"):
            cells = []
            for g in sorted({k[4] for k in by}):
                v = by.get(("0", m, "H100", lay, g))
                if v:
                    cells.append("%d:%.0f(%.1f/%.0f)%s" % (
                        g, v["tok"], v["exp"], v["ovl"],
                        "" if v["fit"] else "*"))
            w("   %-10s %-13s %s" % (m, lay, " ".join(cells)))
    w("   (* does not fit in 80 GB)")
    ar = allreduce(out, w)
    text = "\n".join(L) + "\n"
    open(os.path.join(out, "report.txt"), "w").write(text)
    sys.stdout.write(text)
    plot(by, out)
    if ar:
        plot_allreduce(ar, out)


def allreduce(out, w):
    """Section 5: weft coll all_reduce on dgx-h100 (run.sh writes
    OUTDIR/allreduce-N.json) against the paper's read-off."""
    ar = {}
    for n in AR_NODES:
        p = os.path.join(out, "allreduce-%d.json" % n)
        if not os.path.exists(p):
            continue
        ar[n] = {r["bytes"]: r["busbw_GBps"]
                 for r in json.load(open(p))["results"]}
    w("")
    w("5. NCCL all-reduce bus bandwidth (GB/s), paper read-off (+-%.0f) "
      "against weft coll on dgx-h100" % PAPER_AR_UNC)
    w("   paper: the nccl-tests scan attributed to it (setups.md P6); "
      "'-': not readable (hidden)")
    if not ar:
        w("   weft: no OUTDIR/allreduce-N.json (run.sh writes them)")
        return ar
    sizes = (16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30, 16 << 30)
    w("   %5s " % "nodes" + " ".join("%13s" % lab for lab in
                                      ("16 MiB", "64 MiB", "256 MiB",
                                       "1 GiB", "4 GiB", "16 GiB")))
    for n in AR_NODES:
        cells = []
        for s in sizes:
            p = PAPER_AR.get(n, {}).get(s)
            x = ar.get(n, {}).get(s)
            cells.append("%13s" % ("%s / %s" % (
                "%d" % p if p is not None else "-",
                "%.0f" % x if x is not None else "-")))
        w("   %5d " % n + " ".join(cells))
    w("   (each cell: paper / weft)")
    return ar


def plot_allreduce(ar, out):
    with open(os.path.join(out, "allreduce.dat"), "w") as f:
        f.write("# bytes, then weft's all-reduce bus bandwidth (GB/s) on "
                "dgx-h100 for %s nodes\n" % " ".join(map(str, AR_NODES)))
        for s in sorted(ar[AR_NODES[0]]):
            f.write("%d %s\n" % (s, " ".join(
                "%.1f" % ar[n][s] for n in AR_NODES)))
    with open(os.path.join(out, "allreduce-paper.dat"), "w") as f:
        f.write("# the paper's read-off (compare.py PAPER_AR): one block per "
                "node count (%s), bytes and bus bandwidth (GB/s)\n" %
                " ".join(map(str, AR_NODES)))
        for n in AR_NODES:
            for s in sorted(PAPER_AR[n]):
                f.write("%d %d\n" % (s, PAPER_AR[n][s]))
            f.write("\n\n")
    cmds = ["set terminal svg size 900,650 dynamic",
            "set output 'allreduce.svg'",
            'set title "NCCL all-reduce bus bandwidth. Points: the H100 cluster '
            'of Fernandez et al. (read off, +-10 GB/s)\\nLines: weft on '
            'dgx-h100 (8 x 400 Gb/s NICs per node)" noenhanced',
            "set xlabel 'message size (bytes)'",
            "set ylabel 'bus bandwidth (GB/s)'", "set logscale x 2",
            "set format x '2^{%L}'", "set yrange [0:400]", "set grid",
            "set key below horizontal maxcols 4"]
    p = []
    for i, n in enumerate(AR_NODES):
        p.append("'allreduce.dat' using 1:%d with lines lc %d lw 2 "
                 "title 'weft %d nodes'" % (2 + i, 1 + i, n))
    for i, n in enumerate(AR_NODES):
        p.append("'allreduce-paper.dat' index %d using 1:2 with points "
                 "lc %d pt 7 title 'paper %d nodes'" % (i, 1 + i, n))
    cmds.append("plot " + ", \\\n  ".join(p))
    open(os.path.join(out, "allreduce.gp"), "w").write("\n".join(cmds) + "\n")
    try:
        subprocess.run(["gnuplot", "allreduce.gp"], cwd=out, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("compare.py: gnuplot: %s\n" % e)


def plot(by, out):
    gs = sorted({k[4] for k in by if k[4] >= 128})
    series = [(m, lay) for m in ("llama2-7b", "llama2-70b")
              for lay in ("fsdp", "fsdp-tp2", "fsdp-tp4", "fsdp-compile")]
    with open(os.path.join(out, "scaling.dat"), "w") as f:
        f.write("# GPUs, then tokens/s per GPU relative to 128 GPUs (weak "
                "scaling, H100) for %s\n" %
                " ".join("%s/%s" % s for s in series))
        for g in gs:
            f.write("%d %s\n" % (g, " ".join(
                "%.4f" % (by[("0", m, "H100", l, g)]["tok"] /
                          by[("0", m, "H100", l, 128)]["tok"])
                for m, l in series)))
    with open(os.path.join(out, "nic2.dat"), "w") as f:
        f.write("# GPUs, tokens/s per GPU relative to FSDP's at 128 GPUs, "
                "llama2-7b, 2 NICs per node: fsdp fsdp-tp4\n")
        base = by[("0", "llama2-7b", "H100-2nic", "fsdp", 128)]["tok"]
        for g in (128, 2048):
            f.write("%d %s\n" % (g, " ".join(
                "%.4f" % (by[("0", "llama2-7b", "H100-2nic", l, g)]["tok"] /
                          base) for l in ("fsdp", "fsdp-tp4"))))
    with open(os.path.join(out, "paper.dat"), "w") as f:
        f.write("# the paper's 128 -> 2048 GPU throughput change (P2)\n")
        f.write("128 1\n2048 %.4f\n" % (1 + PAPER_THR_128_2048 / 100))
    cmds = ["set terminal svg size 900,650 dynamic",
            "set output 'scaling.svg'",
            'set title "Fernandez et al. (arXiv 2411.13055): throughput per '
            'GPU against GPUs, relative to 128 GPUs\\nweft: Llama 2 on DGX '
            'H100, one 4096-token sequence per GPU, PyTorch FSDP1 (torchtitan '
            'stack)\\n(solid: 7B, dashed: 70B, dotted: 7B with 2 NICs per node; '
            'black: the paper as summarized)"',
            "set xlabel 'GPUs'", "set ylabel 'tokens/s per GPU / that at 128'",
            "set logscale x 2", "set yrange [0.5:1.1]", "set grid",
            "set key below horizontal maxcols 4"]
    p = []
    for i, (m, l) in enumerate(series):
        p.append("'scaling.dat' using 1:%d with linespoints lc %d dt %d lw 2 "
                 "title '%s %s'" % (2 + i, 1 + i % 4,
                                   1 if m == "llama2-7b" else 2,
                                   m, l))
    p.append("'nic2.dat' using 1:2 with linespoints lc rgb 'red' dt 3 lw 2 "
             "pt 6 title 'llama2-7b fsdp, 2 NICs/node'")
    p.append("'nic2.dat' using 1:3 with linespoints lc rgb 'blue' dt 3 lw 2 "
             "pt 6 title 'llama2-7b fsdp-tp4, 2 NICs/node (rel. to fsdp)'")
    p.append("'paper.dat' using 1:2 with points lc rgb 'black' pt 7 ps 1.5 "
             "title 'paper, 128 and 2048 GPUs (P2)'")
    cmds.append("plot " + ", \\\n  ".join(p))
    open(os.path.join(out, "scaling.gp"), "w").write("\n".join(cmds) + "\n")
    try:
        subprocess.run(["gnuplot", "scaling.gp"], cwd=out, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("compare.py: gnuplot: %s\n" % e)


if __name__ == "__main__":
    main()
