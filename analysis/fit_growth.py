#!/usr/bin/env python3
"""fit_growth.py - the growth rates of the catalog's "datasheets" trend.

Each quantity is a least-squares line through log(value) against the year
of NVIDIA's data-center flagships (year = announcement at GTC), so the rate
per year is exp(slope).  Values are the vendors' datasheet figures, per GPU:
  V100 SXM2 (2017): FP16 tensor 125 TFLOP/s, FP32 15.7, 32 GB HBM2 at
    900 GB/s, NVLink 2 at 150 GB/s per direction, 300 W (Volta datasheet).
  A100 SXM4 80GB (2020): BF16/FP16 312, TF32 156, FP32 19.5, 80 GB at
    2039 GB/s, NVLink 3 300 GB/s, 400 W (A100 datasheet).
  H100 SXM5 (2022): BF16/FP16 989.4, FP8 1978.9, TF32 494.7, FP32 66.9,
    80 GB at 3350 GB/s, NVLink 4 450 GB/s, 700 W (H100 datasheet).
  B200 (2024): BF16/FP16 2250, FP8 4500, TF32 1125, FP32 75, 180 GB at
    8000 GB/s, NVLink 5 900 GB/s, 1000 W (DGX B200 datasheet).
  NIC: scale-out bandwidth per GPU of the DGX reference systems: DGX-1V
    (2017) 4x EDR for 8 GPUs, 50 Gb/s; DGX A100 (2020) HDR 200; DGX H100
    (2022) NDR 400; DGX B200 (2024) NDR 400; DGX GB300 (2025) XDR 800.
Usage: fit_growth.py [--check platforms/catalog.xml]
"""
import math
import re
import sys

POINTS = {
    "fp32": [(2017, 15.7), (2020, 19.5), (2022, 66.9), (2024, 75)],
    "tf32": [(2020, 156), (2022, 494.7), (2024, 1125)],
    "bf16": [(2017, 125), (2020, 312), (2022, 989.4), (2024, 2250)],
    "fp16": [(2017, 125), (2020, 312), (2022, 989.4), (2024, 2250)],
    "fp8": [(2022, 1978.9), (2024, 4500)],
    "hbm_bw": [(2017, 900), (2020, 2039), (2022, 3350), (2024, 8000)],
    "hbm_cap": [(2017, 32), (2020, 80), (2022, 80), (2024, 180)],
    "nvlink": [(2017, 150), (2020, 300), (2022, 450), (2024, 900)],
    "nic": [(2017, 50), (2020, 200), (2022, 400), (2024, 400), (2025, 800)],
    "power": [(2017, 300), (2020, 400), (2022, 700), (2024, 1000)],
}


def rate(points):
    xs = [x for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / \
        sum((x - mx) ** 2 for x in xs)
    return round(math.exp(slope), 3)


def main():
    rates = {q: rate(p) for q, p in POINTS.items()}
    for q, r in rates.items():
        print(f"{q:8s} x{r:.3f} per year (doubling in "
              f"{math.log(2) / math.log(r):.2f} years)")
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        text = open(sys.argv[2]).read()
        m = re.search(r'<trend name="datasheets".*?</trend>', text, re.S)
        if not m:
            print("check: no datasheets trend in", sys.argv[2])
            return 1
        bad = 0
        for q, r in rates.items():
            c = re.search(r'quantity="%s" per_year="([0-9.]+)"' % q, m.group(0))
            if not c or abs(float(c.group(1)) - r) > 5e-4:
                print(f"check: {q}: catalog {c.group(1) if c else 'none'}, "
                      f"fit {r:.3f}")
                bad += 1
        print(f"check: {len(rates) - bad} match, {bad} differ")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
