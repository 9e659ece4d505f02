#!/usr/bin/env python3
"""compare.py RESULTS.csv OUTDIR - weft beside Agarwal et al. (MLSys 2022).

Reads the results of `weft sweep analysis/repro-agarwal/study.xml` and prints
(and writes to OUTDIR/report.txt):
  1. the paper's headline (abstract: compression beats optimized synchronous
     data parallelism in only 6 of more than 200 setups) beside weft's count
     over the same kind of grid, at the instance's own 10 Gb/s and at every
     throttled rate of the paper's scripts;
  2. row by row at 10 Gb/s: the DDP baseline's iteration, the encoding and
     decoding time, weft's simulated speedup and the speedup by the paper's
     own performance model (forward + max(backward, communication) +
     encoding/decoding + optimizer; workloads/closedform.h) on weft's inputs;
and draws OUTDIR/speedup-<net>.svg: speedup against bandwidth per node at
64 GPUs, weft's simulation (solid) and the paper's model (dashed).
The paper's figures themselves are not transcribed: README.md says why.
Only the standard library and gnuplot (if installed) are used.
"""
import csv
import json
import os
import subprocess
import sys

METHODS = ["powersgd:4", "powersgd:8", "powersgd:16", "topk:0.1",
           "topk:0.01", "topk:0.001", "sign"]
HELPS = 1.0          # the paper counts any speedup
CLEAR = 1.05         # and weft also reports the clear ones
NOMINAL = 10.0       # Gb/s: p3.8xlarge's own network


def label(r):
    if r["net"] == "bert-base":
        return "bert-base (8 seq)"
    return "%s-like (%s img)" % (r["net"], r["images"])


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py RESULTS.csv OUTDIR")
    rows = [r for r in csv.DictReader(open(sys.argv[1]))
            if r["status"] in ("ok", "no_fit")]
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lines = []
    w = lines.append
    w("Agarwal et al. (MLSys 2022) against weft: gradient compression vs "
      "plain DDP on p3.8xlarge-like nodes (4 V100, one NIC), FP32")
    w("speedup = DDP's iteration / the method's (> 1: compression helps); "
      "weft = simulated; model = the paper's performance model on weft's "
      "inputs")
    w("")
    bws = sorted({float(r["gbps"]) for r in rows})
    w("1. Setups in which compression helps (paper, abstract: 6 of more "
      "than 200, about 3 %, 'in the typical data-center setting')")
    w("  %-10s %8s %14s %14s %14s" % ("Gb/s/node", "setups", "weft > 1.00",
                                      "weft >= 1.05", "model > 1.00"))
    for b in bws:
        sel = [r for r in rows if float(r["gbps"]) == b]
        n = len(sel)
        h = sum(float(r["compression.speedup"]) > HELPS for r in sel)
        c = sum(float(r["compression.speedup"]) >= CLEAR for r in sel)
        m = sum(float(r["compression.model_speedup"]) > HELPS for r in sel)
        w("  %-10g %8d %8d (%3.0f%%) %8d (%3.0f%%) %8d (%3.0f%%)" %
          (b, n, h, 100.0 * h / n, c, 100.0 * c / n, m, 100.0 * m / n))
    w("  paper      >200        6 (~3%)  [abstract; setups not listed "
      "there]")
    w("")
    w("  by method at %g Gb/s (weft > 1.00 / setups):" % NOMINAL)
    for mth in METHODS:
        sel = [r for r in rows if float(r["gbps"]) == NOMINAL
               and r["compress"] == mth]
        h = sum(float(r["compression.speedup"]) > HELPS for r in sel)
        w("    %-12s %3d / %3d" % (mth, h, len(sel)))
    w("")
    w("2. Row by row at %g Gb/s per node" % NOMINAL)
    w("  (break-even codec s: the encoding and decoding time per iteration "
      "at which the method would stop paying, all else as simulated: DDP s "
      "- method s + codec s)")
    w("  %-24s %4s %-12s %9s %9s %9s %9s %7s %7s %6s" %
      ("model", "GPUs", "method", "DDP s", "codec s", "method s",
       "break-even", "weft", "model", "diff"))
    agree = 0
    tot = 0
    for r in rows:
        if float(r["gbps"]) != NOMINAL:
            continue
        s = float(r["compression.speedup"])
        m = float(r["compression.model_speedup"])
        d = (s - m) / m
        tot += 1
        agree += abs(d) <= 0.10
        ddp = float(r["compression.baseline_iteration_s"])
        codec = float(r["compression.codec_s"])
        it = float(r["iteration_time_s"])
        w("  %-24s %4s %-12s %9.4f %9.4f %9.4f %9.4f %7.2f %7.2f %+5.0f%%" %
          (label(r), r["gpus"], r["compress"], ddp, codec, it,
           ddp - it + codec, s, m, 100 * d))
    w("  weft's simulation within 10 %% of the paper's model in %d of %d "
      "rows at %g Gb/s" % (agree, tot, NOMINAL))
    w("")
    bert_nodes(out, w)
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "report.txt"), "w").write(text)
    sys.stdout.write(text)
    plot(rows, out)


def bert_nodes(out, w):
    """Section 3: BERT-base, 64 GPUs, on the 4-GPU nodes of the study and
    on the 8-GPU nodes that the paper's BERT and throttled scripts launch
    (README; run.sh writes OUTDIR/bert-gpn<G>-<Gb/s>-<method>.json)."""
    meths = ["none"] + [m for m in METHODS if m in
                        ("powersgd:4", "powersgd:16", "topk:0.01", "sign")]
    t = {}
    for gpn in (4, 8):
        for g in ("10", "25"):
            for m in meths:
                p = os.path.join(out, "bert-gpn%d-%s-%s.json" % (gpn, g, m))
                if os.path.exists(p):
                    t[(gpn, g, m)] = json.load(open(p))["iteration_time_s"]
    if not t:
        return
    w("3. BERT-base (8 seq/GPU), 64 GPUs: 4 GPUs per node (study.xml) against "
      "8 (the paper's BERT scripts: nproc_per_node=8)")
    w("  %-22s %10s %s" % ("node, Gb/s per node", "DDP s",
                           " ".join("%17s" % m for m in meths[1:])))
    for gpn in (4, 8):
        for g in ("10", "25"):
            base = t.get((gpn, g, "none"))
            if base is None:
                continue
            w("  %-22s %10.4f %s" % (
                "%d GPUs, %s Gb/s" % (gpn, g), base, " ".join(
                    "%9.4f (%4.2fx)" % (t[(gpn, g, m)], base / t[(gpn, g, m)])
                    if (gpn, g, m) in t else "%17s" % "-" for m in meths[1:])))
    w("  (each cell: the method's iteration s and speedup over DDP)")
    w("")


def plot(rows, out):
    nets = []
    for r in rows:
        if r["gpus"] == "64" and label(r) not in nets and \
                r["images"] in ("0", "64"):
            nets.append(label(r))
    for net in nets:
        tag = net.split()[0].replace("-like", "")
        dat = os.path.join(out, "speedup-%s.dat" % tag)
        with open(dat, "w") as f:
            f.write("# Gb/s per node, then per method: weft speedup, "
                    "paper-model speedup (64 GPUs, %s)\n" % net)
            f.write("# gbps " + " ".join("%s %s(model)" % (m, m)
                                         for m in METHODS) + "\n")
            for b in sorted({float(r["gbps"]) for r in rows}):
                vals = []
                for m in METHODS:
                    x = [r for r in rows if label(r) == net
                         and r["gpus"] == "64" and float(r["gbps"]) == b
                         and r["compress"] == m]
                    vals += [x[0]["compression.speedup"],
                             x[0]["compression.model_speedup"]]
                f.write("%g %s\n" % (b, " ".join(vals)))
        gp = os.path.join(out, "speedup-%s.gp" % tag)
        svg = "speedup-%s.svg" % tag
        cmds = ["set terminal svg size 800,500 dynamic",
                "set output '%s'" % svg,
                'set title "Agarwal et al. (MLSys 2022) setup: %s, 64 V100 '
                '(16 x p3.8xlarge)\\nweft simulation (solid), the paper\'s '
                'performance model on weft\'s inputs (dashed)"' % net,
                "set xrange [0.8:120]",
                "set xlabel 'network bandwidth per node (Gb/s)'",
                "set ylabel 'speedup over DDP (>1: compression helps)'",
                "set logscale xy", "set key outside right",
                "set grid"]
        plots = []
        for i, m in enumerate(METHODS):
            plots.append("'%s' using 1:%d with linespoints lc %d lw 2 "
                         "title '%s'" % (os.path.basename(dat), 2 + 2 * i,
                                         i + 1, m))
            plots.append("'%s' using 1:%d with lines lc %d dt 2 "
                         "notitle" % (os.path.basename(dat), 3 + 2 * i,
                                      i + 1))
        plots.append("1 with lines lc rgb 'black' title 'no speedup'")
        cmds.append("plot " + ", \\\n  ".join(plots))
        open(gp, "w").write("\n".join(cmds) + "\n")
        try:
            subprocess.run(["gnuplot", os.path.basename(gp)], cwd=out,
                           check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            sys.stderr.write("compare.py: gnuplot: %s\n" % e)


if __name__ == "__main__":
    main()
