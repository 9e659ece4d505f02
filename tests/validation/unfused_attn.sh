#!/bin/sh
# unfused_attn.sh [BUILD_DIR] [KERNELS_CSV] - weft's unfused attention
# (--attention unfused: batched GEMMs with the scores in HBM, a softmax and
# its backward as memory-bound kernels; workloads/builder.c,
# attention_unfused) against the only A100 measurement of unfused attention
# in kernels.csv: the "PyTorch standard attention" baseline of
# FlashAttention-2's A100 benchmark (forward+backward, FP16, 16k tokens per
# batch, head dim 64 and 128, sequence 512-8192).  Nothing is fitted on it.
#
# The benchmark's PyTorch code (benchmarks/benchmark_flash_attention.py,
# attention_pytorch) is baddbmm, for causal rows an added triangular mask
# (one more read and write of the scores), torch.softmax, dropout with p = 0
# (no kernel) and an einsum; weft's kernels for it are the four batched
# GEMMs of the forward and backward pair, the softmax forward and backward,
# and for causal rows one more pass at the softmax's speed; its dropout
# kernels are left out.  The benchmark counts 3.5 x 4 b s^2 h d FLOPs (half
# when causal), as here.
build=${1:-build}
csv=${2:-$(dirname "$0")/../../../shared/validation/kernels.csv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$build/weft" "$csv" "$tmp/t.json" <<'PY'
import csv, json, subprocess, sys
weft, rows_csv, trace = sys.argv[1:4]
rows = []
for r in csv.DictReader(open(rows_csv)):
    if "flash2_a100" in r["source"] and r["kernel"].startswith("PyTorch standard"):
        kv = dict(x.split("=") for x in r["shape"].split(","))
        rows.append((int(kv["batch"]), int(kv["seqlen"]), int(kv["heads"]),
                     int(kv["hdim"]), kv["causal"] == "yes", float(r["value"])))
if not rows:
    sys.exit("no PyTorch standard attention rows of A100 in " + rows_csv)

def parts(b, s, h, d):
    """Microseconds of weft's score-sized kernels of one layer."""
    subprocess.run([weft, "run", "--model", "gpt-1.7b", "--hidden", str(h * d),
                    "--heads", str(h), "--layers", "1", "--seq", str(s),
                    "--micro-batch", str(b), "--global-batch", str(8 * b),
                    "--gpus", "8", "--cluster", "selene", "--attention", "unfused",
                    "--dtype", "fp16", "--chrome", trace, "-q"],
                   check=True, stdout=subprocess.DEVNULL)
    ev = json.load(open(trace))["traceEvents"]
    sc = b * h * s * s
    bmm = sm_fwd = sm_bwd = 0.0
    n = 0
    for e in ev:
        if e.get("ph") != "X" or e["pid"] != 0 or e["tid"] != 0 or " L0 " not in e["name"]:
            continue
        a = e["args"]
        if "gemm" in e["name"] and a.get("flops") == 2 * sc * d and a.get("bytes", 0) >= 2 * sc:
            bmm += e["dur"]
            n += 1
        elif "elemwise" in e["name"] and a.get("bytes") == 4 * sc:
            sm_fwd += e["dur"]
        elif "elemwise" in e["name"] and a.get("bytes") == 6 * sc:
            sm_bwd += e["dur"]
    if n != 6 or not sm_fwd or not sm_bwd:
        sys.exit("unexpected kernels for b=%d s=%d h=%d d=%d" % (b, s, h, d))
    return bmm, sm_fwd, sm_bwd

print("%5s %5s %5s %4s %6s %9s %8s %7s %9s %9s" % ("batch", "seq", "heads", "d", "causal",
      "measured", "weft", "error", "bmm_ms", "softmax_ms"))
errs = []
for b, s, h, d, causal, tf in rows:
    bmm, f, bw = parts(b, s, h, d)
    t = bmm + f + bw + (f if causal else 0.0)
    flops = 3.5 * 4 * b * s * s * h * d / (2 if causal else 1)
    w = flops / t / 1e6
    errs.append(100 * (w / tf - 1))
    print("%5d %5d %5d %4d %6s %9.0f %8.1f %+6.1f%% %9.2f %9.2f" % (b, s, h, d,
          "yes" if causal else "no", tf, w, errs[-1], bmm / 1e3, (f + bw) / 1e3))
print("%d rows (TF/s, fwd+bwd): weft faster on every row, by %.0f %% to %.0f %%, mean %.0f %%"
      % (len(errs), min(errs), max(errs), sum(errs) / len(errs)) if min(errs) > 0 else
      "%d rows: mean |error| %.1f %%" % (len(errs), sum(abs(e) for e in errs) / len(errs)))
PY
