#!/bin/sh
# check.sh WEFT_BUILD_DIR SCRIPT_DIR - regression guard on the accuracy
# against published measurements: re-runs the held-back COLL rows and the
# first five rows of Megatron-LM's Table 1 and fails if the errors grow past
# the issue's targets (what was reached is in tests/validation/*.out):
# ring rows (64 MiB and above) mean |error| <= 3 % and worst <= 10 %; NVLS
# rows worst <= 5 %; the tree row <= 10 %; NVLSTree rows worst <= 11 %
# (two-node B200 -10.2 %); Fernandez et al.'s all-reduce scan on 4-512
# H100 nodes (fern_scan.sh) mean |error| <= 25 % at 2-16 MiB, <= 8 % at
# 32-512 MiB, <= 10 % from 1 GiB; the held-back points of the
# measured 8 x H100 curves from 64 MiB up worst <= 10 %, below 64 MiB mean
# <= 10 % and at most 3 points beyond 15 %; Table 1 rows 1-5
# (with the authors' settings) mean |error| <= 5 % and worst <= 8 %; the collective constants in the
# sources equal what analysis/calibrate_coll.py derives from their rows;
# fused attention (tests/build/attn_rows on attn_rows.csv): every GPU and
# kernel's held-back rows within 10 % mean |error|, and the catalog's
# attention and GEMM constants equal what analysis/fit_attention.py and
# analysis/fit_gemm.py derive, GEMM held-back rows within 10 % mean shape
# error per set (fit_gemm.py --check), and the catalog's datasheets trend what
# analysis/fit_growth.py derives; memory-bound kernels (tests/build/mem_rows
# on mem_rows.csv) within 15 % mean per group of held-back rows, and the
# catalog's memory-bound shares equal what analysis/fit_membound.py derives.
# Prints "validation: N passed, N failed".
build=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
verdict() { # NAME OK
  if [ "$2" = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1"; fi
}
# rows NAME COUNT MIN: a row set must not be empty (or short): an error
# bound over no rows holds vacuously.
rows() {
  verdict "$1: $2 rows, expected at least $3" "$(echo "$2 $3" | awk '{ print ($1 >= $2) }')"
}
sh "$dir/coll_rows.sh" "$build" >"$tmp/coll" || { echo "coll_rows.sh failed"; exit 1; }
sh "$dir/megatron_table1.sh" "$build" 1 5 >"$tmp/t1" || { echo "megatron_table1.sh failed"; exit 1; }
sh "$dir/coll_curves.sh" "$build" >"$tmp/curves" || { echo "coll_curves.sh failed"; exit 1; }
sh "$dir/fern_scan.sh" "$build" >"$tmp/fern" || { echo "fern_scan.sh failed"; exit 1; }
stats() { # FILE ALGO-FILTER BACK: error in column NF-BACK; "count mean worst"
  awk -v want="$2" -v back="$3" 'NR > 1 && (want == "" || $5 == want) {
      e = $(NF - back); sub("%", "", e); e = e + 0; if (e < 0) e = -e
      n++; s += e; if (e > m) m = e }
    END { printf "%d %.2f %.2f\n", n, n ? s / n : 0, m }' "$1"
}
if python3 "$dir/../../analysis/calibrate_coll.py" --check >"$tmp/cal" 2>&1; then cal=1; else cal=0; fi
tail -1 "$tmp/cal"
verdict "constants differ from analysis/calibrate_coll.py: $(grep FAIL "$tmp/cal" | tr '\n' ' ')" "$cal"
if "$build/tests/attn_rows" "$dir/attn_rows.csv" 10 >"$tmp/attn"; then attn=1; else attn=0; fi
grep "rows:" "$tmp/attn"
verdict "attention held-back rows: $(grep FAIL "$tmp/attn" | tr '\n' ' ')" "$attn"
# Memory-bound kernels (tests/build/mem_rows on mem_rows.csv): held-back
# rows within 15 % mean per GPU, family and set, except three groups held
# at today's errors (tests/validation/README.md says why): Liger's
# backward/full modes of the PyTorch norms (15.4 %) and Megatron's SwiGLU
# rows (forward 34.3 %, backward/full 65.5 %).
if "$build/tests/mem_rows" "$dir/mem_rows.csv" 15 liger-fb:norm=16 \
    liger:elem=35 liger-fb:elem=67 >"$tmp/mem"; then mem=1; else mem=0; fi
grep "held rows:" "$tmp/mem"
verdict "memory-bound held-back rows: $(grep FAIL "$tmp/mem" | tr '\n' ' ')" "$mem"
if python3 "$dir/../../analysis/fit_membound.py" --check >"$tmp/mfit" 2>&1; then mfit=1; else mfit=0; fi
tail -1 "$tmp/mfit"
verdict "memory-bound constants differ from analysis/fit_membound.py: $(grep FAIL "$tmp/mfit" | tr '\n' ' ')" "$mfit"
if python3 "$dir/../../analysis/fit_attention.py" --check >"$tmp/afit" 2>&1; then afit=1; else afit=0; fi
tail -1 "$tmp/afit"
verdict "attention constants differ from analysis/fit_attention.py: $(grep FAIL "$tmp/afit" | tr '\n' ' ')" "$afit"
if python3 "$dir/../../analysis/fit_gemm.py" --check >"$tmp/gfit" 2>&1; then gfit=1; else gfit=0; fi
tail -2 "$tmp/gfit"
verdict "GEMM constants or held-back rows (analysis/fit_gemm.py --check): $(grep FAIL "$tmp/gfit" | tr '\n' ' ')" "$gfit"
if python3 "$dir/../../analysis/fit_growth.py" --check "$dir/../../platforms/catalog.xml" >"$tmp/grow" 2>&1; then grow=1; else grow=0; fi
tail -1 "$tmp/grow"
verdict "growth rates differ from analysis/fit_growth.py: $(grep 'check:' "$tmp/grow" | tr '\n' ' ')" "$grow"
set -- $(stats "$tmp/coll" ring 0)
echo "ring rows: $1, mean |error| $2 %, worst $3 %"
rows "ring" "$1" 10
verdict "ring mean error $2 % > 3 %" "$(echo "$2" | awk '{ print ($1 <= 3) }')"
verdict "ring worst error $3 % > 10 %" "$(echo "$3" | awk '{ print ($1 <= 10) }')"
set -- $(stats "$tmp/coll" tree 0)
echo "tree rows: $1, worst $3 %"
rows "tree" "$1" 1
verdict "tree worst error $3 % > 10 %" "$(echo "$3" | awk '{ print ($1 <= 10) }')"
set -- $(awk 'NR > 1 && $2 >= 67108864 && $6 != "cal" { e = $5; sub("%", "", e); e += 0; if (e < 0) e = -e
    n++; if (e > m) m = e } END { printf "%d %.2f\n", n, m }' "$tmp/curves")
echo "H100 curve points >= 64 MiB held back: $1, worst $2 %"
rows "H100 curve points >= 64 MiB" "$1" 1
verdict "curve worst error $2 % > 10 %" "$(echo "$2" | awk '{ print ($1 <= 10) }')"
# Below 64 MiB (LL and LL128 inside the node, under the measured floor):
# no worst-case bound, since the 512 KiB all-reduce (69 us) is slower than
# the 1 and 2 MiB ones of the same run; a mean and a count instead.
set -- $(awk 'NR > 1 && $2 < 67108864 && $6 != "cal" { e = $5; sub("%", "", e); e += 0; if (e < 0) e = -e
    n++; s += e; if (e > 15) c++ } END { printf "%d %.2f %d\n", n, n ? s / n : 0, c }' "$tmp/curves")
echo "H100 curve points < 64 MiB held back: $1, mean |error| $2 %, $3 beyond 15 %"
rows "H100 curve points < 64 MiB" "$1" 1
verdict "small curve points mean error $2 % > 10 %" "$(echo "$2" | awk '{ print ($1 <= 10) }')"
verdict "small curve points beyond 15 %: $3 > 3" "$(echo "$3" | awk '{ print ($1 <= 3) }')"
set -- $(stats "$tmp/coll" nvls 0)
echo "NVLS rows: $1, mean |error| $2 %, worst $3 %"
rows "NVLS" "$1" 1
verdict "NVLS worst error $3 % > 5 %" "$(echo "$3" | awk '{ print ($1 <= 5) }')"
set -- $(stats "$tmp/coll" nvlstree 0)
echo "NVLSTree rows: $1, mean |error| $2 %, worst $3 %"
rows "NVLSTree" "$1" 7
verdict "NVLSTree worst error $3 % > 11 %" "$(echo "$3" | awk '{ print ($1 <= 11) }')"
# Fernandez et al.'s all-reduce scan on 4-512 DGX H100 nodes (fern_scan.sh,
# held back; issue 37: before it, small 84.5 %, mid 20.5 %, large 7.4 %;
# after, 17.4 %, 5.3 % and 7.1 %): mean |error| of the bus bandwidth per
# band of sizes.
for band in small:25 mid:8 large:10; do
  set -- $(awk -v b="${band%%:*}:" '$1 == b { print $2, $6 }' "$tmp/fern" | tr -d ',')
  echo "Fernandez scan ${band%%:*}: $1 points, mean |error| $2 %"
  rows "Fernandez scan ${band%%:*}" "$1" 15
  verdict "Fernandez scan ${band%%:*} mean error $2 % > ${band#*:} %" "$(echo "$2 ${band#*:}" | awk '{ print ($1 <= $2) }')"
done
set -- $(stats "$tmp/t1" "" 1)
echo "Table 1 rows 1-5: $1, mean |error| $2 %, worst $3 %"
rows "Table 1" "$1" 5
# Issue 37's target with the authors' own settings (megatron_table1.sh,
# the megatron-2021 stack: rows 1-5 at 0.0 to +6.7 %, mean 3.8 %, since
# session 46 counted Megatron-LM 2021's own kernels, --fusion jit).
verdict "Table 1 mean error $2 % > 5 %" "$(echo "$2" | awk '{ print ($1 <= 5) }')"
verdict "Table 1 worst error $3 % > 8 %" "$(echo "$3" | awk '{ print ($1 <= 8) }')"
echo "validation: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
