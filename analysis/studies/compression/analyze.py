#!/usr/bin/env python3
"""analyze.py RESULTS.csv OUTDIR - tables and plots of the compression study.

Reads the results of `weft sweep analysis/studies/compression/study.xml`
and writes into OUTDIR:
  report.txt       per model and GPU count, the simulated speedup of every
                   method over plain DDP at each bandwidth per GPU, the
                   same by Agarwal et al.'s model, where compression helps
                   (speedup >= 1.05), and each method's crossover (the
                   highest bandwidth at which it still helps);
  speedup-*.svg    speedup against bandwidth per method (gnuplot), one plot
                   per model at 128 GPUs, with the .dat and .gp beside it.
Only the standard library and gnuplot (if installed) are used.
"""
import csv
import os
import subprocess
import sys
from collections import defaultdict

METHODS = ["fp16", "powersgd:4", "topk:0.01", "randomk:0.01", "sign",
           "efsign", "qsgd:8"]
HELPS = 1.05


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: analyze.py RESULTS.csv OUTDIR")
    rows = list(csv.DictReader(open(sys.argv[1])))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sim = {}
    model = {}
    codec = {}
    nets, gpus, bws = [], [], []
    for r in rows:
        if r["status"] not in ("ok", "no_fit"):
            continue
        k = ("%s/%s" % (r["net"], r["gpus_per_node"]), int(r["gpus"]),
             float(r["gbps"]), r["compress"])
        sim[k] = float(r["compression.speedup"])
        model[k] = float(r["compression.model_speedup"])
        codec[k] = (float(r["compression.codec_s"]),
                    float(r["compression.baseline_iteration_s"]))
        for lst, v in ((nets, k[0]), (gpus, k[1]), (bws, k[2])):
            if v not in lst:
                lst.append(v)
    gpus.sort()
    bws.sort()
    lines = []
    w = lines.append
    w("Gradient compression against plain DDP (weft, simulated; speedup = "
      "DDP's iteration / the method's; > 1: compression helps)")
    w("")
    crossover = defaultdict(dict)
    helps = []
    for net in nets:
        for g in gpus:
            w("%s GPU(s) per node, %d GPUs: simulated speedup [Agarwal et "
              "al.'s model] by bandwidth per GPU (Gb/s)" % (net, g))
            w("  %-13s" % "method" + "".join("%16g" % b for b in bws))
            for m in METHODS:
                cells = []
                best = None
                for b in bws:
                    k = (net, g, b, m)
                    if k not in sim:
                        cells.append("%16s" % "-")
                        continue
                    cells.append("%16s" % ("%.2f [%.2f]" % (sim[k], model[k])))
                    if sim[k] >= HELPS:
                        best = b
                        helps.append((net, g, b, m, sim[k], model[k]))
                crossover[(net, g)][m] = best
                w("  %-13s" % m + "".join(cells))
            w("")
    w("Where compression helps (simulated speedup >= %.2f): the highest "
      "bandwidth per GPU at which each method still does ('-': at none of "
      "1-400 Gb/s)" % HELPS)
    w("  %-14s %5s" % ("model/per node", "GPUs") +
      "".join("%14s" % m for m in METHODS))
    for net in nets:
        for g in gpus:
            w("  %-14s %5d" % (net, g) + "".join(
                "%14s" % ("%g Gb/s" % crossover[(net, g)][m]
                          if crossover[(net, g)][m] is not None else "-")
                for m in METHODS))
    w("")
    n_all = len(sim)
    w("%d of %d settings gain %.0f %% or more; the largest gains:" %
      (len(helps), n_all, 100 * (HELPS - 1)))
    for h in sorted(helps, key=lambda x: -x[4])[:10]:
        w("  %-12s %4d GPUs %4g Gb/s %-13s %.2fx (model %.2fx)" % h)
    disagree = [(k, sim[k], model[k]) for k in sim
                if abs(sim[k] / model[k] - 1) > 0.10]
    w("")
    w("Settings where the simulation and Agarwal et al.'s model differ by "
      "more than 10 %%: %d of %d" % (len(disagree), n_all))
    for k, s, mo in sorted(disagree, key=lambda x: -abs(x[1] / x[2] - 1))[:10]:
        w("  %-12s %4d GPUs %4g Gb/s %-13s simulated %.2fx, model %.2fx" %
          (k + (s, mo)))
    open(os.path.join(out, "report.txt"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    # Plots: speedup against bandwidth, one line per method, at 128 GPUs.
    g = 128 if 128 in gpus else gpus[-1]
    for net in nets:
        tag = net.replace("/", "-")
        dat = os.path.join(out, "speedup-%s.dat" % tag)
        with open(dat, "w") as f:
            f.write("# gbps " + " ".join(METHODS) + "\n")
            for b in bws:
                f.write("%g %s\n" % (b, " ".join(
                    "%.6g" % sim.get((net, g, b, m), float("nan"))
                    for m in METHODS)))
        gp = os.path.join(out, "speedup-%s.gp" % tag)
        with open(gp, "w") as f:
            f.write('set terminal svg size 720,420 font "Helvetica,12"\n')
            f.write('set output "speedup-%s.svg"\n' % tag)
            f.write('set title "%s GPU(s) per node, %d GPUs: speedup of '
                    'gradient compression over DDP (weft)"\n' % (net, g))
            f.write('set logscale x\nset xlabel "network bandwidth per GPU '
                    '(Gb/s)"\nset ylabel "speedup"\nset key outside right\n')
            f.write("set grid\nset logscale y\n")
            f.write("plot 1 title 'DDP' dt 2 lc rgb 'black', " + ", ".join(
                "'speedup-%s.dat' using 1:%d with linespoints title '%s'" %
                (tag, i + 2, m) for i, m in enumerate(METHODS)) + "\n")
        try:
            subprocess.run(["gnuplot", os.path.basename(gp)], cwd=out,
                           check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("gnuplot: %s (the .dat and .gp are written)" % e,
                  file=sys.stderr)


if __name__ == "__main__":
    main()
