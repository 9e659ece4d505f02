#!/usr/bin/env python3
"""measure_kernels.py - time the kernels of weft's operator cost model on a GPU.

Measures, through PyTorch on the GPU at hand:
  sustain  a long bf16 and fp8 GEMM loop, sampling SM clock and power (NVML)
  gemm     bf16 (torch.mm) and fp8 e4m3 (torch._scaled_mm, per-tensor scales,
           bf16 output) GEMMs: K and M sweeps, the three GEMMs of a linear
           layer, and QKV/proj/FC1/FC2 shapes of GPT/Llama layers at TP 1-8
  attn     scaled_dot_product_attention, bf16, flash and cuDNN backends forced,
           forward and forward+backward, causal and not
  mem      copy/sum bandwidth references, LayerNorm, RMSNorm, GELU, SiLU*mul,
           add, dropout, softmax, cross-entropy, fused AdamW

Usage (on the GPU machine):
  python3 analysis/kernels/measure_kernels.py --out $OUT/h100_kernels.csv
  python3 analysis/kernels/measure_kernels.py --dry-run   # list cases, no torch

One CSV row per measurement, written as it is made (a killed run keeps its
rows):
  gpu,date,torch,cuda,kernel,dtype,shape,direction,flops,bytes,
  time_us_median,time_us_min,tflops,gbps,notes
Shapes: GEMM MxNxK (C[M,N] = A[M,K] B[K,N], weft's gemm AxBxC); attention
(batch*heads)xSxD (weft's attn AxBxC); memory kernels their own, named in
notes.  Timing: warm-up, then CUDA events around a loop of n calls taking
>= 1 ms, repeated 20-50 times; median and minimum of the per-call times.  No
L2 flush; inputs are random normal (never zeros).  A per-case failure is
recorded in notes and the run goes on; each section stops taking cases when
its time share is spent, and the whole run stops before --budget seconds.
See README.md beside this file.
"""
import argparse
import csv
import datetime
import math
import os
import statistics
import sys
import threading
import time
import traceback

# --------------------------------------------------------------------------
# Case lists (no torch needed)
# --------------------------------------------------------------------------

# name, hidden, heads, kv_heads, ffn, gates (2 = SwiGLU: FC1 is gate+up)
MODELS = [
    ("llama3-8b", 4096, 32, 8, 14336, 2),
    ("llama2-13b", 5120, 40, 40, 13824, 2),
    ("llama3-70b", 8192, 64, 8, 28672, 2),
    ("gpt3-175b", 12288, 96, 96, 49152, 1),
    ("llama3-405b", 16384, 128, 8, 53248, 2),
]
TPS = [1, 2, 4, 8]


def layer_shapes(model, tp):
    """(layer, N, K) of the four linear layers of one TP rank."""
    name, h, a, kv, f, gates = model
    hd = h // a
    q = a // tp
    kvr = max(1, kv // tp)
    return [
        ("qkv", (q + 2 * kvr) * hd, h),
        ("proj", h, q * hd),
        ("fc1", gates * f // tp, h),
        ("fc2", h, f // tp),
    ]


def gemm_cases(quick=False):
    """GEMM cases in priority order, deduplicated (labels merged)."""
    out, seen = [], {}

    def add(dtype, m, n, k, label, layout="NT", direction="fwd", fast=False):
        key = (dtype, m, n, k, layout, direction, fast)
        if key in seen:
            seen[key]["labels"].append(label)
            return
        c = dict(dtype=dtype, m=m, n=n, k=k, layout=layout,
                 direction=direction, fast=fast, labels=[label])
        seen[key] = c
        out.append(c)

    dts = ["bf16", "fp8_e4m3"]
    if quick:
        for dt in dts:
            add(dt, 4096, 4096, 4096, "quick")
            add(dt, 64, 8192, 8192, "quick")
        add("bf16", 2048, 1024, 4096, "quick", "NN", "bwd_dgrad")
        add("bf16", 1024, 4096, 2048, "quick", "TN", "bwd_wgrad")
        add("fp8_e4m3", 4096, 4096, 4096, "quick", fast=True)
        return out
    for dt in dts:  # K sweep at M = N = 8192
        for k in [128, 256, 512, 1024, 2048, 4096, 8192, 16384]:
            add(dt, 8192, 8192, k, "sweepK")
    for dt in dts:  # M sweep at N = K = 8192
        for m in [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]:
            add(dt, m, 8192, 8192, "sweepM")
    # the three GEMMs of a linear layer Y = X W^T, X [T,K], W [N,K]:
    #   fwd   Y[T,N]  = X W^T        M=T N=N K=K  (A row-major, B = W^T)
    #   dgrad dX[T,K] = dY W         M=T N=K K=N  (B = W, not transposed)
    #   wgrad dW[N,K] = dY^T X       M=N N=K K=T  (A = dY^T)
    # bf16 runs them with these very layouts; fp8 (_scaled_mm needs A
    # row-major, B column-major) runs them as fresh operands in its layout,
    # as Transformer Engine does after transposing/casting.
    tokens = 8192
    for mname, tp in [("llama3-70b", 8), ("llama3-8b", 1)]:
        model = [x for x in MODELS if x[0] == mname][0]
        for layer, n, k in layer_shapes(model, tp):
            lab = "linear:%s/tp%d/%s/T%d" % (mname, tp, layer, tokens)
            for dt in dts:
                add(dt, tokens, n, k, lab, "NT", "fwd")
                add(dt, tokens, k, n, lab, "NN", "bwd_dgrad")
                add(dt, n, k, tokens, lab, "TN", "bwd_wgrad")
    # layer shapes of the models at TP 1..8
    for m in [8192, 2048]:
        for dt in dts:
            for model in MODELS:
                for tp in TPS:
                    for layer, n, k in layer_shapes(model, tp):
                        add(dt, m, n, k, "%s/tp%d/%s" % (model[0], tp, layer))
    for m in [512, 1024, 4096, 16384]:
        for dt in dts:
            for mname, tp in [("llama3-70b", 8), ("llama3-70b", 1),
                              ("llama3-8b", 1)]:
                model = [x for x in MODELS if x[0] == mname][0]
                for layer, n, k in layer_shapes(model, tp):
                    add(dt, m, n, k, "%s/tp%d/%s" % (mname, tp, layer))
    # fp8 with fast accumulation (what TE uses in forward) on a subset
    for m in [64, 512, 2048, 8192, 16384]:
        add("fp8_e4m3", m, 8192, 8192, "sweepM", fast=True)
    for k in [256, 1024, 4096, 16384]:
        add("fp8_e4m3", 8192, 8192, k, "sweepK", fast=True)
    for model in MODELS:
        for tp in [1, 8]:
            for layer, n, k in layer_shapes(model, tp):
                add("fp8_e4m3", 8192, n, k, "%s/tp%d/%s" % (model[0], tp, layer),
                    fast=True)
    return out


def attn_cases(quick=False):
    out = []
    seqs = [512, 1024, 2048, 4096, 8192, 16384]
    if quick:
        seqs = [2048]
    for backend in ["flash", "cudnn"]:
        for d in [128, 64]:
            for causal in [True, False]:
                for s in seqs:
                    h = 2048 // d           # 16 heads of 128 or 32 of 64
                    b = max(1, 32768 // s)  # 32k tokens per batch
                    if quick:
                        b = 2
                    out.append(dict(backend=backend, d=d, causal=causal, s=s,
                                    b=b, h=h))
                if quick:
                    break
            if quick:
                break
    return out


def attn_flops_fwd(c):
    f = 4.0 * c["b"] * c["h"] * c["s"] * c["s"] * c["d"]
    return f / 2 if c["causal"] else f


def mem_cases(quick=False):
    """(kernel, params) in order; copy first (the bandwidth reference)."""
    T = 16384
    hs = [4096, 8192]
    if quick:
        T, hs = 2048, [4096]
    out = [("copy", dict(n=(1 << 28) if quick else (1 << 30))),
           ("sum", dict(n=(1 << 28) if quick else (1 << 30)))]
    for h in hs:
        out.append(("layer_norm", dict(t=T, h=h)))
        out.append(("rms_norm", dict(t=T, h=h)))
    for h in hs:
        out.append(("gelu_tanh", dict(t=T, h=4 * h)))
        out.append(("silu_mul", dict(t=T, h=h * 7 // 2)))  # ffn 3.5h
        out.append(("add", dict(t=T, h=h)))
        out.append(("dropout", dict(t=T, h=h)))
    out.append(("softmax", dict(t=(4096 if quick else 65536), h=4096)))
    out.append(("softmax", dict(t=(4096 if quick else 32768), h=8192)))
    for v in [32000, 50257, 128256]:
        for t in ([2048] if quick else [4096, 16384]):
            out.append(("cross_entropy", dict(t=t, v=v)))
    for n in ([int(1e7)] if quick else [int(1e8), int(1e9)]):
        out.append(("adamw_fused", dict(n=n)))
    if not quick:  # last: compiling can take a while
        out.append(("silu_mul_compiled", dict(t=T, h=hs[0] * 7 // 2)))
    return out


def est_gemm_s(c):
    """Rough wall time of one GEMM case (for dry runs and the time guard)."""
    fl = 2.0 * c["m"] * c["n"] * c["k"]
    rate = 1100e12 if c["dtype"].startswith("fp8") else 650e12
    t = fl / rate + 8e-6
    n = max(1, math.ceil(1e-3 / t))
    samples = min(50, max(20, int(0.3 / (n * t))))
    return 0.08 + t * (5 + n * samples)


def est_attn_s(c):
    f = attn_flops_fwd(c)
    t = f / 450e12 + 8e-6
    tb = 3.5 * f / 350e12 + 8e-6
    tot = 0.05
    for x in (t, tb):
        n = max(1, math.ceil(1e-3 / x))
        samples = min(50, max(20, int(0.3 / (n * x))))
        tot += x * (5 + n * samples)
    return tot


# --------------------------------------------------------------------------
# Clock/power sampler (NVML through pynvml, else nvidia-smi)
# --------------------------------------------------------------------------

class Sampler:
    def __init__(self, period=0.1):
        self.period = period
        self.samples = []  # (t, label, sm_mhz, mem_mhz, power_w, temp_c, reasons)
        self.label = "idle"
        self.stop = threading.Event()
        self.nv = None
        self.h = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as e:  # noqa: BLE001
            print("sampler: NVML unavailable (%s); using nvidia-smi" % e)
            self.period = max(period, 0.5)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read(self):
        if self.nv:
            nv, h = self.nv, self.h
            sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
            mem = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
            pw = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
            temp = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            try:
                rs = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
            except Exception:  # noqa: BLE001
                try:
                    rs = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
                except Exception:  # noqa: BLE001
                    rs = -1
            return sm, mem, pw, temp, rs
        import subprocess
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,"
             "temperature.gpu,clocks_event_reasons.active",
             "--format=csv,noheader,nounits"], capture_output=True, text=True,
            timeout=5).stdout.strip().split(",")
        rs = q[4].strip()
        return (float(q[0]), float(q[1]), float(q[2]), float(q[3]),
                int(rs, 16) if rs.startswith("0x") else -1)

    def run(self):
        while not self.stop.is_set():
            try:
                s = self.read()
                self.samples.append((time.time(), self.label) + tuple(s))
            except Exception:  # noqa: BLE001
                pass
            self.stop.wait(self.period)

    def start(self):
        self.thread.start()

    def summary(self, t0, t1):
        w = [s for s in self.samples if t0 <= s[0] <= t1]
        if not w and self.samples:
            w = [self.samples[-1]]
        if not w:
            return "clk=n/a"
        sm = [s[2] for s in w]
        pw = [s[4] for s in w]
        rs = 0
        for s in w:
            if s[6] and s[6] > 0:
                rs |= s[6]
        return "sm_mhz=%.0f(min %.0f) power_w=%.0f(max %.0f) reasons=0x%x n=%d" % (
            statistics.mean(sm), min(sm), statistics.mean(pw), max(pw), rs,
            len(w))

    def write(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["unix_time", "label", "sm_mhz", "mem_mhz", "power_w",
                        "temp_c", "clock_event_reasons"])
            for s in self.samples:
                w.writerow([("%.2f" % s[0])] + list(s[1:6]) + ["0x%x" % s[6]
                                                                 if s[6] >= 0
                                                                 else ""])

    def close(self):
        self.stop.set()
        self.thread.join(timeout=2)


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------

FIELDS = ["gpu", "date", "torch", "cuda", "kernel", "dtype", "shape",
          "direction", "flops", "bytes", "time_us_median", "time_us_min",
          "tflops", "gbps", "notes"]


class Run:
    def __init__(self, args):
        import torch
        self.torch = torch
        self.args = args
        self.dev = torch.device("cuda")
        self.gpu = torch.cuda.get_device_name(0)
        self.tv = torch.__version__
        self.cv = torch.version.cuda or ""
        self.date = args.date or datetime.date.today().isoformat()
        new = not (args.append and os.path.exists(args.out))
        self.f = open(args.out, "a" if not new else "w", newline="")
        self.w = csv.DictWriter(self.f, FIELDS)
        if new:
            self.w.writeheader()
        self.rows = 0
        self.errors = 0
        self.skipped = []
        self.sampler = Sampler()
        self.sampler.start()
        self.t_start = time.time()
        self.deadline = self.t_start + args.budget
        self.copy_gbps = None

    # -- timing --------------------------------------------------------
    def bench(self, fn, min_sample_s=1e-3, target_s=0.3, min_samples=20,
              max_samples=50, warmup=2):
        torch = self.torch
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
            enable_timing=True)
        a.record()
        for _ in range(3):
            fn()
        b.record()
        b.synchronize()
        est = max(a.elapsed_time(b) / 3e3, 1e-7)
        n = max(1, math.ceil(min_sample_s / est))
        samples = int(min(max_samples, max(min_samples, target_s / (n * est))))
        evs = [(torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
        h0 = time.perf_counter()
        for x, y in evs:
            x.record()
            for _ in range(n):
                fn()
            y.record()
        host = time.perf_counter() - h0
        torch.cuda.synchronize()
        ts = [x.elapsed_time(y) * 1e3 / n for x, y in evs]  # us per call
        gpu = sum(ts) * n / 1e6
        note = "n=%dx%d" % (samples, n)
        if host > 0.8 * gpu:
            note += " host_bound?(launch %.0f%% of gpu time)" % (100 * host / gpu)
        return statistics.median(ts), min(ts), note

    def bench_graph(self, fn, eager_us):
        """Time fn as a CUDA graph of k calls replayed (no launch gaps).

        Must run with a side stream current (the capture stream); fn's
        autograd forward must have run on that stream too."""
        torch = self.torch
        k = int(min(20, max(1, math.ceil(200.0 / max(eager_us, 1.0)))))
        st = torch.cuda.current_stream()
        for _ in range(2):
            fn()
        st.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=st):
            for _ in range(k):
                fn()
        st.synchronize()
        med, mn, note = self.bench(g.replay)
        del g
        return med / k, mn / k, "cuda graph of %d calls, %s" % (k, note)

    def row(self, kernel, dtype, shape, direction, flops, nbytes, med, mn,
            notes):
        r = dict(gpu=self.gpu, date=self.date, torch=self.tv, cuda=self.cv,
                 kernel=kernel, dtype=dtype, shape=shape, direction=direction,
                 flops=("%.6g" % flops) if flops else "",
                 bytes=("%.6g" % nbytes) if nbytes else "",
                 time_us_median=("%.3f" % med) if med else "",
                 time_us_min=("%.3f" % mn) if mn else "",
                 tflops=("%.2f" % (flops / med / 1e6)) if flops and med else "",
                 gbps=("%.1f" % (nbytes / med / 1e3)) if nbytes and med else "",
                 notes=notes)
        self.w.writerow(r)
        self.f.flush()
        self.rows += 1
        print("%-14s %-9s %-22s %-10s %10s us %8s TF/s %8s GB/s  %s" % (
            kernel[:14], dtype[:9], shape[:22], direction[:10],
            r["time_us_median"], r["tflops"], r["gbps"], notes[:110]),
            flush=True)

    def case(self, label, est_s, section_deadline, body):
        """Run body() guarded: time, errors, clocks.  Returns True if run."""
        now = time.time()
        if now + est_s > min(section_deadline, self.deadline):
            self.skipped.append(label)
            return False
        self.sampler.label = label
        t0 = time.time()
        try:
            body(lambda: self.sampler.summary(t0, time.time()))
        except Exception as e:  # noqa: BLE001
            self.errors += 1
            msg = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:300]
            print("ERROR in %s: %s" % (label, msg), flush=True)
            traceback.print_exc(limit=2)
            raise_again = False
            if "CUDA error" in msg and "out of memory" not in msg:
                raise_again = True  # context probably dead
            self.error_rows(label, msg)
            if raise_again:
                raise
        finally:
            self.sampler.label = "idle"
            self.cleanup()
        return True

    def error_rows(self, label, msg):
        k = label.split(":")[0]
        self.row(k, "", label, "", 0, 0, 0, 0, "error: " + msg)

    def cleanup(self):
        import gc
        gc.collect()
        self.torch.cuda.empty_cache()

    # -- sections ------------------------------------------------------
    def sustain(self, deadline):
        """Long loops: throughput and SM clock/power once the card is hot."""
        torch = self.torch
        import torch.nn.functional as F
        secs = self.args.sustain_s
        one = torch.ones((), device=self.dev, dtype=torch.float32)
        bf = torch.bfloat16
        cases = [("gemm_sustained", "bf16", (8192, 8192, 8192), secs),
                 ("gemm_sustained", "fp8_e4m3", (8192, 8192, 8192), secs),
                 ("gemm_sustained", "bf16", (8192, 7168, 8192), secs * 0.6),
                 ("attn_sustained", "bf16", (8, 16, 4096, 128), secs * 0.6)]
        for kernel, dt, shp, dur in cases:
            def body(clk, kernel=kernel, dt=dt, shp=shp, dur=dur):
                if kernel == "attn_sustained":
                    b, h, s_, d = shp
                    q = torch.randn(shp, device=self.dev, dtype=bf,
                                    requires_grad=True)
                    k = torch.randn_like(q, requires_grad=True)
                    v = torch.randn_like(q, requires_grad=True)
                    g = torch.randn_like(q)

                    def fn():
                        o = F.scaled_dot_product_attention(q, k, v,
                                                           is_causal=True)
                        torch.autograd.grad(o, (q, k, v), g)
                    fl = 3.5 * 4.0 * b * h * s_ * s_ * d / 2
                    shape = "%dx%dx%d" % (b * h, s_, d)
                    direction = "fwd_bwd"
                    what = "default SDPA backend, causal, b=%d h=%d" % (b, h)
                else:
                    M, N, K = shp
                    a = torch.randn(M, K, device=self.dev, dtype=bf)
                    bb = torch.randn(N, K, device=self.dev, dtype=bf)
                    if dt == "bf16":
                        bt = bb.t()
                        c = torch.empty(M, N, device=self.dev, dtype=bf)
                        fn = lambda: torch.mm(a, bt, out=c)  # noqa: E731
                    else:
                        a8 = a.to(torch.float8_e4m3fn)
                        b8 = bb.to(torch.float8_e4m3fn)
                        fn = lambda: torch._scaled_mm(  # noqa: E731
                            a8, b8.t(), scale_a=one, scale_b=one,
                            out_dtype=bf)
                    fl = 2.0 * M * N * K
                    shape = "%dx%dx%d" % shp
                    direction = "fwd"
                    what = "layout NT"
                fn()
                torch.cuda.synchronize()
                x = torch.cuda.Event(enable_timing=True)
                y = torch.cuda.Event(enable_timing=True)
                x.record()
                fn()
                y.record()
                y.synchronize()
                chunk = max(1, int(20e-3 / max(x.elapsed_time(y) / 1e3, 1e-6)))
                per = []
                t0 = time.time()
                t_end = t0 + dur
                while time.time() < t_end:
                    x = torch.cuda.Event(enable_timing=True)
                    y = torch.cuda.Event(enable_timing=True)
                    x.record()
                    for _ in range(chunk):
                        fn()
                    y.record()
                    y.synchronize()
                    per.append(x.elapsed_time(y) * 1e3 / chunk)
                t1 = time.time()
                q5 = max(1, len(per) // 5)
                first = statistics.median(per[:q5])
                last = statistics.median(per[-q5:])
                # clocks of the last 70 % of the loop (after the ramp)
                sm = self.sampler.summary(t0 + 0.3 * (t1 - t0), t1)
                self.row(kernel, dt, shape, direction, fl, 0,
                         statistics.median(per), min(per),
                         "%s; %.1f s loop of %d-call chunks; first fifth %.1f "
                         "TF/s, last fifth %.1f TF/s; last 70%%: %s" % (
                             what, t1 - t0, chunk, fl / first / 1e6,
                             fl / last / 1e6, sm))
            self.case("sustain:%s:%s:%s" % (kernel, dt, shp), dur + 4,
                      deadline, body)

    def gemm_check(self):
        """Relative errors against a float64 reference (once)."""
        torch = self.torch
        a = torch.randn(1024, 2048, device=self.dev, dtype=torch.bfloat16)
        b = torch.randn(512, 2048, device=self.dev, dtype=torch.bfloat16)
        ref = a.double() @ b.double().t()
        e_bf = ((torch.mm(a, b.t()).double() - ref).norm() / ref.norm()).item()
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        ref8 = a8.double() @ b8.double().t()
        one = torch.ones((), device=self.dev, dtype=torch.float32)
        notes = []
        for fast in (False, True):
            y = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one,
                                 out_dtype=torch.bfloat16,
                                 use_fast_accum=fast)
            notes.append(((y.double() - ref8).norm() / ref8.norm()).item())
        msg = ("check: rel err vs float64 of the same inputs: bf16 mm %.2e; "
               "fp8 _scaled_mm %.2e (fast_accum %.2e)" % (e_bf, notes[0],
                                                          notes[1]))
        print(msg, flush=True)
        return msg

    def gemm(self, deadline):
        torch = self.torch
        try:
            self.check_msg = self.gemm_check()
        except Exception as e:  # noqa: BLE001
            self.check_msg = "check failed: %s" % e
            print(self.check_msg, flush=True)
        one = torch.ones((), device=self.dev, dtype=torch.float32)
        for c in gemm_cases(self.args.quick):
            label = "gemm:%s:%dx%dx%d:%s%s" % (c["dtype"], c["m"], c["n"],
                                               c["k"], c["direction"],
                                               ":fast" if c["fast"] else "")

            def body(clk, c=c):
                M, N, K = c["m"], c["n"], c["k"]
                bf = torch.bfloat16
                if c["dtype"] == "bf16":
                    if c["layout"] == "NT":    # A[M,K] row, B = W^T, W[N,K]
                        a = torch.randn(M, K, device=self.dev, dtype=bf)
                        bmat = torch.randn(N, K, device=self.dev, dtype=bf).t()
                    elif c["layout"] == "NN":  # A[M,K] row, B[K,N] row
                        a = torch.randn(M, K, device=self.dev, dtype=bf)
                        bmat = torch.randn(K, N, device=self.dev, dtype=bf)
                    else:                      # TN: A = G^T, G[K,M]; B[K,N]
                        a = torch.randn(K, M, device=self.dev, dtype=bf).t()
                        bmat = torch.randn(K, N, device=self.dev, dtype=bf)
                    out = torch.empty(M, N, device=self.dev, dtype=bf)
                    fn = lambda: torch.mm(a, bmat, out=out)  # noqa: E731
                    ib = 2
                    dtn = "bf16"
                else:
                    a = torch.randn(M, K, device=self.dev, dtype=bf).to(
                        torch.float8_e4m3fn)
                    bt = torch.randn(N, K, device=self.dev, dtype=bf).to(
                        torch.float8_e4m3fn)
                    fast = c["fast"]
                    fn = lambda: torch._scaled_mm(  # noqa: E731
                        a, bt.t(), scale_a=one, scale_b=one,
                        out_dtype=torch.bfloat16, use_fast_accum=fast)
                    ib = 1
                    dtn = "fp8_e4m3" + ("_fastacc" if fast else "")
                med, mn, note = self.bench(fn)
                if med < 150 or "host_bound" in note:
                    # short: time a CUDA graph of it too (no launch gaps)
                    try:
                        side = torch.cuda.Stream()
                        side.wait_stream(torch.cuda.current_stream())
                        with torch.cuda.stream(side):
                            gm, gn, gnote = self.bench_graph(fn, med)
                        torch.cuda.synchronize()
                        note = "%s; eager median %.1f us (%s)" % (gnote, med,
                                                                  note)
                        med, mn = gm, gn
                    except Exception as e:  # noqa: BLE001
                        note += "; graph capture failed (%s)" % (
                            str(e).replace("\n", " ")[:80])
                fl = 2.0 * M * N * K
                nb = (M * K + N * K) * ib + M * N * 2
                lay = c["layout"] if c["dtype"] == "bf16" else \
                    "NT(_scaled_mm row x col)"
                self.row("gemm", dtn, "%dx%dx%d" % (M, N, K), c["direction"],
                         fl, nb, med, mn, "%s; layout=%s; %s; %s" % (
                             ",".join(c["labels"]), lay, note, clk()))
            self.case(label, est_gemm_s(c), deadline, body)

    def attn(self, deadline):
        torch = self.torch
        import torch.nn.functional as F
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except Exception as e:  # noqa: BLE001
            print("attn: no torch.nn.attention (%s)" % e)
            return
        for c in attn_cases(self.args.quick):
            label = "attn:%s:d%d:s%d:%s" % (c["backend"], c["d"], c["s"],
                                           "causal" if c["causal"] else "full")

            def body(clk, c=c):
                be = {"flash": SDPBackend.FLASH_ATTENTION,
                      "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}[
                          c["backend"]]
                if be is None:
                    raise RuntimeError("backend not in this torch")
                b, h, s, d = c["b"], c["h"], c["s"], c["d"]
                shp = (b, h, s, d)
                q = torch.randn(shp, device=self.dev, dtype=torch.bfloat16,
                                requires_grad=True)
                k = torch.randn_like(q, requires_grad=True)
                v = torch.randn_like(q, requires_grad=True)
                g = torch.randn_like(q)
                causal = c["causal"]
                kern = "attn_%s%s" % (c["backend"], "_causal" if causal else "")
                shape = "%dx%dx%d" % (b * h, s, d)
                f1 = attn_flops_fwd(c)
                io = 4 * b * h * s * d * 2  # q,k,v read, o written (bf16)
                base = "b=%d h=%d causal=%d" % (b, h, int(causal))
                with sdpa_kernel([be]):
                    def fwd():
                        with torch.no_grad():
                            F.scaled_dot_product_attention(q, k, v,
                                                           is_causal=causal)

                    def fb():
                        o = F.scaled_dot_product_attention(q, k, v,
                                                           is_causal=causal)
                        torch.autograd.grad(o, (q, k, v), g)
                    m1, n1, note1 = self.bench(fwd)
                    self.row(kern, "bf16", shape, "fwd", f1, io, m1, n1,
                             "%s; %s; %s" % (base, note1, clk()))
                    m2, n2, note2 = self.bench(fb)
                    self.row(kern, "bf16", shape, "fwd_bwd", 3.5 * f1,
                             io * 3, m2, n2, "%s; %s; %s" % (base, note2,
                                                             clk()))
                    # backward = (fwd+bwd) - fwd; fwd here has no autograd
                    # bookkeeping (saved logsumexp), a small bias
                    bw = m2 - m1
                    if bw > 0:
                        self.row(kern, "bf16", shape, "bwd_derived", 2.5 * f1,
                                 0, bw, 0, "%s; fwd_bwd median - fwd median"
                                 % base)
            self.case(label, est_attn_s(c), deadline, body)

    def mem(self, deadline):
        torch = self.torch
        import torch.nn.functional as F
        bf = torch.bfloat16
        dev = self.dev

        def frac(gbps):
            if self.copy_gbps:
                return "%.0f%% of copy" % (100 * gbps / self.copy_gbps)
            return ""

        def rec(kernel, dtype, shape, direction, nbytes, fn, extra, clk,
                flops=0, graph=True):
            med, mn, note = self.bench(fn)
            if graph:
                try:
                    gm, gn, gnote = self.bench_graph(fn, med)
                    note = "%s; eager median %.1f us (%s)" % (gnote, med, note)
                    med, mn = gm, gn
                except Exception as e:  # noqa: BLE001
                    note += "; graph capture failed (%s), eager time" % (
                        str(e).replace("\n", " ")[:80])
            g = nbytes / med / 1e3
            self.row(kernel, dtype, shape, direction, flops, nbytes, med, mn,
                     "; ".join(x for x in (extra, frac(g), note, clk()) if x))
            return med

        for kernel, p in mem_cases(self.args.quick):
            label = "mem:%s:%s" % (kernel, ",".join("%s=%s" % kv
                                                   for kv in p.items()))

            def body(clk, kernel=kernel, p=p):
                if kernel == "copy":
                    n = p["n"]
                    x = torch.randn(n, device=dev, dtype=bf)
                    y = torch.empty_like(x)
                    med = rec("copy", "bf16", "%d" % n, "fwd", 4 * n,
                              lambda: y.copy_(x),
                              "device-to-device copy_, bytes = read + write",
                              clk, graph=False)
                    self.copy_gbps = 4 * n / med / 1e3
                    return
                if kernel == "sum":
                    n = p["n"]
                    x = torch.randn(n, device=dev, dtype=bf)
                    rec("sum", "bf16", "%d" % n, "fwd", 2 * n,
                        lambda: x.sum(), "read bandwidth reference", clk,
                        graph=False)
                    return
                if kernel in ("layer_norm", "rms_norm"):
                    t, h = p["t"], p["h"]
                    x = torch.randn(t, h, device=dev, dtype=bf,
                                    requires_grad=True)
                    w = torch.randn(h, device=dev, dtype=bf,
                                    requires_grad=True)
                    bb = torch.randn(h, device=dev, dtype=bf,
                                     requires_grad=True)
                    if kernel == "layer_norm":
                        f = lambda: F.layer_norm(x, (h,), w, bb)  # noqa: E731
                        ins = (x, w, bb)
                    else:
                        if not hasattr(F, "rms_norm"):
                            raise RuntimeError("no F.rms_norm")
                        f = lambda: F.rms_norm(x, (h,), w)  # noqa: E731
                        ins = (x, w)
                    n = t * h
                    shape = "%dx%d" % (t, h)
                    with torch.no_grad():
                        rec(kernel, "bf16", shape, "fwd", 2 * n * 2,
                            f, "bytes = x read + y written", clk)
                    y = f()
                    dy = torch.randn_like(y)
                    rec(kernel, "bf16", shape, "bwd", 3 * n * 2,
                        lambda: torch.autograd.grad(y, ins, dy,
                                                    retain_graph=True),
                        "autograd.grad of saved graph; bytes = x, dy read + "
                        "dx written (weight grads ignored)", clk)
                    return
                if kernel in ("gelu_tanh", "add", "dropout"):
                    t, h = p["t"], p["h"]
                    n = t * h
                    shape = "%dx%d" % (t, h)
                    x = torch.randn(t, h, device=dev, dtype=bf,
                                    requires_grad=(kernel != "add"))
                    if kernel == "add":
                        r = torch.randn_like(x)
                        o = torch.empty_like(x)
                        rec("add", "bf16", shape, "fwd", 3 * n * 2,
                            lambda: torch.add(x, r, out=o),
                            "residual add; bytes = 2 read + 1 write", clk)
                        return
                    if kernel == "gelu_tanh":
                        f = lambda: F.gelu(x, approximate="tanh")  # noqa
                        with torch.no_grad():
                            rec(kernel, "bf16", shape, "fwd", 2 * n * 2, f,
                                "bytes = read + write", clk)
                        y = f()
                        dy = torch.randn_like(y)
                        rec(kernel, "bf16", shape, "bwd", 3 * n * 2,
                            lambda: torch.autograd.grad(y, (x,), dy,
                                                        retain_graph=True),
                            "bytes = x, dy read + dx written", clk)
                        return
                    f = lambda: F.dropout(x, p=0.1, training=True)  # noqa
                    with torch.no_grad():
                        rec(kernel, "bf16", shape, "fwd", 2 * n * 2 + n, f,
                            "p=0.1; bytes = read + write + 1-byte mask", clk)
                    y = f()
                    dy = torch.randn_like(y)
                    rec(kernel, "bf16", shape, "bwd", 2 * n * 2 + n,
                        lambda: torch.autograd.grad(y, (x,), dy,
                                                    retain_graph=True),
                        "bytes = dy, mask read + dx written", clk)
                    return
                if kernel == "silu_mul":
                    t, f_ = p["t"], p["h"]
                    n = t * f_
                    shape = "%dx%d" % (t, f_)
                    x = torch.randn(t, 2 * f_, device=dev, dtype=bf,
                                    requires_grad=True)

                    def f():
                        g_, u = x.chunk(2, dim=-1)
                        return F.silu(g_) * u
                    with torch.no_grad():
                        rec(kernel, "bf16", shape, "fwd", 3 * n * 2, f,
                            "unfused eager silu(g)*u on chunks of [T,2F]; "
                            "bytes = g,u read + out written (fused minimum)",
                            clk)
                    y = f()
                    dy = torch.randn_like(y)
                    rec(kernel, "bf16", shape, "bwd", 5 * n * 2,
                        lambda: torch.autograd.grad(y, (x,), dy,
                                                    retain_graph=True),
                        "unfused eager; bytes = g,u,dy read + dg,du written",
                        clk)
                    return
                if kernel == "silu_mul_compiled":
                    t, f_ = p["t"], p["h"]
                    n = t * f_
                    shape = "%dx%d" % (t, f_)
                    x = torch.randn(t, 2 * f_, device=dev, dtype=bf,
                                    requires_grad=True)

                    def swiglu(xx):
                        g_, u = xx.chunk(2, dim=-1)
                        return F.silu(g_) * u
                    cf = torch.compile(swiglu, dynamic=False)
                    t0 = time.time()
                    with torch.no_grad():
                        cf(x)
                    y = cf(x)
                    dy = torch.randn_like(y)
                    torch.autograd.grad(y, (x,), dy, retain_graph=True)
                    torch.cuda.synchronize()
                    tc = time.time() - t0
                    with torch.no_grad():
                        rec(kernel, "bf16", shape, "fwd", 3 * n * 2,
                            lambda: cf(x),
                            "torch.compile (Inductor/Triton) fused "
                            "silu(g)*u; compile %.0f s; bytes = g,u read + "
                            "out written" % tc, clk)
                    rec(kernel, "bf16", shape, "bwd", 5 * n * 2,
                        lambda: torch.autograd.grad(y, (x,), dy,
                                                    retain_graph=True),
                        "torch.compile backward; bytes = g,u,dy read + "
                        "dg,du written", clk)
                    return
                if kernel == "softmax":
                    t, h = p["t"], p["h"]
                    n = t * h
                    shape = "%dx%d" % (t, h)
                    x = torch.randn(t, h, device=dev, dtype=bf,
                                    requires_grad=True)
                    f = lambda: F.softmax(x, dim=-1)  # noqa: E731
                    with torch.no_grad():
                        rec(kernel, "bf16", shape, "fwd", 2 * n * 2, f,
                            "softmax over last dim; bytes = read + write", clk)
                    y = f()
                    dy = torch.randn_like(y)
                    rec(kernel, "bf16", shape, "bwd", 3 * n * 2,
                        lambda: torch.autograd.grad(y, (x,), dy,
                                                    retain_graph=True),
                        "bytes = y, dy read + dx written", clk)
                    return
                if kernel == "cross_entropy":
                    t, v = p["t"], p["v"]
                    n = t * v
                    shape = "%dx%d" % (t, v)
                    x = torch.randn(t, v, device=dev, dtype=bf,
                                    requires_grad=True)
                    tgt = torch.randint(0, v, (t,), device=dev)
                    f = lambda: F.cross_entropy(x, tgt)  # noqa: E731
                    with torch.no_grad():
                        m1 = rec(kernel, "bf16", shape, "fwd", n * 2, f,
                                 "bf16 logits, mean loss; bytes = logits "
                                 "read once (minimum)", clk)

                    def fb():
                        loss = F.cross_entropy(x, tgt)
                        torch.autograd.grad(loss, (x,))
                    m2 = rec(kernel, "bf16", shape, "fwd_bwd", 3 * n * 2, fb,
                             "bytes = logits read twice + dlogits written "
                             "(minimum)", clk)
                    if m2 > m1:
                        self.row(kernel, "bf16", shape, "bwd_derived", 0,
                                 2 * n * 2, m2 - m1, 0,
                                 "fwd_bwd median - fwd median; bytes = "
                                 "logits read + dlogits written; %s" %
                                 frac(2 * n * 2 / (m2 - m1) / 1e3))
                    return
                if kernel == "adamw_fused":
                    total = p["n"]
                    chunk = int(1e7)
                    ps = []
                    for i in range(total // chunk):
                        q = torch.randn(chunk, device=dev, dtype=torch.float32,
                                        requires_grad=True)
                        q.grad = torch.randn_like(q) * 1e-3
                        ps.append(q)
                    opt = torch.optim.AdamW(ps, lr=1e-4, weight_decay=0.1,
                                            fused=True)
                    opt.step()  # creates the state
                    rec(kernel, "fp32", "%d" % total, "step", 28 * total,
                        opt.step, "%d fp32 tensors of %d; bytes = p,g,m,v read "
                        "+ p,m,v written (28 B/param)" % (len(ps), chunk),
                        clk, graph=False)
                    return
                raise RuntimeError("unknown kernel " + kernel)
            def on_side(clk, body=body):
                # a side stream: CUDA graphs are captured on it, and the
                # autograd forward runs there so backward kernels do too
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    body(clk)
                torch.cuda.synchronize()
            est = 4.0 if kernel in ("adamw_fused", "cross_entropy") else 2.0
            if kernel == "silu_mul_compiled":
                est = 60.0
            self.case(label, est, deadline, on_side)

    def close(self):
        self.sampler.close()
        self.f.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="kernels.csv")
    ap.add_argument("--append", action="store_true",
                    help="append to --out instead of replacing it")
    ap.add_argument("--sections", default="sustain,gemm,attn,mem")
    ap.add_argument("--budget", type=float, default=500,
                    help="stop taking cases after this many seconds")
    ap.add_argument("--gemm-s", type=float, default=290)
    ap.add_argument("--attn-s", type=float, default=90)
    ap.add_argument("--mem-s", type=float, default=70)
    ap.add_argument("--sustain-s", type=float, default=8)
    ap.add_argument("--date", default="")
    ap.add_argument("--quick", action="store_true", help="a few small cases")
    ap.add_argument("--dry-run", action="store_true",
                    help="list the cases and a time estimate; needs no torch")
    args = ap.parse_args()
    secs = [s for s in args.sections.split(",") if s]

    if args.dry_run:
        gc = gemm_cases(args.quick)
        ac = attn_cases(args.quick)
        mc = mem_cases(args.quick)
        eg = sum(est_gemm_s(c) for c in gc)
        ea = sum(est_attn_s(c) for c in ac)
        for c in gc:
            print("gemm %-9s %6d %6d %6d %-4s %-9s fast=%d est %.2fs  %s" % (
                c["dtype"], c["m"], c["n"], c["k"], c["layout"],
                c["direction"], c["fast"], est_gemm_s(c),
                ",".join(c["labels"])))
        for c in ac:
            print("attn", c, "est %.2fs" % est_attn_s(c))
        for k, p in mc:
            print("mem", k, p)
        print("gemm cases %d (est %.0f s), attn cases %d (est %.0f s), "
              "mem cases %d" % (len(gc), eg, len(ac), ea, len(mc)))
        return 0

    run = Run(args)
    torch = run.torch
    print("gpu %s torch %s cuda %s date %s" % (run.gpu, run.tv, run.cv,
                                               run.date), flush=True)
    shares = {"sustain": 3.2 * args.sustain_s + 16, "gemm": args.gemm_s,
              "attn": args.attn_s, "mem": args.mem_s}
    carry = 0.0
    status = 0
    try:
        for s in secs:
            t0 = time.time()
            dl = min(run.deadline, t0 + shares[s] + carry)
            print("== section %s (until +%.0f s of %.0f)" % (
                s, dl - run.t_start, args.budget), flush=True)
            getattr(run, s)(dl)
            carry = max(0.0, dl - time.time())
    except Exception as e:  # noqa: BLE001
        print("FATAL: %s" % e, flush=True)
        traceback.print_exc()
        status = 1
    finally:
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
        run.close()
        base = os.path.splitext(args.out)[0]
        try:
            run.sampler.write(base + "_clocks.csv")
        except Exception as e:  # noqa: BLE001
            print("clock log not written: %s" % e)
        print("rows %d, errors %d, skipped %d, wall %.0f s" % (
            run.rows, run.errors, len(run.skipped), time.time() - run.t_start))
        if getattr(run, "check_msg", None):
            print(run.check_msg)
        for lab in run.skipped:
            print("skipped (time):", lab)
    return status


if __name__ == "__main__":
    sys.exit(main())
