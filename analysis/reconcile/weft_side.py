#!/usr/bin/env python3
"""weft's side of the step reconciliation (analysis/reconcile/README.md).

Runs `weft graph` (kernel shapes, FLOPs, bytes) and `weft run --chrome`
(each task's simulated start and duration) for one job, joins them on the
task index of rank 0, names each kernel by its role in the layer (QKV, O,
W13, W2 GEMMs; attention; norms; element-wise passes) and prints:
  1. one layer's forward and backward kernels with their predicted times,
  2. the whole step per kernel class (layers, head, loss, optimizer),
  3. rank 0's busy time per stream and the compute stream's gaps.
Standard library only.  Usage:
  weft_side.py [--weft build/weft] [-- extra weft settings]
The default job is the reconciled step: Llama 3 8B, 8 x H100 SXM (one DGX
H100), FSDP over 8 GPUs, micro-batch 1 of 8192 tokens, BF16, no
recomputation; the extra settings replace or add to it.
"""
import json
import os
import subprocess
import sys
import tempfile

DEFAULT_JOB = ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
               "--fsdp", "yes", "--micro-batch", "1", "--global-batch", "8",
               "--dtype", "bf16", "--recompute", "none"]


def merge(base, extra):
    """The default job with each --flag VALUE of extra replacing the same
    flag's (weft refuses a setting given twice); new flags are appended."""
    pairs = [[base[i], base[i + 1]] for i in range(0, len(base), 2)]
    i = 0
    while i < len(extra):
        flag = extra[i]
        val = extra[i + 1] if i + 1 < len(extra) else None
        if val is None or val.startswith("--"):
            pairs.append([flag])
            i += 1
            continue
        for p in pairs:
            if p[0] == flag:
                p[1] = val
                break
        else:
            pairs.append([flag, val])
        i += 2
    return [w for p in pairs for w in p]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("weft_side: %s failed:\n%s" % (" ".join(cmd), r.stderr))
    return r


def read_graph(path):
    """Stage 0's task lines as dicts (traces/README.md, format version 1)."""
    tasks = []
    with open(path) as f:
        in_stage = False
        for line in f:
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            if w[0] == "stage":
                if in_stage:
                    break
                in_stage = w[1] == "0"
                continue
            if not in_stage or w[0] not in ("kernel", "coll", "send", "recv"):
                continue
            tasks.append({"kind": w[0], "op": w[1], "stream": w[2],
                          "phase": w[3], "layer": int(w[8]),
                          "m": int(w[9]), "n": int(w[10]), "k": int(w[11]),
                          "batch": int(w[12]), "flops": float(w[13]),
                          "bytes": float(w[14])})
    return tasks


def read_trace(path):
    """Rank 0's (pid 0) complete events: task index -> (start, dur) in us."""
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    out = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("pid") == 0 and "task" in e.get("args", {}):
            out[e["args"]["task"]] = (e["ts"], e["dur"], e["tid"])
    return out


def gemm_role(t, hidden, ffn, vocab, qkv):
    """Name a GEMM by the weight dimension only it has: the vocabulary (LM
    head), 2 x FFN (gate and up fused, W13), FFN (down, W2), the fused QKV
    width; what is left is the attention output projection (O)."""
    dims = {t["m"], t["n"], t["k"]}
    for d, name in ((vocab, "lm_head"), (2 * ffn, "W13"), (ffn, "W2"),
                    (qkv, "QKV")):
        if d in dims:
            return name
    return "O"


def role(t, shape, seen):
    op = t["op"]
    h, ffn, vocab, qkv = shape
    if op == "gemm":
        return gemm_role(t, h, ffn, vocab, qkv)
    if op == "elemwise":
        # Element-wise passes in builder order within a layer: forward
        # residual add, SwiGLU, residual add; backward likewise reversed.
        if t["layer"] < 0:
            return "loss (cross-entropy)" if t["bytes"] > 1e9 else "embed/misc"
        if t["bytes"] > 3 * seen["act_bytes"]:
            return "SwiGLU"
        return "residual add"
    return {"attn": "attention", "attn_bwd": "attention",
            "norm": "RMSNorm", "embed": "embedding", "optim": "optimizer",
            "loss": "loss (cross-entropy)"}.get(op, op)


def main():
    argv = sys.argv[1:]
    weft = "build/weft"
    if len(argv) >= 2 and argv[0] == "--weft":
        weft, argv = argv[1], argv[2:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    job = merge(DEFAULT_JOB, argv)
    tmp = tempfile.mkdtemp(prefix="weft-recon-")
    gpath, cpath = os.path.join(tmp, "g.txt"), os.path.join(tmp, "c.json")
    run([weft, "graph", "-q"] + job + ["-o", gpath])
    summ = run([weft, "run", "-q", "--json"] + job + ["--chrome", cpath]).stdout
    tasks = read_graph(gpath)
    times = read_trace(cpath)
    res = json.loads(summ)

    model = {}
    with open(gpath) as f:
        for line in f:
            if line.startswith("model "):
                for kv in line.split()[2:]:
                    a, b = kv.split("=")
                    model[a] = int(b)
                break
    h, ffn, vocab = model["hidden"], model["ffn"], model["vocab"]
    heads, kvh = model["heads"], model["kv_heads"]
    qkv = h + 2 * h // heads * kvh
    shape = (h, ffn, vocab, qkv)
    seen = {"act_bytes": min(t["bytes"] for t in tasks if t["op"] == "norm")}

    print("weft %s" % " ".join(job))
    print("iteration %.4f s; weft commit: %s" % (
        res["iteration_time_s"],
        run(["git", "rev-parse", "--short", "HEAD"]).stdout.strip()))
    print()
    print("1. one Transformer layer (layer 0), rank 0, predicted kernel times")
    print("(TFLOP/s of attention: Megatron's count, 4 b s^2 h forward, no causal"
          " discount; the kernel does half that work)")
    print("%-5s %-22s %-24s %10s %10s %9s %8s" % (
        "phase", "kernel", "shape m x n x k [batch]", "GFLOP", "MB", "time us", "TFLOP/s"))
    layer_sum = {}
    for i, t in enumerate(tasks):
        if t["kind"] != "kernel" or t["layer"] != 0 or i not in times:
            continue
        r = role(t, shape, seen)
        d = times[i][1]
        shp = "%dx%dx%d" % (t["m"], t["n"], t["k"]) if t["m"] else "-"
        if t["batch"] > 1:
            shp += " [%d]" % t["batch"]
        tf = t["flops"] / (d * 1e-6) / 1e12 if t["flops"] else 0
        print("%-5s %-22s %-24s %10.1f %10.1f %9.1f %8s" % (
            t["phase"], r, shp, t["flops"] / 1e9, t["bytes"] / 1e6, d,
            "%.0f" % tf if tf else "-"))
        key = (t["phase"], cls(r))
        layer_sum[key] = layer_sum.get(key, 0) + d
    print()
    print("   layer 0 by class, us:")
    tot = sum(layer_sum.values())
    for c in CLASSES:
        f, b = layer_sum.get(("fwd", c), 0), layer_sum.get(("bwd", c), 0)
        if f or b:
            print("   %-26s fwd %8.1f  bwd %8.1f  sum %8.1f  %5.1f %%" % (
                c, f, b, f + b, 100 * (f + b) / tot))
    print("   %-26s %40.1f" % ("layer total", tot))

    print()
    print("2. the whole step on rank 0 by kernel class (compute stream)")
    step = {}
    comm = {}
    busy_compute = []
    for i, t in enumerate(tasks):
        if i not in times:
            continue
        ts, d, tid = times[i]
        if t["kind"] == "kernel":
            c = cls(role(t, shape, seen)) if t["layer"] >= 0 or t["op"] != "gemm" \
                else "GEMM (LM head)"
            if t["layer"] < 0 and t["op"] == "elemwise" and t["bytes"] > 1e9:
                c = "loss (cross-entropy)"
            step[c] = step.get(c, 0) + d
            busy_compute.append((ts, ts + d))
        else:
            key = "%s %s" % (t["op"], t["stream"])
            comm[key] = comm.get(key, 0) + d
    tot = sum(step.values())
    it_us = res["iteration_time_s"] * 1e6
    for c in CLASSES[:4] + ["GEMM (LM head)", "loss (cross-entropy)"] + CLASSES[4:]:
        if c in step:
            print("   %-26s %10.1f us  %5.1f %% of kernel time  %5.1f %% of step" % (
                c, step[c], 100 * step[c] / tot, 100 * step[c] / it_us))
    print("   %-26s %10.1f us" % ("kernels", tot))
    busy_compute.sort()
    gaps, end = 0.0, 0.0
    for a, b in busy_compute:
        if a > end:
            gaps += a - end
        end = max(end, b)
    print("   %-26s %10.1f us  %5.1f %% of step (waits for gathers, none for the host)" % (
        "compute stream idle", gaps + (it_us - end), 100 * (gaps + it_us - end) / it_us))
    print("   communication streams (busy, overlapped or not):")
    for k in sorted(comm):
        print("     %-24s %10.1f us" % (k, comm[k]))
    print("   iteration                  %10.1f us; exposed comm %.1f us, overlapped %.1f us" % (
        it_us, res["exposed_comm_s"] * 1e6, res["overlapped_comm_s"] * 1e6))


CLASSES = ["GEMM (linear layers)", "attention", "RMSNorm", "element-wise",
           "embedding", "optimizer"]


def cls(r):
    if r in ("QKV", "O", "W13", "W2"):
        return "GEMM (linear layers)"
    if r == "lm_head":
        return "GEMM (LM head)"
    if r in ("SwiGLU", "residual add", "embed/misc"):
        return "element-wise"
    if r == "RMSNorm":
        return "RMSNorm"
    return r


if __name__ == "__main__":
    main()
