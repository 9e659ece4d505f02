#!/usr/bin/env python3
"""fit_attention.py - derive weft's fused-attention constants from kernel rows.

The model (workloads/costmodel.c, cost_attn_rate) gives a fused attention
kernel's throughput at the benchmark count of FlashAttention's and cuDNN's
benchmarks (forward 4*b*h*s^2*d FLOPs, backward 2.5x that, a causal kernel
counted at half):

    R(dir, s, d, causal) = peak * E_dir * g(d) * s / (s + s0)
                                           * (s / (s + c) if causal)

E_fwd, E_bwd: fraction of dense BF16 peak at head dim 128 and long sequences;
g(d): 1 at d = 128, g64 at d = 64, g256 at d = 256, linear in log2(d) between
and held beyond; s0: the sequence length at which the kernel reaches half its
ceiling (short sequences: too few tiles, prologue/epilogue); c: the causal
kernel's extra loss (the diagonal tiles it computes in full, fewer tiles to
spread over the SMs).  A causal kernel does about half the work of the full
count, which is what the benchmark count says, so a causal kernel's time is
(F_full / 2) / R.

Rows (shared/validation/kernels.csv and analysis/kernels, our H100):
  H100 flash2: fitted on our own FlashAttention-2 rows (PyTorch's port,
               analysis/kernels/h100_kernels_2026-11-22.csv, attn_flash*,
               fwd and bwd_derived, d 64/128, causal and not, s 512..16384);
               held back: every KERN-ATTN-FA2-H100-* row (Shah et al. 2024).
  H100 cudnn:  fitted on our own cuDNN rows (attn_cudnn*); held back: every
               KERN-ATTN-CUDNN-H100-* row (Shah et al. 2024).
  H100 flash3: fitted on the KERN-FA3-H100-* forward and backward rows at
               s = 1024, 4096, 16384; held back: s = 512, 2048, 8192.
  A100 flash2: fitted on KERN-FA2-A100-FWDBWD-* at s = 1024, 4096, 16384
               (forward+backward only: one E for both directions); held back:
               s = 512, 2048, 8192.
The FA3 paper's backward rows do not state causality; they are taken as
non-causal (its backward figure shows no causal panel).  FP8 attention,
Triton, FlashAttention-1 and xformers rows are not modelled.

Without shared/validation (a clean clone of the repository alone) the rows
come from the digest tests/validation/attn_rows.csv that --rows wrote.

Usage: fit_attention.py            print the constants and every row
       fit_attention.py --check    compare them with platforms/catalog.xml
       fit_attention.py --rows F   write the digested rows for
                                   tests/validation/attn_rows (gpu, kernel,
                                   dir, s, d, causal, measured TF/s, role)
"""
import csv
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(ROOT, "..", "shared", "validation", "kernels.csv")
OURS = os.path.join(HERE, "kernels", "h100_kernels_2026-11-22.csv")
CATALOG = os.path.join(ROOT, "platforms", "catalog.xml")
PEAK = {"H100-SXM": 989.4, "A100-80GB": 312.0}  # dense BF16 TFLOP/s
FIT_SEQ = (1024, 4096, 16384)


def published():
    """Rows of kernels.csv as (gpu, kernel, dir, s, d, causal, tflops, id)."""
    out = []
    names = {
        ("H100", "FlashAttention-2 forward"): ("flash2", "fwd"),
        ("H100", "FlashAttention-2 backward"): ("flash2", "bwd"),
        ("H100", "FlashAttention-2 forward+backward"): ("flash2", "fwdbwd"),
        ("H100", "FlashAttention-3 forward"): ("flash3", "fwd"),
        ("H100", "FlashAttention-3 backward"): ("flash3", "bwd"),
        ("H100", "cuDNN fused attention forward"): ("cudnn", "fwd"),
        ("H100", "cuDNN fused attention backward"): ("cudnn", "bwd"),
        ("A100", "FlashAttention-2 forward+backward"): ("flash2", "fwdbwd"),
    }
    with open(KERNELS, newline="") as f:
        for r in csv.DictReader(f):
            gpu = r["gpu"]
            key = ("H100" if gpu.startswith("H100 80GB SXM5") else
                   "A100" if gpu.startswith("A100 80GB SXM4") else None,
                   r["kernel"])
            if key not in names or r["metric"] != "achieved_tflops":
                continue
            shape = dict(kv.split("=") for kv in r["shape"].split(",")
                         if "=" in kv)
            kern, d = names[key]
            causal = shape.get("causal", "no") == "yes"
            out.append(("H100-SXM" if key[0] == "H100" else "A100-80GB", kern,
                        d, int(shape["seqlen"]), int(shape["hdim"]), causal,
                        float(r["value"]), r["case_id"]))
    return out


def ours():
    """Our H100 rows (fwd, bwd_derived, fwd_bwd) as published() does."""
    out = []
    with open(OURS, newline="") as f:
        for r in csv.DictReader(f):
            m = re.fullmatch(r"attn_(flash|cudnn)(_causal)?", r["kernel"])
            if not m or r["direction"] not in ("fwd", "bwd_derived", "fwd_bwd"):
                continue
            bh, s, d = (int(x) for x in r["shape"].split("x"))
            kern = "flash2" if m.group(1) == "flash" else "cudnn"
            dr = {"fwd": "fwd", "bwd_derived": "bwd", "fwd_bwd": "fwdbwd"}[
                r["direction"]]
            out.append(("H100-SXM", kern, dr, s, d, bool(m.group(2)),
                        float(r["tflops"]),
                        "ours:%s:%s:%s" % (r["kernel"], r["shape"], dr)))
    return out


def g_of(d, g64, g256):
    x = math.log2(max(64, min(256, d)))
    return g64 + (1 - g64) * (x - 6) if x <= 7 else 1 + (g256 - 1) * (x - 7)


def rate(p, peak, dr, s, d, causal):
    """The model's TF/s at the benchmark count; p[dir] holds the
    direction's eff, g64, g256, s0 and c."""
    def one(q):
        r = peak * q["eff"] * g_of(d, q["g64"], q["g256"]) * s / (s + q["s0"])
        return r * s / (s + q["c"]) if causal else r
    if dr == "fwdbwd":
        return 3.5 / (1 / one(p["fwd"]) + 2.5 / one(p["bwd"]))
    return one(p[dr])


def solve(a, b):
    """Least squares by the normal equations (small, well-posed systems)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] +
         [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        for k in range(n):
            if k != i and m[i][i]:
                f = m[k][i] / m[i][i]
                m[k] = [x - f * y for x, y in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def fit_dir(rows, peak):
    """One direction's eff, g64, g256, s0, c: a grid over s0 and c, linear
    least squares in log space for the rest (log g(d) enters at the fitted
    head dims 64 and 256, where it is exact)."""
    has256 = any(r[4] == 256 for r in rows)
    has64 = any(r[4] == 64 for r in rows)
    best = None
    for s0 in range(0, 2049, 16):
        for c in range(0, 2049, 16):
            a, b = [], []
            for _, _, _, s, d, causal, v, _ in rows:
                x = math.log2(max(64, min(256, d)))
                row = [1.0]
                if has64:
                    row.append(1.0 if x <= 6 else 0.0)
                if has256:
                    row.append(1.0 if x >= 8 else 0.0)
                y = math.log(v / peak) - math.log(s / (s + s0))
                if causal:
                    y -= math.log(s / (s + c))
                a.append(row)
                b.append(y)
            sol = solve(a, b)
            err = sum((sum(x * w for x, w in zip(r, sol)) - y) ** 2
                      for r, y in zip(a, b))
            if best is None or err < best[0] - 1e-12:
                best = (err, s0, c, sol)
    _, s0, c, sol = best
    q = {"eff": math.exp(sol[0]), "g64": 1.0, "g256": 1.0, "s0": float(s0),
         "c": float(c)}
    i = 1
    if has64:
        q["g64"] = math.exp(sol[i])
        i += 1
    if has256:
        q["g256"] = math.exp(sol[i])
    return {k: (round(v, 4) if k in ("eff", "g64", "g256") else v)
            for k, v in q.items()}


def fit(rows, peak):
    """Both directions; when the rows are forward+backward only, one set of
    constants serves both directions."""
    if all(r[2] == "fwdbwd" for r in rows):
        q = fit_dir(rows, peak)
        return {"fwd": q, "bwd": dict(q)}
    p = {dr: fit_dir([r for r in rows if r[2] == dr], peak)
         for dr in ("fwd", "bwd")}
    # A direction without causal rows (FA3's backward) takes the other's
    # causal loss rather than none.
    for dr, other in (("fwd", "bwd"), ("bwd", "fwd")):
        if not any(r[5] for r in rows if r[2] == dr):
            p[dr]["c"] = p[other]["c"]
    return p


DIGEST = os.path.join(ROOT, "tests", "validation", "attn_rows.csv")


def groups_from_digest():
    """The same groups from the committed digest (--rows), for a checkout
    without shared/validation (CI's clean clone)."""
    spec = {}
    with open(DIGEST, newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            row = (r["gpu"], r["kernel"], r["dir"], int(r["seq"]),
                   int(r["head_dim"]), r["causal"] == "1", float(r["tflops"]),
                   r["source"])
            g = spec.setdefault((r["gpu"], r["kernel"]), ([], []))
            g[r["role"] != "fit"].append(row)
    return [(gpu, kern, fit_rows, check)
            for (gpu, kern), (fit_rows, check) in spec.items()]


def groups():
    if not os.path.exists(KERNELS):
        return groups_from_digest()
    pub, own = published(), ours()
    spec = []
    for kern in ("flash2", "cudnn"):
        fit_rows = [r for r in own if r[1] == kern and r[2] != "fwdbwd"]
        check = ([r for r in own if r[1] == kern and r[2] == "fwdbwd"] +
                 [r for r in pub if r[0] == "H100-SXM" and r[1] == kern])
        spec.append(("H100-SXM", kern, fit_rows, check))
    fa3 = [r for r in pub if r[0] == "H100-SXM" and r[1] == "flash3"]
    spec.append(("H100-SXM", "flash3", [r for r in fa3 if r[3] in FIT_SEQ],
                 [r for r in fa3 if r[3] not in FIT_SEQ]))
    a = [r for r in pub if r[0] == "A100-80GB"]
    spec.append(("A100-80GB", "flash2", [r for r in a if r[3] in FIT_SEQ],
                 [r for r in a if r[3] not in FIT_SEQ]))
    return spec


def main():
    results = {}
    lines = []
    for gpu, kern, fit_rows, check in groups():
        peak = PEAK[gpu]
        p = fit(fit_rows, peak)
        results[(gpu, kern)] = p
        print("%s %s (%d rows fitted, %d held back)" %
              (gpu, kern, len(fit_rows), len(check)))
        for dr in ("fwd", "bwd"):
            q = p[dr]
            print("  %s: eff %.4f d64 %.4f d256 %.4f seq_half %g causal_seq %g"
                  % (dr, q["eff"], q["g64"], q["g256"], q["s0"], q["c"]))
        for role, rows in (("fit", fit_rows), ("held", check)):
            errs = []
            for r in rows:
                m = rate(p, peak, r[2], r[3], r[4], r[5])
                errs.append(abs(m / r[6] - 1))
                lines.append("%s,%s,%s,%d,%d,%d,%g,%s,%s" %
                             (gpu, kern, r[2], r[3], r[4], int(r[5]), r[6],
                              role, r[7]))
            if errs:
                print("  %-4s rows %3d: mean |error| %.1f %%, worst %.1f %%" %
                      (role, len(errs), 100 * sum(errs) / len(errs),
                       100 * max(errs)))
    if "--rows" in sys.argv:
        path = sys.argv[sys.argv.index("--rows") + 1]
        with open(path, "w") as f:
            f.write("# Fused-attention rows digested by analysis/fit_attention.py"
                    " --rows: measured TF/s at the\n# benchmark count (causal"
                    " = half; backward 2.5x forward); role: fit or held "
                    "(held back).\n")
            f.write("gpu,kernel,dir,seq,head_dim,causal,tflops,role,source\n")
            f.write("\n".join(lines) + "\n")
    if "--check" in sys.argv:
        text = open(CATALOG).read()
        bad = 0
        for (gpu, kern), p in results.items():
            m = re.search(r'<gpu name="%s".*?</gpu>' % re.escape(gpu), text,
                          re.S)
            a = m and re.search(r'<attention kernel="%s"([^>]*)/>' % kern,
                                m.group(0))
            if not a:
                print("FAIL: no %s attention entry for %s" % (kern, gpu))
                bad += 1
                continue
            attrs = dict(re.findall(r'(\w+)="([^"]*)"', a.group(1)))
            for dr in ("fwd", "bwd"):
                q = p[dr]
                want = {"eff": q["eff"], "d64": q["g64"], "d256": q["g256"],
                        "seq_half": q["s0"], "causal_seq": q["c"]}
                for k, v in want.items():
                    got = attrs.get(dr + "_" + k)
                    if got is None or abs(float(got) - v) > 1e-9 * max(1, v):
                        print("FAIL: %s %s %s_%s = %s, the fit gives %g" %
                              (gpu, kern, dr, k, got, v))
                        bad += 1
        print("attention constants: %s" % ("match" if not bad else
                                           "%d differ" % bad))
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
