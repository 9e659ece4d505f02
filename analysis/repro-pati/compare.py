#!/usr/bin/env python3
"""compare.py RESULTS.csv OUTDIR - weft beside Pati et al. (IISWC 2023).

Reads the results of `weft sweep analysis/repro-pati/study.xml` and prints
(and writes to OUTDIR/report.txt), for each model (hidden size) and hardware
generation, the share of the iteration spent communicating (overlapped +
exposed, per-rank means), the exposed and the overlapped share, beside the
paper's headline band (abstract, v3: communication 40-75 % of runtime as
models and hardware evolve); then counts the scenarios inside the band and
draws OUTDIR/comm-share.svg: communication share against generations, one
line per hidden size, with the paper's band.  The paper's per-scenario
figures are not transcribed: README.md says why.
Only the standard library and gnuplot (if installed) are used.
"""
import csv
import os
import subprocess
import sys

LO, HI = 40.0, 75.0   # paper, abstract (arXiv 2302.02825v3)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare.py RESULTS.csv OUTDIR")
    rows = [r for r in csv.DictReader(open(sys.argv[1]))
            if r["status"] in ("ok", "no_fit")]
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lines = []
    w = lines.append
    w("Pati et al. (IISWC 2023) against weft: share of the iteration spent "
      "communicating (per-rank means; weft = simulated)")
    w("paper (abstract): communication 40-75 % of runtime as models and "
      "hardware evolve; communication hidden today often cannot be hidden "
      "in future, larger models")
    w("")
    share = {}
    trends = []
    for r in rows:
        if r["trend"] not in trends:
            trends.append(r["trend"])
    for trend, rep in [(t, p) for t in trends for p in ("1", "4")]:
        w("TP 8 x DP %s (%d GPUs), trend %s: comm %% [exposed %% / "
          "overlapped %%] by hardware generation (0 = DGX A100)" %
          (rep, 8 * int(rep), trend))
        gens = sorted({int(r["generations"]) for r in rows})
        w("  %-7s" % "hidden" + "".join("%24s" % ("gen %d" % g)
                                        for g in gens))
        for h in sorted({int(r["hidden"]) for r in rows}):
            cells = []
            for g in gens:
                x = [r for r in rows if r["replicas"] == rep
                     and r["trend"] == trend
                     and int(r["hidden"]) == h and int(r["generations"]) == g]
                x = x[0]
                it = float(x["iteration_time_s"])
                o = 100 * float(x["overlapped_comm_s"]) / it
                e = 100 * float(x["exposed_comm_s"]) / it
                share[(trend, rep, h, g)] = (o + e, e, o)
                cells.append("%24s" % ("%5.1f [%4.1f / %4.1f]" % (o + e, e, o)))
            w("  %-7d" % h + "".join(cells))
        w("")
    for trend, rep in [(t, p) for t in trends for p in ("1", "4")]:
        fut = [v for k, v in share.items() if k[0] == trend and k[1] == rep
               and k[3] >= 1]
        inb = sum(LO <= v[0] <= HI for v in fut)
        w("TP 8 x DP %s, %s, generations 1-4: %d of %d scenarios inside "
          "the paper's 40-75 %% band; %d below, %d above" %
          (rep, trend, inb, len(fut), sum(v[0] < LO for v in fut),
           sum(v[0] > HI for v in fut)))
    w("")
    for trend in trends:
        w("Overlapped (hidden) share, TP 8 x DP 4, %s, generation 0 -> 4:"
          % trend)
        for h in sorted({k[2] for k in share}):
            a = share[(trend, "4", h, 0)]
            b = share[(trend, "4", h, 4)]
            w("  hidden %-6d overlapped %4.1f %% -> %4.1f %%, exposed "
              "%4.1f %% -> %4.1f %%" % (h, a[2], b[2], a[1], b[1]))
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "report.txt"), "w").write(text)
    sys.stdout.write(text)
    plot(share, trends, out)


def plot(share, trends, out):
    hs = sorted({k[2] for k in share})
    gens = sorted({k[3] for k in share})
    with open(os.path.join(out, "comm-share.dat"), "w") as f:
        f.write("# generation, then per trend (%s) and hidden size (%s): "
                "comm %% of the iteration (TP 8 x DP 4)\n" %
                (" ".join(trends), " ".join(str(h) for h in hs)))
        for g in gens:
            f.write("%d %s\n" % (g, " ".join(
                "%.2f" % share[(t, "4", h, g)][0]
                for t in trends for h in hs)))
    cmds = ["set terminal svg size 900,650 dynamic",
            "set output 'comm-share.svg'",
            'set title "Pati et al. (IISWC 2023): communication share of '
            'runtime; paper: 40-75 % (abstract, grey band)\\nweft: TP 8 x DP 4 '
            'on DGX A100 projected\\n(solid: datasheets trend, dashed: '
            'memory-wall trend)"',
            "set xlabel 'hardware generations after A100 (weft list trends)'",
            "set ylabel 'communication, % of iteration'",
            "set yrange [0:100]", "set xtics 1", "set grid",
            "set key below horizontal maxcols 5",
            "set object 1 rect from graph 0, first %g to graph 1, first %g "
            "fc rgb '#dddddd' fs solid 0.5 noborder behind" % (LO, HI),
            "set label 1 'paper: 40-75 %% (abstract)' at graph 0.02, first "
            "%g" % (HI - 3)]
    plots = []
    for j, t in enumerate(trends):
        for i, h in enumerate(hs):
            plots.append("'comm-share.dat' using 1:%d with linespoints lc "
                         "%d dt %d lw 2 title 'hidden %d, %s'" %
                         (2 + j * len(hs) + i, i + 1, 1 + j, h, t))
    cmds.append("plot " + ", \\\n  ".join(plots))
    open(os.path.join(out, "comm-share.gp"), "w").write("\n".join(cmds)
                                                        + "\n")
    try:
        subprocess.run(["gnuplot", "comm-share.gp"], cwd=out, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("compare.py: gnuplot: %s\n" % e)


if __name__ == "__main__":
    main()
