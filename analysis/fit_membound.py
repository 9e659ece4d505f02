#!/usr/bin/env python3
"""fit_membound.py - weft's memory-bound kernel families against kernel rows.

The model (workloads/costmodel.c, cost_kernel and cost_mem_efficiency): a
kernel with no FLOPs takes

    time = bytes / (hbm_bw * eff_family) + launch        (launch 3 us)

with weft's byte count of the kernel (workloads/builder.c) and the share
of HBM bandwidth of its family: norm_eff (norms forward), norm_bwd_eff
(norms backward, whose time includes the weight-gradient reduction but
whose bytes are x + dy + dx), loss_eff (fused cross-entropy, 2e bytes per
logit each way), optim_eff (fused AdamW, 28 bytes per parameter) and
mem_eff for everything element-wise (activations, residual adds, dropout,
casts).  The shares are fractions of the datasheet bandwidth (3350 GB/s
on H100 SXM), not of a measured copy.

Which implementation each family stands for: PyTorch's own CUDA kernels
(torch.nn.LayerNorm / RMSNorm, which Megatron-core's local spec wraps as
WrappedTorchNorm; torch cross-entropy; apex/PyTorch fused AdamW), and for
element-wise work the fused kernels frameworks run (Megatron-core's
jit_fuser, which is torch.compile from PyTorch 2.2: bias-SwiGLU,
bias-GeLU, bias-dropout-add).  Rows of other implementations (Liger's and
QuACK's Triton/CuTe kernels, cuDNN's norm, torch.compile'd norms and
losses, HuggingFace's eager multi-kernel RMSNorm, eager SiLU * mul,
torch.softmax, which weft does not use: its softmax is Megatron's fused
scale-mask-softmax of unfused attention, never measured here) are listed
with role "other": printed for comparison, never fitted, never gated.

Fitted (every other row of those implementations is held back):
  norm_eff      our H100 LayerNorm and RMSNorm forward, 16384 x 4096
                (the mean of the two rows' bandwidths)
  norm_bwd_eff  the same two rows backward
  loss_eff      our cross-entropy 16384 x 32000 forward
  loss_bwd_eff  the same backward (forward + backward less forward)
  optim_eff     our fused AdamW on 1e9 parameters
  mem_eff       nothing: 0.85 is an estimate (STREAM-like kernels reach
                80-90 % of HBM), so every element-wise row is held back.

Held back: our rows of other shapes (norms at 8192, the other vocabularies
and the forward-only and backward-only cross-entropy, AdamW on 1e8, GELU,
SiLU * mul compiled, add, dropout, copy), and from
shared/validation/kernels.csv Liger-Kernel's benchmark rows of the same
PyTorch kernels on H100: megatron_rms_norm (providers torch and megatron,
both nn.RMSNorm), layer_norm (provider huggingface, nn.LayerNorm in fp32)
and megatron_swiglu (provider megatron: Megatron's bias_swiglu_impl).
Liger's rows are triton's do_bench of one call, L2 flushed between calls;
its "backward" and "full" modes both time forward + out.sum() + backward,
which weft composes as the forward kernel, an element-wise read of the
output (the sum) and the backward kernel.  do_bench brackets one call
with events, so the host's dispatch of a short call is in its time: weft
models none (in training the host runs ahead of the GPU), and rows whose
modelled GPU time is under 50 us get the role "short": printed, not gated
(decided from weft's byte count before comparing, never from the error).

Without shared/validation (a clean clone of the repository alone) the
published rows come from the digest tests/validation/mem_rows.csv that
--rows wrote.

Usage: fit_membound.py            print the constants and the rows' errors
       fit_membound.py --check    compare the constants with platforms/catalog.xml
       fit_membound.py --rows F   write the digested rows for tests/validation
"""
import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(ROOT, "..", "shared", "validation", "kernels.csv")
OURS = os.path.join(HERE, "kernels", "h100_kernels_2026-11-22.csv")
CATALOG = os.path.join(ROOT, "platforms", "catalog.xml")
DIGEST = os.path.join(ROOT, "tests", "validation", "mem_rows.csv")
HBM = {"H100-SXM": 3350e9, "A100-80GB": 2039e9}
LAUNCH = 3e-6
MEM_EFF = 0.85       # the catalog's estimate for element-wise kernels
SHORT_S = 50e-6      # modelled GPU time under which do_bench rows are "short"


def kern(family, phase, nbytes):
    return "%s:%s:%d" % (family, phase, round(nbytes))


def ours():
    """Rows of analysis/kernels: (gpu, name, set, role, seconds, kernels,
    source)."""
    out = []
    with open(OURS, newline="") as f:
        for r in csv.DictReader(f):
            k, d, shape = r["kernel"], r["direction"], r["shape"]
            if k.startswith("gemm") or k.startswith("attn") or k == "sum":
                continue
            t = float(r["time_us_median"]) * 1e-6
            nb = float(r["bytes"])
            src = "ours:%s:%s:%s" % (k, shape, d)
            role, fam = "held", "elem"
            if k in ("layer_norm", "rms_norm"):
                fam = "norm"
                role = "fit" if shape == "16384x4096" else "held"
            elif k == "cross_entropy":
                m, v = (int(x) for x in shape.split("x"))
                n4 = 4.0 * m * v  # weft: 2 bytes per logit read and written
                ks = {"fwd": kern("loss", "fwd", n4),
                      "bwd_derived": kern("loss", "bwd", n4),
                      "fwd_bwd": kern("loss", "fwd", n4) + "+" +
                      kern("loss", "bwd", n4)}[d]
                role = "fit" if shape == "16384x32000" else "held"
                out.append(("H100-SXM", "%s %s %s" % (k, shape, d), "ours",
                            role, t, ks, src))
                continue
            elif k == "adamw_fused":
                out.append(("H100-SXM", "%s %s" % (k, shape), "ours",
                            "fit" if shape == "1000000000" else "held", t,
                            kern("optim", "opt", nb), src))
                continue
            elif k in ("softmax", "silu_mul"):
                role = "other"
            phase = "bwd" if d.startswith("bwd") else "fwd"
            out.append(("H100-SXM", "%s %s %s" % (k, shape, d), "ours", role,
                        t, kern(fam, phase, nb), src))
    return out


def liger_shape(s):
    return dict((kv.split("=")[0], int(kv.split("=")[1]))
                for kv in s.split(",") if re.fullmatch(r"\w+=\d+", kv))


def published():
    """Liger-Kernel's and QuACK's memory-bound rows of kernels.csv."""
    out = []
    with open(KERNELS, newline="") as f:
        for r in csv.DictReader(f):
            cid, kn = r["case_id"], r["kernel"]
            if not cid.startswith("KERN-MEM-"):
                continue
            gpu = ("H100-SXM" if r["gpu"].startswith("H100") else
                   "A100-80GB" if r["gpu"].startswith("A100") else None)
            if gpu is None:
                continue
            sh = liger_shape(r["shape"])
            if r["metric"] == "time_ms":
                t = float(r["value"]) * 1e-3
                e = 4 if r["dtype"] == "float32" else 2
                m = re.match(r"(\w+) (forward|backward|full) \((\w+)\)", kn)
                if not m:
                    continue
                op, mode, prov = m.groups()
                if op == "megatron_rms_norm":
                    n = sh["S"] * sh["B"] * sh["H"]
                    ok = prov in ("torch", "megatron")
                    fw, bw, out_n = (kern("norm", "fwd", 2 * e * n),
                                     kern("norm", "bwd", 3 * e * n), n)
                elif op == "layer_norm":
                    n = sh["M"] * sh["N"]
                    ok = prov == "huggingface"
                    fw, bw, out_n = (kern("norm", "fwd", 2 * e * n),
                                     kern("norm", "bwd", 3 * e * n), n)
                elif op == "megatron_swiglu":
                    n = sh["S"] * sh["B"] * sh["ffn_local"]
                    ok = prov == "megatron"
                    fw, bw, out_n = (kern("elem", "fwd", 3 * e * n),
                                     kern("elem", "bwd", 5 * e * n), n)
                elif op in ("rms_norm", "fused_add_rms_norm"):
                    # HuggingFace's eager RMSNorm (several fp32 kernels) and
                    # Liger's: implementations weft does not model.
                    key = "H" if "H" in sh else "N"
                    n = sh.get("S", 1) * sh.get("B", 1) * sh.get("M", 1) * \
                        sh[key] if key in sh else 0
                    if not n:
                        continue
                    ok = False
                    fw, bw, out_n = (kern("norm", "fwd", 2 * e * n),
                                     kern("norm", "bwd", 3 * e * n), n)
                else:
                    continue
                if mode == "forward":
                    ks = fw
                elif op == "layer_norm":
                    # y.backward(dy) of a kept graph; "full" adds the forward.
                    ks = bw if mode == "backward" else fw + "+" + bw
                else:
                    # Forward, out.sum() (a read of the output), backward;
                    # megatron_rms_norm's "full" also accumulates into
                    # x.grad, which it does not reset (read 2, write 1).
                    ks = "+".join((fw, kern("elem", "fwd", e * out_n), bw))
                    if op == "megatron_rms_norm" and mode == "full":
                        ks += "+" + kern("elem", "bwd", 3 * e * out_n)
                model = sum(modelled(gpu, k) for k in ks.split("+"))
                role = ("other" if not ok else "short" if model < SHORT_S
                        else "held")
                st = "liger" + ("" if mode == "forward" else "-fb")
                out.append((gpu, "%s %s (%s) %s" % (op, mode, prov,
                                                    r["shape"].replace(",", " ")),
                            st, role, t, ks, cid))
            elif r["metric"] == "achieved_bw_fraction":
                mm = re.search(r"M\(batch\)=(\d+),N\(reduction dim\)=(\d+)",
                               r["shape"])
                if not mm:
                    continue
                M, N = int(mm.group(1)), int(mm.group(2))
                frac = float(r["value"])
                # The blog's bytes: read + write (cross-entropy: read).
                nb = (1 if "CROSSENTROPY" in cid else 2) * 2 * M * N
                t = nb / (frac * 3350e9)
                fam = ("loss" if "CROSSENTROPY" in cid else
                       "norm" if "RMSNORM" in cid else "elem")
                kb = 4.0 * M * N if fam == "loss" else nb
                out.append((gpu, "%s M%d N%d" % (kn, M, N), "quack", "other",
                            t, kern(fam, "fwd", kb), cid))
    return out


def from_digest():
    """Published rows from the committed digest (CI's clean clone)."""
    out = []
    with open(DIGEST, newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["set"] != "ours":
                out.append((r["gpu"], r["name"], r["set"], r["role"],
                            float(r["us"]) * 1e-6, r["kernels"], r["source"]))
    return out


EFF = {}


def constants(own):
    """The families' shares fitted on their named rows."""
    def gbps(pred):
        v = [nbytes(r[5]) / r[4] for r in own
             if r[3] == "fit" and "+" not in r[5] and pred(r)]
        return sum(v) / len(v)
    hbm = HBM["H100-SXM"]
    c = {
        "norm_eff": gbps(lambda r: r[1].endswith(" fwd") and
                         r[5].startswith("norm")) / hbm,
        "norm_bwd_eff": gbps(lambda r: r[1].endswith(" bwd") and
                             r[5].startswith("norm")) / hbm,
        "loss_eff": gbps(lambda r: r[5].startswith("loss:fwd")) / hbm,
        "loss_bwd_eff": gbps(lambda r: r[5].startswith("loss:bwd")) / hbm,
        "optim_eff": gbps(lambda r: r[5].startswith("optim")) / hbm,
    }
    return {k: round(v, 3) for k, v in c.items()}


def nbytes(ks):
    return sum(float(k.split(":")[2]) for k in ks.split("+"))


def modelled(gpu, k):
    fam, phase, nb = k.split(":")
    c = EFF or {"norm_eff": 0.592, "norm_bwd_eff": 0.376, "loss_eff": 0.447,
                "loss_bwd_eff": 0.447, "optim_eff": 0.796}
    e = {"norm": c["norm_eff"] if phase == "fwd" else c["norm_bwd_eff"],
         "loss": c["loss_eff"] if phase == "fwd" else c["loss_bwd_eff"], "optim": c["optim_eff"], "elem": MEM_EFF}[fam]
    return float(nb) / (HBM[gpu] * e) + LAUNCH


def main():
    own = ours()
    EFF.update(constants(own))
    pub = published() if os.path.exists(KERNELS) else from_digest()
    rows = own + pub
    for k, v in sorted(EFF.items()):
        print("H100-SXM %s %.3f" % (k, v))
    groups = {}
    for gpu, name, st, role, t, ks, src in rows:
        fam = ks.split(":")[0]
        err = sum(modelled(gpu, k) for k in ks.split("+")) / t - 1
        groups.setdefault((gpu, fam, st, role), []).append((err, name))
    for key, ee in sorted(groups.items()):
        es = [e for e, _ in ee]
        w = max(ee, key=lambda x: abs(x[0]))
        print("  %-8s %-5s %-12s %-5s rows %3d: mean |error| %5.1f %%, "
              "worst %+6.1f %% (%s)" %
              (key + (len(es), 100 * sum(map(abs, es)) / len(es),
                      100 * w[0], w[1])))
    if "--rows" in sys.argv:
        path = sys.argv[sys.argv.index("--rows") + 1]
        with open(path, "w") as f:
            f.write("# Memory-bound rows digested by analysis/fit_membound.py "
                    "--rows: measured time (us) and the weft kernels that\n# "
                    "stand for it (family:phase:bytes, '+' between "
                    "kernels); role fit, held (held back), short\n# (held back, "
                    "host dispatch in the time: printed, not gated) or other "
                    "(an implementation weft\n# does not model: printed, not "
                    "gated); set: where the row is from (liger-fb: Liger's\n"
                    "# backward and full modes, composed as its script runs "
                    "them).\n")
            f.write("gpu,name,set,role,us,kernels,source\n")
            for gpu, name, st, role, t, ks, src in rows:
                f.write("%s,%s,%s,%s,%.4f,%s,%s\n" % (gpu, name, st, role,
                                                      t * 1e6, ks, src))
    if "--check" in sys.argv:
        text = open(CATALOG).read()
        bad = 0
        for gpu in ("H100-SXM", "H200"):
            m = re.search(r'<gpu name="%s"(.*?)>' % re.escape(gpu), text, re.S)
            attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            for k, v in sorted(EFF.items()):
                got = attrs.get(k)
                if got is None or abs(float(got) - v) > 1e-9:
                    print("FAIL: %s %s = %s, the fit gives %g" % (gpu, k, got,
                                                                 v))
                    bad += 1
        print("memory-bound constants: %s" % ("match" if not bad else
                                              "%d differ" % bad))
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
