#!/usr/bin/env python3
"""run.py WEFT OUTDIR - the sharing study (issue 41, item 4): two training
jobs of 16 nodes each (128 H100) on one 32-node cluster of two leaves of
16 nodes, with 2:1 oversubscribed leaf uplinks (h100-oversub) and, for
contrast, non-blocking ones; each mix of jobs in three placements:

  packed  each job in its own leaf: no link in common between the jobs
  split   each job half in each leaf, its nodes in leaf order (a ring over
          its nodes crosses the uplinks twice)
  spread  each job's nodes alternating between the leaves (a ring crosses
          them at every step: the worst case of a scattered allocation)

and the spread pair of TP 8 Llama 3 8B jobs against the uplinks'
oversubscription (1 to 4).

Each point is one `weft share ... --json` (each job alone on its nodes,
then both together; every rank and flow simulated).  Writes
OUTDIR/results.csv (one row per job and scenario), OUTDIR/report.txt and,
with gnuplot, OUTDIR/slowdown.svg and OUTDIR/oversub.svg (with their .dat
and .gp).  Standard library only.
"""
import csv
import json
import os
import subprocess
import sys

SEQ = ["--seq", "4096"]
# Llama 3 8B pure data parallel (the heaviest gradient all-reduce per GPU
# of time), the same under TP 8 (a 1/8 gradient shard per GPU), and Llama
# 3 70B under TP 8 x PP 4 x DP 4 (Megatron's shape for it).
JOBS = {
    "8b-dp": ["--model", "llama3-8b", "--tp", "1", "--global-batch", "128"]
             + SEQ,
    "8b-tp8": ["--model", "llama3-8b", "--tp", "8", "--global-batch", "128"]
              + SEQ,
    "70b": ["--model", "llama3-70b", "--tp", "8", "--pp", "4",
            "--global-batch", "64", "--recompute", "selective"] + SEQ,
}
MIXES = [("8b-dp", "8b-dp"), ("8b-tp8", "8b-tp8"), ("70b", "70b"),
         ("8b-dp", "70b")]
LEAF = 16  # nodes per leaf of h100-oversub


def placements():
    """Job A's and job B's nodes, by placement."""
    a0, a1 = range(0, 8), range(LEAF, LEAF + 8)
    b0, b1 = range(8, LEAF), range(LEAF + 8, 2 * LEAF)
    alt = lambda x, y: [n for p in zip(x, y) for n in p]
    return {
        "packed": (list(range(0, LEAF)), list(range(LEAF, 2 * LEAF))),
        "split": (list(a0) + list(a1), list(b0) + list(b1)),
        "spread": (alt(a0, a1), alt(b0, b1)),
    }


FABRICS = {"2:1": [], "1:1": ["--oversubscription", "1"]}
# The uplinks' oversubscription, for the spread pair of 8b-tp8 jobs.
OVERSUB = ["1", "1.5", "2", "3", "4"]


def run(weft, fabric, mix, place, flags=None):
    na, nb = placements()[place]
    cmd = [weft, "share", "--cluster", "h100-oversub", "--nodes",
           str(2 * LEAF)] + (FABRICS[fabric] if flags is None else flags) + [
        ",".join(map(str, na)) + ":" + " ".join(JOBS[mix[0]]),
        ",".join(map(str, nb)) + ":" + " ".join(JOBS[mix[1]]),
        "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["jobs"]


def main():
    weft, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    rows = []
    for fabric in FABRICS:
        for mix in MIXES:
            for place in placements():
                jobs = run(weft, fabric, mix, place)
                for k, j in enumerate(jobs):
                    rows.append({
                        "fabric": fabric, "mix": "+".join(mix),
                        "placement": place, "job": k + 1,
                        "config": mix[k], "model": j["model"],
                        "tp": j["tp"], "pp": j["pp"], "dp": j["dp"],
                        "alone_s": "%.6f" % j["alone_s"],
                        "shared_s": "%.6f" % j["shared_s"],
                        "slowdown_pct": "%.3f" % (100 * j["slowdown"]),
                        "iterations": j["iterations"],
                        "measured": j["measured"]})
                print(fabric, mix, place,
                      ["%.2f%%" % (100 * j["slowdown"]) for j in jobs],
                      file=sys.stderr)
    for ov in OVERSUB:
        mix = ("8b-tp8", "8b-tp8")
        jobs = run(weft, None, mix, "spread", ["--oversubscription", ov])
        for k, j in enumerate(jobs):
            rows.append({
                "fabric": ov + ":1", "mix": "+".join(mix),
                "placement": "spread", "job": k + 1, "config": mix[k],
                "model": j["model"], "tp": j["tp"], "pp": j["pp"],
                "dp": j["dp"], "alone_s": "%.6f" % j["alone_s"],
                "shared_s": "%.6f" % j["shared_s"],
                "slowdown_pct": "%.3f" % (100 * j["slowdown"]),
                "iterations": j["iterations"], "measured": j["measured"]})
        print("oversub", ov, ["%.2f%%" % (100 * j["slowdown"]) for j in jobs],
              file=sys.stderr)
    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(outdir, "report.txt"), "w") as f:
        f.write("%-5s %-14s %-8s %-4s %-7s %9s %9s %9s\n" % (
            "fabric", "mix", "place", "job", "config", "alone s",
            "shared s", "slowdown"))
        for r in rows:
            f.write("%-5s %-14s %-8s %-4s %-7s %9s %9s %8s%%\n" % (
                r["fabric"], r["mix"], r["placement"], r["job"],
                r["config"], r["alone_s"], r["shared_s"],
                r["slowdown_pct"]))
    plot(rows, outdir)


def plot(rows, outdir):
    """Clustered bars on the 2:1 fabric: each job of each mix, by
    placement."""
    keys = []
    for r in rows:
        k = (r["mix"], r["job"], r["config"])
        if r["fabric"] == "2:1" and k not in keys:
            keys.append(k)
    dat = os.path.join(outdir, "slowdown.dat")
    with open(dat, "w") as f:
        f.write("# job (mix: config) packed split spread, slowdown % on "
                "the 2:1 fabric\n")
        for mix, job, config in keys:
            vals = [next(r["slowdown_pct"] for r in rows
                         if r["fabric"] == "2:1" and r["mix"] == mix and
                         r["job"] == job and r["placement"] == p)
                    for p in ("packed", "split", "spread")]
            f.write('"%s: %s" %s\n' % (mix, config, " ".join(vals)))
    gp = os.path.join(outdir, "slowdown.gp")
    with open(gp, "w") as f:
        f.write("""set terminal svg size 820,460 font 'sans,11'
set output 'slowdown.svg'
set title 'Two 128-GPU jobs on 32 H100 nodes, 2:1 leaf uplinks: slowdown from sharing'
set ylabel 'step time shared over alone - 1, %'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -20 noenhanced
set key top left
set grid ytics
plot 'slowdown.dat' using 2:xtic(1) title 'packed (own leaf)', \\
     '' using 3 title 'split (half in each leaf)', \\
     '' using 4 title 'spread (alternating leaves)'
""")
    with open(os.path.join(outdir, "oversub.dat"), "w") as f:
        f.write("# oversubscription alone_s shared_s, 8b-tp8 + 8b-tp8 spread "
                "(job 1)\n")
        for ov in OVERSUB:
            r = next(r for r in rows if r["fabric"] == ov + ":1" and
                     r["mix"] == "8b-tp8+8b-tp8" and r["job"] == 1 and
                     r["placement"] == "spread")
            f.write("%s %s %s\n" % (ov, r["alone_s"], r["shared_s"]))
    with open(os.path.join(outdir, "oversub.gp"), "w") as f:
        f.write("""set terminal svg size 720,440 font 'sans,11'
set output 'oversub.svg'
set title 'Two spread Llama 3 8B jobs (TP 8 x DP 16) against the uplinks oversubscription'
set xlabel 'leaf uplink oversubscription (x:1)'
set ylabel 'step time, s'
set key top left
set grid
plot 'oversub.dat' using 1:2 with linespoints title 'alone', \\
     '' using 1:3 with linespoints title 'shared'
""")
    try:
        subprocess.run(["gnuplot", "slowdown.gp"], cwd=outdir, check=True)
        subprocess.run(["gnuplot", "oversub.gp"], cwd=outdir, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("no plot: %s" % e, file=sys.stderr)


if __name__ == "__main__":
    main()
