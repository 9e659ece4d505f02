#!/usr/bin/env python3
"""Megatron-LM 2021, Table 1 row 1, kernel by kernel (megatron2021.md).

Runs weft on MEG21-T1-01 as tests/validation/megatron_table1.sh does (GPT
1.7B, 32 A100-80GB of Selene, TP 1, PP 1, DP 32, micro-batch 16, global
batch 512: one micro-batch of 16 x 2048 tokens per GPU and step, full
recomputation, FP16), with --fusion jit (Megatron-LM v2.5's kernels on
PyTorch 1.8) and with fused (weft before), and prints:
  1. layer 0's kernels in the order Megatron-LM v2.5 runs them, each named
     with the code that launches it, its bytes and FLOPs and weft's time,
     marking those --fusion jit added;
  2. the step by class, with and without them;
  3. the candidates that remain, sized on weft's own kernel times from
     kernel-level evidence (closed forms; nothing here changes weft).
Standard library only.  Usage: megatron2021.py [--weft build/weft]
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from weft_side import read_graph, read_trace, run  # noqa: E402

ROW1 = ["--model", "gpt-1.7b", "--cluster", "selene", "--gpus", "32",
        "--tp", "1", "--pp", "1", "--micro-batch", "16",
        "--global-batch", "512", "--schedule", "1f1b", "--recompute", "full",
        "--overlap-grad=yes", "--bucket=25MB", "--attention", "unfused",
        "--p2p", "blocking", "--dtype", "fp16", "--grad-dtype", "fp16",
        "--grad-accum", "autograd"]
PUBLISHED_TFLOPS = 137.0  # MEG21-T1-01, for the error column only

# One forward pass of a layer (the forward and the recomputation), in the
# order v2.5 launches its kernels; (name, source, added by jit).
FWD = [
    ("LayerNorm (input_layernorm)", "fused_layer_norm.py, apex-style cuApplyLayerNorm", False),
    ("QKV matmul", "mpu/layers.py ColumnParallelLinear: F.linear -> matmul (3-D input)", False),
    ("QKV += bias", "PyTorch 1.8 F.linear: bias added after matmul unless input is 2-D", True),
    ("Q K^T baddbmm, beta 0, alpha 1/sqrt(hn)", "transformer.py ParallelAttention.forward", False),
    ("scaled_upper_triang_masked_softmax", "fused_kernels/scaled_upper_triang_masked_softmax.h", False),
    ("attention dropout (fused_dropout)", "torch.nn.Dropout under the CUDA RNG tracker's fork", False),
    ("P V bmm", "transformer.py torch.bmm(attention_probs, value)", False),
    ("context permute(2,0,1,3).contiguous()", "transformer.py ParallelAttention.forward", True),
    ("dense (proj) matmul", "RowParallelLinear, skip_bias_add", False),
    ("bias_dropout_add_fused_train", "transformer.py, torch.jit.script (legacy fuser); jit adds the 1-byte mask", False),
    ("LayerNorm (post_attention_layernorm)", "fused_layer_norm.py", False),
    ("dense_h_to_4h matmul", "ColumnParallelLinear, skip_bias_add", False),
    ("bias_gelu (jit)", "fused_bias_gelu.py bias_gelu", False),
    ("dense_4h_to_h matmul", "RowParallelLinear, skip_bias_add", False),
    ("bias_dropout_add_fused_train", "transformer.py (jit adds the 1-byte mask)", False),
]
BWD = [
    ("dropout backward (fused)", "symbolic_script dropout backward, in the fused graph", True),
    ("bias grad: sum over tokens", "autograd sum_to for mlp_bias.expand_as(residual)", True),
    ("residual gradient accumulation", "autograd InputBuffer add (two uses of layernorm_input)", False),
    ("dense_4h_to_h dgrad", "matmul backward", False),
    ("dense_4h_to_h wgrad", "matmul backward", False),
    ("bias_gelu_back (jit)", "fused_bias_gelu.py GeLUFunction.backward", False),
    ("GeLU bias grad: sum over tokens", "GeLUFunction returns tmp, tmp: autograd sum_to", True),
    ("dense_h_to_4h dgrad", "matmul backward", False),
    ("dense_h_to_4h wgrad", "matmul backward", False),
    ("LayerNorm backward (two passes)", "cuComputePartGradGammaBeta + cuComputeGradInput", False),
    ("dropout backward (fused)", "bias_dropout_add backward", True),
    ("bias grad: sum over tokens", "attention_bias.expand_as(residual)", True),
    ("residual gradient accumulation", "autograd InputBuffer add (hidden_states)", False),
    ("dense (proj) dgrad", "matmul backward", False),
    ("dense (proj) wgrad", "matmul backward", False),
    ("dP = dO V^T bmm", "bmm backward", False),
    ("dV = P^T dO bmm", "bmm backward", False),
    ("attention dropout backward (_masked_scale)", "torch dropout backward", False),
    ("softmax backward", "scaled_upper_triang_masked_softmax_warp_backward", False),
    ("dQ = dS K bmm", "baddbmm backward: grad.bmm(batch2^T) * alpha", False),
    ("dQ * alpha", "derivatives.yaml baddbmm batch1", True),
    ("dK = dS^T Q bmm", "baddbmm backward: batch1^T.bmm(grad) * alpha", False),
    ("dK * alpha", "derivatives.yaml baddbmm batch2", True),
    ("cat(dQ, dK, dV)", "torch.split backward (split_tensor_along_last_dim)", True),
    ("QKV bias grad: sum over tokens", "F.linear's `+= bias` backward (sum_to)", True),
    ("QKV dgrad", "matmul backward", False),
    ("QKV wgrad", "matmul backward", False),
    ("LayerNorm backward (two passes)", "input_layernorm", False),
]


def layer_kernels(tasks, times, phase):
    out = []
    for i, t in enumerate(tasks):
        if t["kind"] == "kernel" and t["layer"] == 0 and t["phase"] == phase \
                and i in times:
            out.append((t, times[i][1]))
    return out


def step(weft, extra, tmp, tag):
    g = os.path.join(tmp, tag + ".txt")
    c = os.path.join(tmp, tag + ".json")
    run([weft, "graph", "-q"] + ROW1 + extra + ["-o", g])
    res = json.loads(run([weft, "run", "-q", "--json"] + ROW1 + extra +
                         ["--chrome", c]).stdout)
    return read_graph(g), read_trace(c), res


def main():
    argv = sys.argv[1:]
    weft = argv[1] if len(argv) >= 2 and argv[0] == "--weft" else "build/weft"
    tmp = tempfile.mkdtemp(prefix="weft-meg21-")
    tj, cj, rj = step(weft, ["--fusion", "jit"], tmp, "jit")
    tf, cf, rf = step(weft, ["--fusion", "fused"], tmp, "fused")
    commit = run(["git", "rev-parse", "--short", "HEAD"]).stdout.strip()
    print("weft %s --fusion jit|fused  (weft commit %s)" % (" ".join(ROW1), commit))
    print()
    print("1. layer 0, one micro-batch of 32768 tokens, rank 0 (A100-80GB);"
          " + = added by --fusion jit")
    print("%-5s %-42s %1s %-20s %9s %9s %9s" % (
        "phase", "kernel (Megatron-LM v2.5 / PyTorch 1.8)", "", "shape",
        "GFLOP", "MB", "time us"))
    totals = {}
    for phase, names in (("fwd", FWD), ("recomp", FWD), ("bwd", BWD)):
        ks = layer_kernels(tj, cj, phase)
        if len(ks) != len(names):
            sys.exit("megatron2021: %s: %d kernels in weft's layer, %d listed"
                     % (phase, len(ks), len(names)))
        for (t, d), (name, src, added) in zip(ks, names):
            shp = "%dx%dx%d" % (t["m"], t["n"], t["k"]) if t["m"] else "-"
            if t["batch"] > 1:
                shp += "[%d]" % t["batch"]
            if phase != "recomp":
                print("%-5s %-42s %1s %-20s %9.1f %9.1f %9.1f" % (
                    phase, name[:42], "+" if added else "", shp,
                    t["flops"] / 1e9, t["bytes"] / 1e6, d))
            key = "added by jit" if added else (
                "GEMM" if t["op"] == "gemm" and t["batch"] <= 1 else
                "score bmm" if t["op"] == "gemm" else
                "softmax" if "softmax" in name else
                "attention dropout" if "attention dropout" in name else
                "norm" if t["op"] == "norm" else "other memory-bound")
            totals[key] = totals.get(key, 0) + d
    print("(the recomputation repeats the forward's 15 kernels)")
    print()
    lay = sum(totals.values())
    print("   layer 0 (forward, recomputation, backward) by class, ms:")
    for k in ("GEMM", "score bmm", "softmax", "attention dropout", "norm",
              "other memory-bound", "added by jit"):
        print("   %-22s %8.2f  %5.1f %%" % (k, totals.get(k, 0) / 1e3,
                                            100 * totals.get(k, 0) / lay))
    print("   %-22s %8.2f" % ("layer", lay / 1e3))
    print()
    print("2. the step (one micro-batch, 24 layers, head, loss, optimizer)")
    for tag, r in (("fused (before)", rf), ("jit", rj)):
        err = (r["tflops_per_gpu"] - PUBLISHED_TFLOPS) / PUBLISHED_TFLOPS
        print("   %-15s %.4f s  %.1f TFLOP/s per GPU  (published 137: %+.1f %%)"
              % (tag, r["iteration_time_s"], r["tflops_per_gpu"], 100 * err))
    it = rj["iteration_time_s"]
    target = it * rj["tflops_per_gpu"] / PUBLISHED_TFLOPS
    print("   the published figure implies %.4f s: %.0f ms (%.1f %%) more"
          % (target, 1e3 * (target - it), 100 * (target - it) / it))
    print()
    print("3. what is left, sized on weft's kernel times (closed forms, per step;"
          " none applied)")
    L = 24
    dr_f = sum(d for (t, d), (n, s_, a) in zip(layer_kernels(tj, cj, "fwd"), FWD)
               if n.startswith("attention dropout"))
    dr_b = sum(d for (t, d), (n, s_, a) in zip(layer_kernels(tj, cj, "bwd"), BWD)
               if n.startswith("attention dropout"))
    bmm = totals.get("score bmm", 0)
    fk = layer_kernels(tj, cj, "fwd")
    rk = layer_kernels(tj, cj, "recomp")
    norm_f = sum(d for t, d in fk if t["op"] == "norm")
    norm_r = sum(d for t, d in rk if t["op"] == "norm")
    mem_eff = 0.85  # catalog A100-80GB mem_eff, the elementwise ceiling
    params = 1.652e9  # weft run: parameters
    bw = 2039e9
    rows = [
        ("attention dropout at the H100-measured fractions of copy (copy "
         "0.903 of peak): forward and recomputation 0.80, backward 0.995, "
         "instead of 0.85 of peak",
         (2 * dr_f * (mem_eff / (0.903 * 0.80) - 1) +
          dr_b * (mem_eff / (0.903 * 0.995) - 1)) * L),
        ("score-sized bmm (QK^T, PV, dP, dV, dQ, dK; K or N = 96) 10 % slower "
         "than weft's memory-bound rate (unmeasured; per 10 %)",
         bmm * 0.10 * L),
        ("recomputed norms at the forward norm efficiency (weft costs a "
         "recomputed norm at the backward one, costmodel.c cost_mem_efficiency)",
         (norm_f - norm_r) * L),
        ("clip_grad_norm's multi_tensor_scale when clipping (8 B per FP32 "
         "main gradient, at optim_eff 0.796)",
         8 * params / (bw * 0.796) * 1e6),
        ("the embedding output's and the last layer's transpose(0, 1)."
         "contiguous() (2 copies of T x h, once per step)",
         2 * 4 * 32768 * 2304 / (bw * mem_eff) * 1e6),
    ]
    for name, us in rows:
        print("   %+7.1f ms  %+5.2f %%  %s" % (us / 1e3, 100 * us / 1e6 / it, name))


if __name__ == "__main__":
    main()
