#!/usr/bin/env python3
"""run.py WEFT OUTDIR [-j N] - the goodput study: Llama 3 405B on up to
131,072 H100 for 54 wall-clock days, against checkpoint interval, storage
bandwidth, checkpoint mode, restart time and GPU count.

The scenarios are study.xml, beside this script: one `weft sweep` runs
them (each is `weft run ... --train-days 54 --json`; the iteration is
simulated each time, though the goodput figures do not depend on it when
the run length is in days), and its goodput.* columns are the figures.
Writes OUTDIR/results.csv (one row per run: the axes and the goodput.*
fields of the JSON) and, with gnuplot, OUTDIR/*.svg with the .dat and .gp
beside them, and OUTDIR/report.txt.  Standard library only.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

BIG = 131072          # GPUs: "a 100K-GPU run"
# The goodput.* fields of weft run's JSON, in its order: the columns of
# the sweep but the failure-rate table and the mode, which are inputs.
FIELDS = ["fail_rates", "ckpt_mode", "wall_s", "work_s", "efficiency",
          "mtbf_s", "interruptions", "rework_s", "checkpoint_s", "restart_s",
          "checkpoint_bytes", "write_s", "block_s", "restart_time_s",
          "interval_s", "optimal_interval_s", "young_interval_s",
          "daly_interval_s"]


def row_of(r):
    """A results row from a sweep row: the axes as the study names them
    (unset: weft run's defaults, sync, the optimal interval, 10 minutes)
    and the figures as weft run's JSON gives them."""
    if r["status"] != "ok":
        sys.exit("scenario %s: %s %s" % (r["index"], r["status"], r["reason"]))
    mode = r["ckpt_mode"] or "sync"
    row = {"study": r["kind"], "gpus": int(r["gpus"]), "bw": r["storage_bw"],
           "mode": mode, "interval": r["ckpt_interval"] or "opt",
           "restart": r["restart_time"] or "10m",
           "iteration_time_s": json.loads(r["iteration_time_s"])}
    for k in FIELDS:
        row["goodput." + k] = {"fail_rates": "llama3", "ckpt_mode": mode}.get(
            k) or json.loads(r["goodput." + k])
    return row


def write_plot(out, name, title, xlabel, ylabel, series, logx=False):
    """series: [(label, [(x, y), ...])]; writes name.dat/.gp/.svg."""
    dat = os.path.join(out, name + ".dat")
    with open(dat, "w") as f:
        for label, pts in series:
            f.write("# %s\n" % label)
            for x, y in pts:
                f.write("%.6g %.6g\n" % (x, y))
            f.write("\n\n")
    gp = os.path.join(out, name + ".gp")
    plots = ", ".join("'%s' index %d with linespoints title '%s'"
                      % (name + ".dat", i, label)
                      for i, (label, _) in enumerate(series))
    with open(gp, "w") as f:
        f.write("set terminal svg size 720,440 font 'sans,12'\n")
        f.write("set output '%s.svg'\n" % name)
        f.write("set title '%s'\n" % title)
        f.write("set xlabel '%s'\nset ylabel '%s'\n" % (xlabel, ylabel))
        f.write("set key outside below\nset grid\n")
        if logx:
            f.write("set logscale x\n")
        f.write("plot %s\n" % plots)
    try:
        subprocess.run(["gnuplot", name + ".gp"], cwd=out, check=True)
    except FileNotFoundError:
        pass


SECONDS = {"s": 1, "m": 60, "h": 3600}


def secs(t):
    return float(t[:-1]) * SECONDS[t[-1]]


def tbps(bw):
    return float(bw[:-4]) * (1e3 if bw.endswith("TBps") else 1) / 1e3


def main():
    args = sys.argv[1:]
    jobs = 1
    if "-j" in args:
        i = args.index("-j")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: run.py WEFT OUTDIR [-j N]")
    weft, out = args
    os.makedirs(out, exist_ok=True)
    study = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "study.xml")
    with tempfile.TemporaryDirectory() as tmp:
        res = os.path.join(tmp, "sweep.csv")
        subprocess.run([weft, "sweep", study, "-o", res, "-j", str(jobs)],
                       check=True, stdout=subprocess.DEVNULL)
        with open(res, newline="") as f:
            rows = [row_of(r) for r in csv.DictReader(f)]
    keys = list(rows[0].keys())
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)
    analyze(rows, out)


def analyze(rows, out):
    rep = []
    g = lambda r, k: float(r["goodput." + k])
    by = lambda kind: [r for r in rows if r["study"] == kind]
    big = [r for r in by("gpus") if int(r["gpus"]) == BIG][0]
    rep.append("Llama 3 405B, %d H100, 54 days, failure rates of Llama 3's "
               "run (llama3): MTBF %.1f min, %.0f interruptions expected"
               % (BIG, g(big, "mtbf_s") / 60, g(big, "interruptions")))
    rep.append("")
    rep.append("effective training time against storage bandwidth (optimal "
               "interval, 10 min restarts)")
    rep.append("%-9s %5s %9s %9s %9s %9s %8s" % (
        "bandwidth", "mode", "write s", "block s", "interval", "Young s",
        "eff %"))
    series = {}
    for r in by("bw"):
        rep.append("%-9s %5s %9.2f %9.3f %9.1f %9.1f %8.2f" % (
            r["bw"], r["mode"], g(r, "write_s"), g(r, "block_s"),
            g(r, "interval_s"), g(r, "young_interval_s"),
            100 * g(r, "efficiency")))
        series.setdefault(r["mode"], []).append(
            (tbps(r["bw"]), 100 * g(r, "efficiency")))
    write_plot(out, "efficiency-vs-bandwidth",
               "Llama 3 405B on 131072 H100, 54 days: effective training "
               "time", "storage write bandwidth, TB/s", "effective time, %",
               sorted(series.items()), logx=True)
    rep.append("")
    rep.append("against the checkpoint interval (sync, 10 min restarts)")
    rep.append("%-9s %8s %9s %9s %9s %8s" % (
        "bandwidth", "interval", "rework h", "ckpt h", "restart h", "eff %"))
    series = {}
    for r in by("interval"):
        rep.append("%-9s %8s %9.1f %9.1f %9.1f %8.2f" % (
            r["bw"], r["interval"], g(r, "rework_s") / 3600,
            g(r, "checkpoint_s") / 3600, g(r, "restart_s") / 3600,
            100 * g(r, "efficiency")))
        series.setdefault(r["bw"], []).append(
            (secs(r["interval"]) / 60, 100 * g(r, "efficiency")))
    for bw in series:  # the optimum of each bandwidth, from the bw runs
        opt = [r for r in by("bw") if r["bw"] == bw and r["mode"] == "sync"]
        if opt:
            rep.append("%-9s optimum %.1f s (Young %.1f s, Daly %.1f s): "
                       "%.2f %%" % (bw, g(opt[0], "optimal_interval_s"),
                                    g(opt[0], "young_interval_s"),
                                    g(opt[0], "daly_interval_s"),
                                    100 * g(opt[0], "efficiency")))
    write_plot(out, "efficiency-vs-interval",
               "131072 H100, sync checkpoints: effective time against the "
               "interval", "training time between checkpoints, min",
               "effective time, %",
               [(bw + " storage", pts) for bw, pts in series.items()],
               logx=True)
    rep.append("")
    rep.append("against the restart time (2 TB/s, sync, optimal interval)")
    pts = []
    for r in by("restart"):
        rep.append("restart %-5s rework %6.1f h, checkpoints %5.1f h, "
                   "restarts %6.1f h: %.2f %%" % (
                       r["restart"], g(r, "rework_s") / 3600,
                       g(r, "checkpoint_s") / 3600,
                       g(r, "restart_s") / 3600, 100 * g(r, "efficiency")))
        pts.append((secs(r["restart"]) / 60, 100 * g(r, "efficiency")))
    write_plot(out, "efficiency-vs-restart",
               "131072 H100, 2 TB/s: effective time against restart time",
               "restart time, min", "effective time, %",
               [("sync, optimal interval", pts)])
    rep.append("")
    rep.append("against the GPUs (2 TB/s, sync, optimal interval, 10 min "
               "restarts)")
    pts = []
    for r in by("gpus"):
        rep.append("%6d GPUs: MTBF %6.1f min, %6.0f interruptions, "
                   "interval %6.1f s, %.2f %%" % (
                       int(r["gpus"]), g(r, "mtbf_s") / 60,
                       g(r, "interruptions"), g(r, "interval_s"),
                       100 * g(r, "efficiency")))
        pts.append((int(r["gpus"]), 100 * g(r, "efficiency")))
    write_plot(out, "efficiency-vs-gpus",
               "Llama 3 405B, 54 days, 2 TB/s: effective time against GPUs",
               "GPUs", "effective time, %", [("sync, optimal interval", pts)],
               logx=True)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write("\n".join(rep) + "\n")
    print("\n".join(rep))


if __name__ == "__main__":
    main()
