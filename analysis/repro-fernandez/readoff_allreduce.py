#!/usr/bin/env python3
"""Read the NCCL all-reduce curves off the scan plot attributed to
Fernandez et al. (arXiv 2411.13055), as compare.py's PAPER_AR holds them.

usage: readoff_allreduce.py nccl-all-reduce-scan.png

The plot is not in this repository: it is network/images/nccl-all-reduce-
scan.png of stas00/ml-engineering (added in commit 4e52801, 2025-01-16,
blob 580d783e), whose network/README.md gives arXiv 2411.13055 as its
source (setups.md, S8).  1024 x 591 px, matplotlib: "NCCL Tests Scaling
Performance", bus bandwidth (GB/s) against message size (512 B to 16 GiB,
one tick per doubling) for 4 to 512 nodes.

Method: the grid lines were found by counting grey pixels per row and
column (y = 0 at row 476.5, 350 GB/s at row 96.5: 54.29 px per 50 GB/s;
tick k = 0..25 at column 108.1 + 34.44 k, size 2^(9+k) B).  At each tick
from 2 MiB on (the legend covers the smaller ones) the pixels within 2
columns of the tick whose colour is within 45 (RGB distance) of a series'
matplotlib colour are taken, and their median row is the read-off.  A
series hidden under another at a tick has no pixel there and no
read-off.  Spread of the matched pixels (marker and line width): +-5
GB/s; with the anti-aliased colours at the lines' edges, +-10 GB/s is
the uncertainty stated in compare.py.  Only the standard library is used.
"""
import struct
import sys
import zlib

SERIES = {4: (255, 255, 0), 8: (0, 0, 0), 16: (0, 128, 0),
          32: (255, 165, 0), 64: (255, 0, 0), 128: (191, 0, 191),
          256: (0, 191, 191), 512: (0, 0, 255)}


def read_png(path):
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("readoff_allreduce.py: %s: not a PNG file" % path)
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(d):
        ln, = struct.unpack(">I", d[pos:pos + 4])
        typ, body = d[pos + 4:pos + 8], d[pos + 8:pos + 8 + ln]
        pos += 12 + ln
        if typ == b"IHDR":
            w, h, bd, ct, _, _, il = struct.unpack(">IIBBBBB", body)
            if (bd, ct, il) != (8, 2, 0):
                sys.exit("readoff_allreduce.py: %s: not 8-bit RGB" % path)
        elif typ == b"IDAT":
            idat += body
    raw, stride, rows, prev, i = zlib.decompress(idat), 3 * w, [], None, 0
    prev = bytearray(stride)
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - 3] if x >= 3 else 0
            b = prev[x]
            c = prev[x - 3] if x >= 3 else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc
                                      else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: readoff_allreduce.py nccl-all-reduce-scan.png")
    w, h, img = read_png(sys.argv[1])
    if (w, h) != (1024, 591):
        sys.exit("readoff_allreduce.py: expected 1024 x 591 px, got %d x %d"
                 % (w, h))
    out = {}
    for k in range(12, 26):
        x = round(108.1 + 34.44 * k)
        for n, col in SERIES.items():
            ys = [y for y in range(90, 480) for xx in range(x - 2, x + 3)
                  if sum((img[y][3 * xx + j] - col[j]) ** 2
                         for j in range(3)) < 45 ** 2]
            # the black series meets the frame at the last tick
            if ys and not (n == 8 and k == 25):
                ys.sort()
                out.setdefault(n, {})[2 ** (9 + k)] = round(
                    (476.5 - ys[len(ys) // 2]) / 54.29 * 50)
    for n in sorted(out):
        print("%d: %s," % (n, out[n]))


if __name__ == "__main__":
    main()
