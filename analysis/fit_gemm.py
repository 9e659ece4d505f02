#!/usr/bin/env python3
"""fit_gemm.py - derive weft's GEMM shape constants from kernel rows.

The model (workloads/costmodel.c, cost_gemm_efficiency_in):

    eff = ceiling_dt * wave(m, n) * k / (k + k_half_dt)
    time = max(2mnk / (peak_dt * eff), bytes / (hbm_bw * mem_eff)) + launch

wave: the share of the last wave of 128x128 output tiles that keeps the
SMs busy (a batched GEMM counts batch x m rows).  k / (k + k_half): a tile
pays a fixed prologue and epilogue (pipeline fill, writing C) besides its
k / 64 or k / 128 main-loop steps, so a short reduction runs below the
ceiling; k_half is the K at which the tile spends as long on that fixed
part as on its math, and it grows with the math rate: FP8's tensor cores
finish a K-step twice as fast, so FP8's k_half is larger.

Constants and the rows they come from (everything else is held back):
  Hopper   k_half BF16: the K sweep of XLA's sm_90 table (cuBLAS, XLA's
           default GEMM backend; batch 4, M = N = 4096, K = 256..4096,
           KERN-GEMM-SM90-BF16-XLA-b4-4096x4096x*); k_half FP8: our FP8 K
           sweep (analysis/kernels, sweepK: M = N = 8192, K = 128..16384,
           cuBLASLt _scaled_mm).  A free scale absorbs clocks: only the
           shape of each sweep is used.  TileLang's K sweeps on H800 (a
           different kernel library) fall faster with short K (k_half
           about 260 BF16, 830 FP8) and are held back with the rest.
           Ceilings: our sustained 8192^3 rows (analysis/kernels,
           gemm_sustained: 8 s at the 700 W cap), BF16 and FP8.
  Blackwell k_half: the K sweeps of XLA's sm_100 table at M = N = 4096,
           batch 4 (KERN-GEMM-SM100-{BF16,FP8}-XLA-b4-4096x4096x*), shape
           only.  Ceilings stay the estimate 0.7 (BF16 and FP8): the
           table's 4096^3 rows give 0.81 and 0.85 of peak, but they are
           short benchmarks of an unnamed 1000 W sm_100 part with unstated
           clocks, and weft's ceilings are sustained ones (H100 loses
           10-15 % from short runs to its power cap).
  Ampere   no GEMM rows: k_half 64 and gemm_eff 0.8 stay estimates.
Grouped GEMMs (MoE experts, every row held back, sets "g-..."): DeepGEMM's
contiguous and masked m-grouped FP8 GEMMs on H800 (fine-grained scaling)
and torchao's blockwise-FP8 grouped GEMMs on H100 (forward, data and weight
gradients; the weight gradient, a different and slow kernel, is its own
set).  They use the dense ceilings and k_half; no constant of their own.
Held back: XLA's sm_90 table (KERN-GEMM-SM90-BF16-XLA*, H100-class), our
H100 rows (analysis/kernels, gemm: K, M and N sweeps and the linear layers of
five models, BF16 and FP8), DeepGEMM's dense FP8 rows on H800 (a different
kernel: fine-grained scaling), and XLA's sm_100 N sweeps.

Most held-back rows are short benchmarks near the boost clock, while
weft's ceilings are sustained under the power cap: the model is slower
than them by the clock ratio (about 10 % on H100), and the summary prints
that offset (the median of model/measured) with the errors.

Without shared/validation (a clean clone of the repository alone) the rows
come from the digest tests/validation/gemm_rows.csv that --rows wrote.

Usage: fit_gemm.py            print the constants and the rows' errors
       fit_gemm.py --check    compare the constants with platforms/catalog.xml
       fit_gemm.py --rows F   write the digested rows for tests/validation
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
# Blackwell's ceilings stay the catalog's estimate: the only rows are short
# benchmarks whose clocks are not stated, and weft's ceilings are sustained.
BLACKWELL_CEILING = 0.7
GPUS = {  # peak dense TFLOP/s BF16, FP8; SMs
    "H100-SXM": (989.4, 1978.9, 132),
    "B200": (2250.0, 4500.0, 148),
}


def wave(m, n, sms, tile=128):
    tiles = math.ceil(m / tile) * math.ceil(n / tile)
    return tiles / (math.ceil(tiles / sms) * sms)


def sweep_k_half(rows, sms):
    """Fit rate = A * wave * k / (k + K0) to a K sweep; returns K0."""
    best = None
    for k0 in range(0, 4097, 4):
        xs = [(wave(m, n, sms) * k / (k + k0), r) for m, n, k, r in rows]
        # A by least squares in log space: mean of log(r / x).
        la = sum(math.log(r / x) for x, r in xs) / len(xs)
        err = sum((math.log(r / x) - la) ** 2 for x, r in xs)
        if best is None or err < best[0]:
            best = (err, k0)
    return float(best[1])


# Published GEMM rows by case-id prefix: the GPU weft models them as, the
# precision, and the set they belong to.
SETS = {
    "KERN-GEMM-H800-FP16-TILELANG": ("H100-SXM", "bf16", "tilelang"),
    "KERN-GEMM-H800-FP8-TILELANG": ("H100-SXM", "fp8", "tilelang"),
    "KERN-GEMM-H800-FP8-DEEPGEMM": ("H100-SXM", "fp8", "deepgemm"),
    "KERN-GEMM-SM90-BF16-XLA": ("H100-SXM", "bf16", "xla"),
    "KERN-GEMM-SM100-BF16-XLA": ("B200", "bf16", "xla"),
    "KERN-GEMM-SM100-FP8-XLA": ("B200", "fp8", "xla"),
}


def achieved_rows():
    """kernels.csv's TF/s rows: (case id, shape as a dict, TF/s); the shape's
    "k=v" pairs before any parenthesised remark."""
    with open(KERNELS, newline="") as f:
        for r in csv.DictReader(f):
            if r["metric"] != "achieved_tflops":
                continue
            shape = dict(kv.strip().split("=") for kv in
                         r["shape"].split("(")[0].split(",") if "=" in kv)
            yield r["case_id"], shape, float(r["value"])


def published():
    out = []
    for cid, shape, v in achieved_rows():
        if not {"M", "N", "K"} <= set(shape):
            continue
        m, n, k = int(shape["M"]), int(shape["N"]), int(shape["K"])
        b = int(shape.get("b", 1))
        for prefix, (gpu, dt, src) in SETS.items():
            if cid.startswith(prefix):
                out.append((gpu, dt, m, n, k, b, v, src, cid))
    return out


# Grouped GEMM rows (MoE experts in one kernel) by case-id prefix: the GPU,
# precision and set (sets of grouped rows start with "g-": the model tiles
# each group on its own, costmodel.c cost_ggemm_efficiency_in).
GROUPED = {
    "KERN-GGEMM-H800-FP8-DEEPGEMM-CONTIG": ("H100-SXM", "fp8", "g-deepgemm"),
    "KERN-GGEMM-H800-FP8-DEEPGEMM-MASKED": ("H100-SXM", "fp8",
                                           "g-deepgemm-masked"),
    "KERN-GGEMM-H100-FP8BLK-DEEPGEMM_GROUPED_MM_WGRAD": (
        "H100-SXM", "fp8", "g-torchao-wgrad"),
    "KERN-GGEMM-H100-FP8BLK-DEEPGEMM_GROUPED_MM": ("H100-SXM", "fp8",
                                                  "g-torchao"),
}


def published_grouped():
    """Grouped rows as (gpu, dt, m, n, k, groups, TF/s, set, id), shapes per
    group.  DeepGEMM's: groups x M_per_group rows.  torchao's: M tokens
    balanced over E experts, forward [M/E x K] @ [K x N], data gradient
    [M/E x N] @ [N x K], weight gradient [N x M/E] @ [M/E x K] per expert.
    B200's MXFP8 rows give a fraction of a peak their README does not state,
    so they are not used."""
    out = []
    for cid, sh, v in achieved_rows():
        for prefix, (gpu, dt, src) in GROUPED.items():
            if not cid.startswith(prefix):
                continue
            if "groups" in sh:
                g, m = int(sh["groups"]), int(sh["M_per_group"])
                n, k = int(sh["N"]), int(sh["K"])
            else:
                g = int(sh["experts"])
                t, n, k = int(sh["M"]) // g, int(sh["N"]), int(sh["K"])
                if "WGRAD" in cid:
                    m, n, k = n, k, t
                elif "DGRAD" in cid:
                    m, n, k = t, k, n
                else:
                    m = t
            out.append((gpu, dt, m, n, k, g, v, src, cid))
            break
    return out


def ours():
    out, sustained = [], {}
    with open(OURS, newline="") as f:
        for r in csv.DictReader(f):
            if r["kernel"] not in ("gemm", "gemm_sustained"):
                continue
            m, n, k = (int(x) for x in r["shape"].split("x"))
            dt = {"bf16": "bf16", "fp8_e4m3": "fp8",
                  "fp8_e4m3_fastacc": "fp8"}[r["dtype"]]
            if r["kernel"] == "gemm_sustained":
                # The ceilings come from the 8192^3 rows; the other
                # sustained row (8192x7168x8192 BF16) is held back.
                if r["dtype"] != "fp8_e4m3_fastacc" and m == n == k == 8192:
                    sustained[dt] = (m, n, k, float(r["tflops"]))
                elif r["dtype"] != "fp8_e4m3_fastacc":
                    out.append(("H100-SXM", dt, m, n, k, 1,
                                float(r["tflops"]), "sustained",
                                "ours:%s:%s:sustained" % (r["dtype"],
                                                           r["shape"])))
                continue
            tag = "ours" + ("-fastacc" if "fastacc" in r["dtype"] else "")
            if r["notes"].startswith("sweepK") and tag == "ours":
                tag = "ours-sweepK"
            out.append(("H100-SXM", dt, m, n, k, 1, float(r["tflops"]), tag,
                        "ours:%s:%s:%s" % (r["dtype"], r["shape"],
                                           r["direction"])))
    return out, sustained


DIGEST = os.path.join(ROOT, "tests", "validation", "gemm_rows.csv")


def from_digest():
    """published() and ours() from the committed digest (--rows), for a
    checkout without shared/validation (CI's clean clone)."""
    pub, own, sustained = [], [], {}
    with open(DIGEST, newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            row = (r["gpu"], r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]),
                   int(r["batch"]), float(r["tflops"]), r["set"], r["source"])
            if r["set"] == "sustained-fit":
                sustained[r["dtype"]] = row[2:5] + (row[6],)
            elif r["set"].startswith("ours") or r["set"] == "sustained":
                own.append(row)
            else:
                pub.append(row)
    return pub, own, sustained


def constants():
    if os.path.exists(KERNELS):
        pub = published() + published_grouped()
        own, sustained = ours()
    else:
        pub, own, sustained = from_digest()
    c = {}
    h = GPUS["H100-SXM"]
    for dt in ("bf16", "fp8"):
        if dt == "bf16":
            sweep = [(b * m, n, k, v) for g, d, m, n, k, b, v, src, _ in pub
                     if g == "H100-SXM" and d == dt and src == "xla" and
                     m == n == 4096 and b == 4]
        else:
            sweep = [(m, n, k, v) for g, d, m, n, k, b, v, src, _ in own
                     if d == dt and src == "ours-sweepK"]
        kh = sweep_k_half(sweep, h[2])
        m, n, k, v = sustained[dt]
        peak = h[0] if dt == "bf16" else h[1]
        ceil = v / (peak * wave(m, n, h[2]) * k / (k + kh))
        c[("H100-SXM", dt)] = (round(ceil, 4), kh)
    b = GPUS["B200"]
    for dt in ("bf16", "fp8"):
        sweep = [(bb * m, n, k, v) for g, d, m, n, k, bb, v, src, _ in pub
                 if g == "B200" and d == dt and m == 4096 and n == 4096]
        kh = sweep_k_half(sweep, b[2])
        m, n, k, v = [(bb * m, n, k, v) for g, d, m, n, k, bb, v, src, _ in pub
                      if g == "B200" and d == dt and m == n == k == 4096][0]
        peak = b[0] if dt == "bf16" else b[1]
        bench = v / (peak * wave(m, n, b[2]) * k / (k + kh))
        print("B200 %s: %.4f of peak at the benchmark's clocks (not used: "
              "a short run, clocks not stated)" % (dt, bench))
        c[("B200", dt)] = (BLACKWELL_CEILING, kh)
    return c, pub, own, sustained


def rate(c, gpu, dt, m, n, k, batch, grouped=False):
    """The model's TF/s of a GEMM (compute and HBM rooflines, launch 3 us);
    `grouped`: `batch` groups, each tiled on its own, each its own weight."""
    peak_bf16, peak_fp8, sms = GPUS[gpu]
    ceil, kh = c[(gpu, dt)]
    peak = peak_bf16 if dt == "bf16" else peak_fp8
    if grouped:
        tiles = batch * math.ceil(m / 128) * math.ceil(n / 128)
        w = tiles / (math.ceil(tiles / sms) * sms)
    else:
        w = wave(batch * m, n, sms)
    e = ceil * w * k / (k + kh)
    flops = 2.0 * batch * m * n * k
    tc = flops / (peak * 1e12 * e)
    el = 2 if dt == "bf16" else 1
    hbm = {"H100-SXM": 3350e9, "B200": 8000e9}[gpu]
    tm = batch * (el * (m * k + k * n) + 2 * m * n) / (hbm * 0.85)
    return flops / (max(tc, tm) + 3e-6) / 1e12


def main():
    c, pub, own, sustained = constants()
    for (gpu, dt), (ceil, kh) in sorted(c.items()):
        print("%s %s: ceiling %.4f k_half %g" % (gpu, dt, ceil, kh))
    rows = []
    for g, dt, m, n, k, b, v, src, cid in pub + own:
        fitted = (src == "ours-sweepK" and dt == "fp8") or (
            src == "xla" and m == n == 4096 and b == 4)
        rows.append((g, dt, m, n, k, b, v, "fit" if fitted else "held", src,
                     cid))
    # The model before this fit (k_half 64; Hopper ceilings 0.723 and
    # 0.651 over that k_half), for comparison.
    old = {("H100-SXM", "bf16"): (0.723, 64.0), ("H100-SXM", "fp8"):
           (0.651, 64.0), ("B200", "bf16"): (0.7, 64.0),
           ("B200", "fp8"): (0.7, 64.0)}
    groups = {}
    for g, dt, m, n, k, b, v, role, src, cid in rows:
        gr = src.startswith("g-")
        e = rate(c, g, dt, m, n, k, b, gr) / v - 1
        e0 = rate(old, g, dt, m, n, k, b, gr) / v - 1
        groups.setdefault((g, dt, src, role), []).append((e, e0))
    print("errors; 'shape': after dividing out the set's median (the clock "
          "offset of short benchmarks against sustained ceilings); 'before':"
          " the shape error of the model before this fit")
    shape_err = {}
    for key, ee in sorted(groups.items()):
        es = [e for e, _ in ee]
        med = sorted(es)[len(es) // 2]
        sh = [(1 + e) / (1 + med) - 1 for e in es]
        shape_err[key] = 100 * sum(map(abs, sh)) / len(sh)
        e0 = [e for _, e in ee]
        med0 = sorted(e0)[len(e0) // 2]
        sh0 = [(1 + e) / (1 + med0) - 1 for e in e0]
        print("  %-8s %-4s %-17s %-4s rows %3d: mean |error| %5.1f %%, "
              "median %+5.1f %%; shape %4.1f %% (worst %5.1f %%), before "
              "%4.1f %%" %
              (key + (len(es), 100 * sum(map(abs, es)) / len(es), 100 * med,
                      100 * sum(map(abs, sh)) / len(sh),
                      100 * max(map(abs, sh)),
                      100 * sum(map(abs, sh0)) / len(sh0))))
    if "--rows" in sys.argv:
        path = sys.argv[sys.argv.index("--rows") + 1]
        with open(path, "w") as f:
            f.write("# GEMM rows digested by analysis/fit_gemm.py --rows: "
                    "measured TF/s (2*batch*m*n*k / time); role fit or held"
                    " (held back);\n# set: where the row is from (ours = "
                    "analysis/kernels, our H100).\n")
            f.write("gpu,dtype,m,n,k,batch,tflops,role,set,source\n")
            for r in rows:
                f.write("%s,%s,%d,%d,%d,%d,%g,%s,%s,%s\n" % r)
            for dt, (m, n, k, v) in sorted(sustained.items()):
                f.write("H100-SXM,%s,%d,%d,%d,1,%g,fit,sustained-fit,"
                        "ours:%s:%dx%dx%d:sustained\n" % (dt, m, n, k, v, dt,
                                                          m, n, k))
    if "--check" in sys.argv:
        text = open(CATALOG).read()
        bad = 0
        for gpu in ("H100-SXM", "H200", "B200", "GB200"):
            src = "H100-SXM" if gpu in ("H100-SXM", "H200") else "B200"
            m = re.search(r'<gpu name="%s"(.*?)>' % re.escape(gpu), text, re.S)
            attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            want = {"gemm_k_half": c[(src, "bf16")][1],
                    "gemm_k_half_fp8": c[(src, "fp8")][1]}
            if src == "H100-SXM":
                want["gemm_eff"] = c[(src, "bf16")][0]
                want["gemm_eff_fp8"] = c[(src, "fp8")][0]
            for k, v in want.items():
                got = attrs.get(k)
                if got is None or abs(float(got) - v) > 1e-9 * max(1, v):
                    print("FAIL: %s %s = %s, the fit gives %g" % (gpu, k, got,
                                                                 v))
                    bad += 1
        print("GEMM constants: %s" % ("match" if not bad else
                                      "%d differ" % bad))
        # The held-back rows' shape error (after each set's clock offset)
        # within 10 % mean, except sets of other kernels held at today's
        # errors: DeepGEMM's dense FP8 (fine-grained scaling, 13.8 %),
        # TileLang's FP8 (11.1 %); torchao's blockwise weight-gradient
        # kernel (one row, 2.6x slower than cuBLAS-class) is not gated.
        limit = {"deepgemm": 14.0, "tilelang:fp8": 11.5,
                 "g-torchao-wgrad": None}
        gbad = 0
        for (g, dt, src, role), e in sorted(shape_err.items()):
            if role != "held":
                continue
            lim = limit.get("%s:%s" % (src, dt), limit.get(src, 10.0))
            if lim is not None and e > lim:
                print("FAIL: %s %s %s held rows: shape error %.1f %% > %g %%"
                      % (g, dt, src, e, lim))
                gbad += 1
        print("GEMM held-back rows: %s" % ("within limits" if not gbad else
                                           "%d sets beyond" % gbad))
        sys.exit(1 if bad or gbad else 0)


if __name__ == "__main__":
    main()
