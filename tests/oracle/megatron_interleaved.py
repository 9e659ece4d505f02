#!/usr/bin/env python3
"""megatron_interleaved.py - the oracle for weft's flexible interleaved
schedule (workloads/schedule.c): a transcription of how Megatron-Core orders
the forward and backward passes of one pipeline rank.

Source: github.com/NVIDIA/Megatron-LM, megatron/core/pipeline_parallel/
schedules.py at d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22):
get_pp_rank_microbatches (the warm-up count), get_schedule_table (the
virtual micro-batch table), and forward_backward_pipelining_with_interleaving
(its warm-up loop runs forward k for k < W, its steady loop runs forward
k + W then backward k, its cool-down runs the remaining backwards; backward
k takes chunk V - 1 - table_chunk[k] and pops that chunk's oldest saved
forward, input_tensors[chunk].pop(0)).  Only the training path (not
forward_only, no overlap_moe_expert_parallel_comm) is transcribed.

The one deliberate difference, which weft keeps: with M == PP every pass is
warm-up, as in Megatron-LM before commit 4295be1a6c (2024-11-01, "tunable
schedule with overlapping"), the code of the SC21 paper's runs.

Usage: megatron_interleaved.py PP V M [G]   prints every rank's order as
"F<mb>.<chunk>" / "B<mb>.<chunk>", one rank a line, in the format of
tests/test_schedule.c's order().
       megatron_interleaved.py --table   prints "PP V M G RANK: order" for
every group size Megatron-Core accepts (and one group of M < PP) with PP
2-4, V 2-3, M 1-10: tests/oracle/megatron_interleaved.txt, which
tests/test_schedule.c compares with weft's orders.
"""
import sys


def accepted(pp, m, group):
    """Megatron-Core's checks in forward_backward_pipelining_with_interleaving
    (group in [PP, M], last group empty or at least PP), and Llama 3's one
    group of all M < PP."""
    if group < pp:
        return group == m
    return group <= m and (m % group == 0 or m % group >= pp)


def get_schedule_table(num_microbatches, num_model_chunks, group):
    table = []
    for lo in range(0, num_microbatches, group):
        hi = num_microbatches if lo + group >= num_microbatches else lo + group
        table.extend((mb, c) for c in range(num_model_chunks)
                     for mb in range(lo, hi))
    return table


def warmup(pp, rank, m, v, group, legacy_all_warmup=True):
    total = m * v
    if legacy_all_warmup and m == pp:
        return total
    w = (pp - rank - 1) * 2 + (v - 1) * group
    return min(w, total)


def rank_order(pp, rank, v, m, group=None):
    group = pp if group is None else group
    table = get_schedule_table(m, v, group)
    total = m * v
    w = warmup(pp, rank, m, v, group)
    saved = [[] for _ in range(v)]  # input_tensors, per chunk
    ops = []

    def fwd(k):
        mb, c = table[k]
        saved[c].append(mb)
        ops.append("F%d.%d" % (mb, c))

    def bwd(k):
        c = v - 1 - table[k % total][1]
        ops.append("B%d.%d" % (saved[c].pop(0), c))

    for k in range(w):
        fwd(k)
    for k in range(total - w):
        fwd(k + w)
        bwd(k)
    for k in range(total - w, total):
        bwd(k)
    return ops


def table():
    for pp in range(2, 5):
        for v in range(2, 4):
            for m in range(1, 11):
                for g in range(1, m + 1):
                    if accepted(pp, m, g):
                        for r in range(pp):
                            print("%d %d %d %d %d: %s" % (
                                pp, v, m, g, r,
                                " ".join(rank_order(pp, r, v, m, g))))


if __name__ == "__main__":
    if sys.argv[1:] == ["--table"]:
        table()
        sys.exit(0)
    args = [int(a) for a in sys.argv[1:]]
    pp, v, m = args[:3]
    g = args[3] if len(args) > 3 else None
    for r in range(pp):
        print(" ".join(rank_order(pp, r, v, m, g)))
