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
    for rep in ("1", "4"):
        w("TP 8 x DP %s (%d GPUs): comm %% [exposed %% / overlapped %%] by "
          "hardware generation (0 = DGX A100)" % (rep, 8 * int(rep)))
        gens = sorted({int(r["generations"]) for r in rows})
        w("  %-7s" % "hidden" + "".join("%24s" % ("gen %d" % g)
                                        for g in gens))
        for h in sorted({int(r["hidden"]) for r in rows}):
            cells = []
            for g in gens:
                x = [r for r in rows if r["replicas"] == rep
                     and int(r["hidden"]) == h and int(r["generations"]) == g]
                x = x[0]
                it = float(x["iteration_time_s"])
                o = 100 * float(x["overlapped_comm_s"]) / it
                e = 100 * float(x["exposed_comm_s"]) / it
                share[(rep, h, g)] = (o + e, e, o)
                cells.append("%24s" % ("%5.1f [%4.1f / %4.1f]" % (o + e, e, o)))
            w("  %-7d" % h + "".join(cells))
        w("")
    for rep in ("1", "4"):
        fut = [v for k, v in share.items() if k[0] == rep and k[2] >= 1]
        inb = sum(LO <= v[0] <= HI for v in fut)
        w("TP 8 x DP %s, generations 1-4: %d of %d scenarios inside the "
          "paper's 40-75 %% band; %d below, %d above" %
          (rep, inb, len(fut), sum(v[0] < LO for v in fut),
           sum(v[0] > HI for v in fut)))
    w("")
    w("Overlapped (hidden) share, TP 8 x DP 4, generation 0 -> 4:")
    for h in sorted({k[1] for k in share}):
        w("  hidden %-6d overlapped %4.1f %% -> %4.1f %%, exposed %4.1f %% "
          "-> %4.1f %%" % (h, share[("4", h, 0)][2], share[("4", h, 4)][2],
                           share[("4", h, 0)][1], share[("4", h, 4)][1]))
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "report.txt"), "w").write(text)
    sys.stdout.write(text)
    plot(share, out)


def plot(share, out):
    hs = sorted({k[1] for k in share})
    gens = sorted({k[2] for k in share})
    with open(os.path.join(out, "comm-share.dat"), "w") as f:
        f.write("# generation, then per hidden size: comm %% of the "
                "iteration (TP 8 x DP 4); hidden %s\n" %
                " ".join(str(h) for h in hs))
        for g in gens:
            f.write("%d %s\n" % (g, " ".join("%.2f" % share[("4", h, g)][0]
                                             for h in hs)))
    cmds = ["set terminal svg size 800,500 dynamic",
            "set output 'comm-share.svg'",
            'set title "Pati et al. (IISWC 2023): communication share of '
            'runtime\\nweft: TP 8 x DP 4 on DGX A100 projected (lines); '
            'paper: 40-75 % (abstract, grey band)"',
            "set xlabel 'hardware generations after A100 (weft datasheet "
            "trend)'",
            "set ylabel 'communication, % of iteration'",
            "set yrange [0:100]", "set xtics 1", "set grid",
            "set key outside right",
            "set object 1 rect from graph 0, first %g to graph 1, first %g "
            "fc rgb '#dddddd' fs solid 0.5 noborder behind" % (LO, HI),
            "set label 1 'paper: 40-75 %% (abstract)' at graph 0.02, first "
            "%g" % (HI - 3)]
    plots = ["'comm-share.dat' using 1:%d with linespoints lw 2 title "
             "'hidden %d'" % (2 + i, h) for i, h in enumerate(hs)]
    cmds.append("plot " + ", \\\n  ".join(plots))
    open(os.path.join(out, "comm-share.gp"), "w").write("\n".join(cmds)
                                                        + "\n")
    try:
        subprocess.run(["gnuplot", "comm-share.gp"], cwd=out, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("compare.py: gnuplot: %s\n" % e)


if __name__ == "__main__":
    main()
