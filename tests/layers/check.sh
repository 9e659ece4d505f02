#!/bin/sh
# check.sh ROOT - the layering of the README's source tour, enforced on
# includes:
#   sim/base     the base utilities: nothing of weft's above them
#   sim/graph    sim/base, sim/graph (the task graph and the rank layout)
#   traces       sim/base, sim/graph, traces
#   platforms    sim/base, platforms
#   workloads    sim/base, sim/graph, platforms, traces, workloads
#   analysis     sim/base, analysis (study files)
#   sim          everything above (the engine, the commands)
# SimGrid headers only in the engine and the platform loader (sim/engine.c,
# sim/platload.c, sim/sgbridge.*); libxml2 only in the XML reader
# (sim/base/xin.c).  Then checks itself: a deliberate back-edge in a copy
# must be reported.  Prints "layers: N passed, N failed".
root=$1
pass=0
fail=0

# violations DIR: one line per include that breaks the rules.
violations() {
  (cd "$1" && for f in sim/base/*.[ch] sim/graph/*.[ch] traces/*.[ch] platforms/*.[ch] \
                       workloads/*.[ch] analysis/*.[ch] sim/*.[ch] sim/*.cpp; do
    [ -f "$f" ] || continue
    case $f in
      sim/base/*) allow="sim/base" ;;
      sim/graph/*) allow="sim/base sim/graph" ;;
      traces/*) allow="sim/base sim/graph traces" ;;
      platforms/*) allow="sim/base platforms" ;;
      workloads/*) allow="sim/base sim/graph platforms traces workloads" ;;
      analysis/*) allow="sim/base analysis" ;;
      *) allow="sim/base sim/graph sim platforms traces workloads analysis" ;;
    esac
    grep -n '^#include' "$f" | while IFS= read -r line; do
      inc=$(printf '%s\n' "$line" | sed -n 's/^[0-9]*:#include *\([<"]\)\([^">]*\).*/\1\2/p')
      case $inc in
        '<simgrid'*)
          case $f in sim/engine.c|sim/platload.c|sim/sgbridge.*) ;;
            *) echo "$f: SimGrid outside the engine: $line" ;; esac ;;
        '<libxml'*)
          [ "$f" = sim/base/xin.c ] || echo "$f: libxml2 outside the reader: $line" ;;
        '<'*) ;;
        '"'*/*)
          dir=$(dirname "${inc#\"}")
          ok=0
          for a in $allow; do [ "$dir" = "$a" ] && ok=1; done
          [ $ok = 1 ] || echo "$f: includes $dir/, above its layer: $line" ;;
        *) ;; # same directory
      esac
    done
  done)
}

out=$(violations "$root")
if [ -z "$out" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: layering"; echo "$out"; fi

# Self-check: a copy with platforms/ including workloads/ and sim/graph/
# including traces/ must be caught, and sim/graph/ from traces/ allowed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/platforms" "$tmp/sim/base" "$tmp/sim/graph" "$tmp/traces"
printf '#include "platforms/catalog.h"\n#include "workloads/model.h"\n' >"$tmp/platforms/bad.c"
printf '#include <simgrid/s4u.hpp>\n' >"$tmp/sim/base/bad.c"
printf '#include "sim/base/err.h"\n#include "traces/trace.h"\n' >"$tmp/sim/graph/bad.c"
printf '#include "sim/graph/graph.h"\n' >"$tmp/traces/good.c"
out=$(violations "$tmp")
if printf '%s\n' "$out" | grep -q 'platforms/bad.c: includes workloads/' &&
   printf '%s\n' "$out" | grep -q 'sim/base/bad.c: SimGrid outside' &&
   printf '%s\n' "$out" | grep -q 'sim/graph/bad.c: includes traces/' &&
   ! printf '%s\n' "$out" | grep -q 'traces/good.c' &&
   [ "$(printf '%s\n' "$out" | grep -c .)" -eq 3 ]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: the check misses a deliberate back-edge"; echo "$out"
fi
echo "layers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
