#!/usr/bin/env python3
"""probe_env.py - what the GPU machine has, before measure_kernels.py runs.

Prints: versions, the device, nvidia-smi clocks/power/performance state,
whether torch._scaled_mm runs fp8 e4m3 (and its error and a quick rate),
which SDPA backends run bf16 attention and which kernels they launch, and
whether F.rms_norm exists and what it launches.  Output goes to stdout.
"""
import datetime
import subprocess
import sys
import time
import traceback


def sh(cmd):
    print("$ " + cmd, flush=True)
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                           timeout=60)
        print(r.stdout + r.stderr, flush=True)
    except Exception as e:  # noqa: BLE001
        print("failed: %s" % e)


def kernels_of(torch, fn):
    """CUDA kernel names one call of fn launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            names.append(e.name[:100])
    return names


def rate(torch, fn, flops, reps=20):
    fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    b.synchronize()
    t = a.elapsed_time(b) / 1e3 / reps
    return "%.1f us, %.1f TFLOP/s" % (t * 1e6, flops / t / 1e12)


def main():
    print("date (machine): %s" % datetime.datetime.now().isoformat())
    print("python %s" % sys.version.replace("\n", " "))
    sh("nvidia-smi")
    sh("nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE")
    sh("nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,"
       "clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,"
       "enforced.power.limit,power.max_limit --format=csv")
    sh("which ncu nvcc; nvcc --version | tail -2")
    import torch
    print("torch %s, cuda %s, cudnn %s" % (torch.__version__, torch.version.cuda,
                                           torch.backends.cudnn.version()))
    p = torch.cuda.get_device_properties(0)
    print("device: %s, cc %d.%d, %d SMs, %.1f GiB, L2 %s" % (
        torch.cuda.get_device_name(0), p.major, p.minor,
        p.multi_processor_count, p.total_memory / 2**30,
        getattr(p, "L2_cache_size", "?")))
    try:
        print("torch.cuda.clock_rate(): %s MHz" % torch.cuda.clock_rate())
    except Exception as e:  # noqa: BLE001
        print("torch.cuda.clock_rate: %s" % e)
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        print("NVML: sm %d MHz (max %d), mem %d MHz, power %.0f W, "
              "enforced limit %.0f W" % (
                  pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                  pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                  pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                  pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                  pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3))
    except Exception as e:  # noqa: BLE001
        print("NVML failed: %s" % e)
    print("allow_bf16_reduced_precision_reduction=%s" %
          torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)

    dev = "cuda"
    M = N = K = 8192
    a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    b = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    print("bf16 mm 8192^3:", rate(torch, lambda: a @ b.t(), 2.0 * M * N * K))
    try:
        print("bf16 kernels:", kernels_of(torch, lambda: a @ b.t()))
    except Exception as e:  # noqa: BLE001
        print("profiler failed: %s" % e)
    try:
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        for fast in (False, True):
            f = lambda: torch._scaled_mm(a8, b8.t(), scale_a=one,  # noqa
                                         scale_b=one,
                                         out_dtype=torch.bfloat16,
                                         use_fast_accum=fast)
            print("fp8 _scaled_mm 8192^3 fast_accum=%s:" % fast,
                  rate(torch, f, 2.0 * M * N * K))
            print("  kernels:", kernels_of(torch, f))
        y = torch._scaled_mm(a8[:512], b8[:256].t(), scale_a=one, scale_b=one,
                             out_dtype=torch.bfloat16)
        ref = a8[:512].double() @ b8[:256].double().t()
        print("fp8 rel err vs float64 of the fp8 inputs: %.2e" %
              ((y.double() - ref).norm() / ref.norm()).item())
        try:
            torch._scaled_mm(a8[:, :8192 - 8], b8[:, :8192 - 8].t(),
                             scale_a=one, scale_b=one,
                             out_dtype=torch.bfloat16)
            print("fp8 K=8184 (not /16) ran")
        except Exception as e:  # noqa: BLE001
            print("fp8 K=8184 (not /16) refused: %s" % str(e)[:200])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    del a, b
    torch.cuda.empty_cache()

    import torch.nn.functional as F
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        print("SDPBackend members:", [x for x in dir(SDPBackend)
                                      if x.isupper()])
    except Exception as e:  # noqa: BLE001
        print("no torch.nn.attention: %s" % e)
        SDPBackend = None
    b, h, s, d = 8, 16, 4096, 128
    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16,
                    requires_grad=True)
    k = torch.randn_like(q, requires_grad=True)
    v = torch.randn_like(q, requires_grad=True)
    g = torch.randn_like(q)
    f1 = 4.0 * b * h * s * s * d / 2
    bes = [("default", None)]
    if SDPBackend is not None:
        for n in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
            if hasattr(SDPBackend, n):
                bes.append((n, getattr(SDPBackend, n)))
    for name, be in bes:
        try:
            def fwd():
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fb():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                torch.autograd.grad(o, (q, k, v), g)
            if be is None:
                r1, r2 = rate(torch, fwd, f1), rate(torch, fb, 3.5 * f1)
                kn = kernels_of(torch, fb)
            else:
                with sdpa_kernel([be]):
                    r1, r2 = rate(torch, fwd, f1), rate(torch, fb, 3.5 * f1)
                    kn = kernels_of(torch, fb)
            print("sdpa %s causal s=4096 d=128 b=8 h=16: fwd %s; fwd+bwd %s"
                  % (name, r1, r2))
            print("  kernels (fwd+bwd):", kn)
        except Exception as e:  # noqa: BLE001
            print("sdpa %s failed: %s" % (name, str(e)[:300]))
    print("F.rms_norm present: %s" % hasattr(F, "rms_norm"))
    try:
        x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
        w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
        print("rms_norm kernels:", kernels_of(
            torch, lambda: F.rms_norm(x, (4096,), w)))
        print("layer_norm kernels:", kernels_of(
            torch, lambda: F.layer_norm(x, (4096,), w, w)))
    except Exception as e:  # noqa: BLE001
        print("rms_norm probe failed: %s" % e)
    sh("nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,"
       "temperature.gpu,clocks_event_reasons.active --format=csv")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("probe took %.1f s" % (time.time() - t0))
