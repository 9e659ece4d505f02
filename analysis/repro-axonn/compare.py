#!/usr/bin/env python3
"""compare.py OUTDIR - weft beside Singh et al. (arXiv 2305.13525 v3).

Reads OUTDIR/{megatron,axonn}-{dragonfly,fat-tree}.json (weft run --json
--breakdown, written by run.sh), prints weft's figures beside the paper's
row by row into OUTDIR/report.txt (and stdout), and draws
OUTDIR/peak.svg with gnuplot (if installed): per-GPU TFLOP/s of the
paper and of weft for Megatron-LM and AxoNN/Tensor3D.

Also prints, where run.sh wrote them, the paper's 80B shape as the
authors' code sets it (OUTDIR/megatron42-*.json, plan42-*.json) and weft's
collectives on Perlmutter beside the authors' bandwidth constants
(OUTDIR/coll-*.json; COMM_MODEL below).

The paper's numbers are only those of its abstract (README.md says why):
80B GPT, 1024 GPUs of Perlmutter, AxoNN 26 % faster than Megatron-LM,
57 % of the theoretical peak, 182 PFLOP/s in total.  Megatron-LM's rate
is derived from them (177.7 / 1.26), not read.  Only the standard library
and gnuplot are used.
"""
import json
import os
import subprocess
import sys

PEAK = 312.0  # A100 dense BF16 TFLOP/s (NVIDIA A100 datasheet)
GPUS = 1024
PAPER_AXONN = 182e3 / GPUS  # 182 PFLOP/s on 1024 GPUs (abstract)
PAPER_SPEEDUP = 1.26  # "surpasses Megatron-LM ... by 26%" (abstract)
PAPER_MEG = PAPER_AXONN / PAPER_SPEEDUP  # derived, not read
TOPOS = ("dragonfly", "fat-tree")


def load(out, name):
    path = os.path.join(out, name + ".json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def layout(d):
    p = d["inputs"]["plan"]
    if p.get("tensor3d", "none") != "none":
        s = "4D %s x DP %d, %d piece(s)" % (
            str(p["tensor3d"]).replace(",", "x"), d["dp"],
            p.get("overdecompose", 1))
    else:
        s = "TP %d%s PP %d DP %d %s" % (d["tp"], " SP" if p.get("sp") else "",
                                         d["pp"], d["dp"], p.get("schedule"))
    return "%s, mb %s, recompute %s, %s" % (
        s, p.get("micro_batch"), p.get("recompute"),
        "ZeRO-%d" % d["zero"] if d["zero"] else "no ZeRO")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    lines = []
    w = lines.append
    w("Singh et al. (arXiv 2305.13525 v3): 80B GPT on 1024 A100-40GB of Perlmutter")
    w("weft: gpt-76.1b shape with 64 layers (81.1 B parameters), seq 2048, "
      "global batch 2048, BF16")
    w("")
    w("%-9s %-9s %-58s %9s %9s %9s %7s %6s" % (
        "family", "fabric", "layout (weft)", "iter s", "TFLOP/s", "model",
        "% peak", "fits"))
    w("%-9s %-9s %-58s %9s %9.1f %9s %6.1f%% %6s" % (
        "Megatron", "paper", "(not read; derived: AxoNN / 1.26)", "-",
        PAPER_MEG, "-", 100 * PAPER_MEG / PEAK, "-"))
    w("%-9s %-9s %-58s %9s %9.1f %9s %6.1f%% %6s" % (
        "AxoNN", "paper", "(not read)", "-", PAPER_AXONN, "-",
        100 * PAPER_AXONN / PEAK, "-"))
    rate = {}
    for fam in ("megatron", "axonn"):
        for topo in TOPOS:
            d = load(out, "%s-%s" % (fam, topo))
            if d is None:
                w("%-9s %-9s %-58s" % (fam, topo,
                                        "not simulated (FULL=1 run.sh)"))
                continue
            rate[(fam, topo)] = d
            w("%-9s %-9s %-58s %9.3f %9.1f %9.1f %6.1f%% %6s" % (
                fam, topo, layout(d), d["iteration_time_s"],
                d["tflops_per_gpu"], d["model_tflops_per_gpu"],
                100 * d["tflops_per_gpu"] / PEAK,
                "yes" if d["fits_in_memory"] else "NO"))
    w("")
    w("speedup of AxoNN over Megatron-LM: paper %.2fx (abstract)" %
      PAPER_SPEEDUP)
    for topo in TOPOS:
        m, a = rate.get(("megatron", topo)), rate.get(("axonn", topo))
        if m and a:
            w("                                   weft %.2fx (%s, "
              "iteration time)" % (m["iteration_time_s"] /
                                   a["iteration_time_s"], topo))
    w("")
    w("what-if: the same nodes with A100-80GB, fat tree (simulated)")
    w80 = {}
    for name in ("megatron80", "megatron80-fsdp", "axonn80"):
        d = load(out, name + "-fat-tree")
        if d is None:
            w("%-18s not simulated (FULL=1 run.sh)" % name)
            continue
        w80[name] = d
        w("%-18s %-58s %9.3f s %7.1f TFLOP/s %7.1f model  fits %s" % (
            name, layout(d), d["iteration_time_s"], d["tflops_per_gpu"],
            d["model_tflops_per_gpu"],
            "yes" if d["fits_in_memory"] else "NO"))
    if "axonn80" in w80:
        m = min(d["iteration_time_s"] for k, d in w80.items()
                if k.startswith("megatron"))
        w("%-18s speedup of 4D over the faster Megatron-LM plan: %.2fx" % (
            "", m / w80["axonn80"]["iteration_time_s"]))
    w("")
    for gpu in ("A100-40GB", "A100-80GB"):
        closed_form(out, gpu, w)
    paper_shape(out, w)
    collectives(out, w)
    w("where the time goes (critical path of the slowest stage, s)")
    w("%-9s %-9s %8s %8s %8s %8s %8s %8s %8s" % (
        "family", "fabric", "GEMM", "attn", "membound", "TP/grid",
        "PP", "DP", "total"))
    for (fam, topo), d in sorted(rate.items()):
        cp = d["breakdown"]["critical_path"]
        w("%-9s %-9s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f" % (
            fam, topo, cp["compute_gemm_s"], cp["compute_attention_s"],
            cp["compute_memory_bound_s"], cp["comm_s"]["tp"],
            cp["comm_s"]["pp"], cp["comm_s"]["dp"], cp["total_s"]))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(text)
    plot(rate, out)


# The AxoNN authors' bandwidths (GB/s) for a collective by placement
# (axonn-ai/Megatron-AxoNN, branch gordon-bell-perlmutter 885d2e7,
# examples/comm_model.py get_bw(ip, my, "perlmutter"): ip, the stride of
# the group's members; my, their number), against weft coll's bus
# bandwidth for the same placement (run.sh: 1 GiB; a stride of 4 is one
# GPU per node, so it runs as nodes of 1 GPU and 1 NIC).
COMM_MODEL = (
    ("in4", "4 GPUs of one node (ip 1, my 4)", 225),
    ("n2", "2 whole nodes, 8 GPUs (ip 1, my >= 8)", 80),
    ("n16", "16 whole nodes, 64 GPUs (ip 1, my >= 8)", 80),
    ("n64", "64 whole nodes, 256 GPUs (ip 1, my >= 8)", 80),
    ("pn2", "2 GPUs per node, 8 nodes (ip 2, my >= 4)", 40),
    ("pn1", "1 GPU per node, 64 nodes (ip >= 4)", 20),
)


def paper_shape(out, w):
    w("the paper's 80B shape from the authors' code: 42 layers, hidden "
      "12288, 96 heads, seq 2048 (76.8 B in weft's count), global batch 2048")
    for topo in TOPOS:
        d = load(out, "megatron42-%s" % topo)
        if d is None:
            continue
        w("%-9s %-9s %-58s %9.3f s %7.1f TFLOP/s %5.1f%% peak  fits %s" % (
            "megatron", topo, layout(d), d["iteration_time_s"],
            d["tflops_per_gpu"], 100 * d["tflops_per_gpu"] / PEAK,
            "yes" if d["fits_in_memory"] else "NO"))
    closed_form(out, "A100-40GB", w, "plan42")


def collectives(out, w):
    w("collectives of 1 GiB on weft's Perlmutter against the AxoNN "
      "authors' bandwidths (GB/s)")
    w("%-45s %7s %19s %19s" % ("placement", "authors", "weft AG/AR dragonfly",
                               "weft AG/AR fat-tree"))
    for name, what, bw in COMM_MODEL:
        cells = []
        for topo in TOPOS:
            v = []
            for op in ("all_gather", "all_reduce"):
                d = load(out, "coll-%s-%s-%s" % (topo, name, op))
                v.append("%.1f" % d["results"][0]["busbw_GBps"] if d
                         else "-")
            cells.append("%19s" % " / ".join(v))
        w("%-45s %7d %s" % (what, bw, " ".join(cells)))
    w("")


def closed_form(out, gpu, w, prefix="plan"):
    w("best plan of each family by weft's closed form on %s (weft plan "
      "--budget 0; no simulation)" % gpu)
    best = {}
    for topo in TOPOS:
        for fam in ("megatron", "tensor3d"):
            d = load(out, "%s-%s-%s-%s" % (prefix, gpu, fam, topo))
            if d is None or not d["plans"]:
                continue
            p = d["plans"][0]
            split = ("4D %s x DP %d k%d" % (p["tensor3d"].replace(",", "x"),
                                           p["dp"], p["pieces"])
                     if p["tensor3d"] else "TP %d PP %d DP %d %s" % (
                         p["tp"], p["pp"], p["dp"], p["schedule"]))
            best[(fam, topo)] = p["estimate_s"]
            w("%-9s %-9s %-58s %9.3f s est., exposed comm %.3f s, %.1f GB"
              % (fam, topo, "%s mb %d %s %s" % (
                  split, p["micro_batch"], p["recompute"], p["sharding"]),
                 p["estimate_s"], p["exposed_comm_s"],
                 p["memory_per_gpu_bytes"] / 1e9))
        if ("megatron", topo) in best and ("tensor3d", topo) in best:
            w("%-9s %-9s closed-form speedup of 4D over Megatron-LM: %.2fx"
              % ("", topo, best[("megatron", topo)] /
                 best[("tensor3d", topo)]))
    w("")


def plot(rate, out):
    # Model FLOPs per GPU and iteration (no recomputation counted), from
    # any simulated run: the same job whatever the layout.
    flop = None
    for d in rate.values():
        flop = d["model_tflops_per_gpu"] * d["iteration_time_s"]
        break
    rows = []
    for label, fam, plan_fam, paper in (
            ("Megatron-LM", "megatron", "megatron", PAPER_MEG),
            ("AxoNN 4D", "axonn", "tensor3d", PAPER_AXONN)):
        vals = []
        for topo in TOPOS:
            d = rate.get((fam, topo))
            vals.append("%.1f" % d["model_tflops_per_gpu"] if d else "NaN")
        for topo in TOPOS:
            d = load(out, "plan-A100-40GB-%s-%s" % (plan_fam, topo))
            ok = flop is not None and d is not None and d["plans"]
            vals.append("%.1f" % (flop / d["plans"][0]["estimate_s"])
                        if ok else "NaN")
        rows.append('"%s" %.1f %s' % (label, paper, " ".join(vals)))
    with open(os.path.join(out, "peak.dat"), "w") as f:
        f.write("# family paper weft-sim-dragonfly weft-sim-fat-tree "
                "weft-closed-form-dragonfly weft-closed-form-fat-tree "
                "(model TFLOP/s per GPU, recomputation not counted)\n" +
                "\n".join(rows) + "\n")
    cmds = [
        "set terminal svg size 900,560 dynamic",
        "set output 'peak.svg'",
        "set title \"80B GPT on 1024 A100 of Perlmutter: paper (abstract; "
        "Megatron-LM derived as AxoNN/1.26)\\nagainst weft (perlmutter "
        "preset, dragonfly and fat tree)\"",
        "set ylabel 'model TFLOP/s per GPU (A100 BF16 peak 312)'",
        "set yrange [0:312]",
        "set style data histograms",
        "set style histogram clustered gap 1",
        "set style fill solid 0.8 border -1",
        "set grid ytics",
        "set key top left",
        "set y2tics ('50 %%' 156, '57 %%' 177.8)",
        "set y2range [0:312]",
        "plot 'peak.dat' using 2:xtic(1) title 'paper (abstract)', "
        "'' using 3 title 'weft simulated, dragonfly', "
        "'' using 4 title 'weft simulated, fat tree', "
        "'' using 5 title 'weft closed form, dragonfly', "
        "'' using 6 title 'weft closed form, fat tree'",
    ]
    with open(os.path.join(out, "peak.gp"), "w") as f:
        f.write("\n".join(cmds) + "\n")
    try:
        subprocess.run(["gnuplot", "peak.gp"], cwd=out, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("compare.py: gnuplot: %s\n" % e)


if __name__ == "__main__":
    main()
