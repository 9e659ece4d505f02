#!/bin/sh
# check.sh WEFT README [--update] - the README's printed outputs are the
# program's.  A block of printed output is a ``` fence right after a line
#   <!-- output: ARGS -->
# and holds what `weft ARGS` prints (standard output, then standard error),
# or, when its first line is "$ build/weft ARGS", that line and then the
# output.  The wall time on the "simulated ... in X s" line is masked: it
# is the only figure that varies between identical runs.  --update rewrites
# the blocks in place (after a change that moves the figures).  A fence
# right after a line
#   <!-- file: NAME -->
# is written to NAME in the scratch directory the commands run in, so that
# a file the README shows is the file a later output block reads.
# Prints "readme: N passed, N failed".
weft=$1
readme=$2
update=$3
case $weft in /*) ;; *) weft=$PWD/$weft ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/work"
# The examples run in an empty folder where the README's files are
# written; the repository's tests/ (fixtures the examples name) is there.
repo=$(cd "$(dirname "$readme")" && pwd)
ln -s "$repo/tests" "$tmp/work/tests"
mask() { sed 's/^\(  simulated .* in \)[0-9.]* s\( (.*)\)\{0,1\}$/\1X s\2/'; }
pass=0
fail=0
n=0
: >"$tmp/new"
state=text
while IFS= read -r line; do
  case $state in
  text)
    printf '%s\n' "$line" >>"$tmp/new"
    case $line in
    '<!-- output: '*' -->')
      args=${line#'<!-- output: '}
      args=${args%' -->'}
      state=fence ;;
    '<!-- file: '*' -->')
      name=${line#'<!-- file: '}
      name=${name%' -->'}
      : >"$tmp/work/$name"
      state=filefence ;;
    esac ;;
  filefence)
    printf '%s\n' "$line" >>"$tmp/new"
    case $line in '```'*) state=file ;;
    *) echo "readme: no fence after <!-- file: $name -->"; exit 1 ;; esac ;;
  file)
    printf '%s\n' "$line" >>"$tmp/new"
    if [ "$line" = '```' ]; then state=text
    else printf '%s\n' "$line" >>"$tmp/work/$name"; fi ;;
  fence)
    printf '%s\n' "$line" >>"$tmp/new"
    [ "$line" = '```' ] || { echo "readme: no fence after <!-- output: $args -->"; exit 1; }
    : >"$tmp/old"
    state=block ;;
  block)
    if [ "$line" = '```' ]; then
      n=$((n + 1))
      prompt=""
      head -1 "$tmp/old" | grep -q '^\$ build/weft ' && prompt="\$ build/weft $args"
      # shellcheck disable=SC2086
      { [ -n "$prompt" ] && printf '%s\n' "$prompt"; (cd "$tmp/work" && "$weft" $args 2>&1); } >"$tmp/out"
      mask <"$tmp/old" >"$tmp/masked_old"
      if mask <"$tmp/out" | cmp -s - "$tmp/masked_old"; then
        pass=$((pass + 1))
        cat "$tmp/old" >>"$tmp/new"
      else
        if [ "$update" = "--update" ]; then
          cat "$tmp/out" >>"$tmp/new"
          echo "readme: updated the output of weft $args"
        else
          fail=$((fail + 1))
          echo "FAIL: README's output of weft $args differs from the program's:"
          mask <"$tmp/out" | diff "$tmp/masked_old" - | head -20
          cat "$tmp/old" >>"$tmp/new"
        fi
      fi
      printf '%s\n' "$line" >>"$tmp/new"
      state=text
    else
      printf '%s\n' "$line" >>"$tmp/old"
    fi ;;
  esac
done <"$readme"
[ "$n" -gt 0 ] || { echo "readme: no <!-- output: --> blocks in $readme"; exit 1; }
# The README's example commands in its sh blocks (continuation lines
# joined, a trailing # comment and a > redirection dropped) run in the
# scratch directory (issue 40: the examples are run, not only printed):
# every `build/weft run` with --dry-run, which resolves the settings
# without simulating; platform, graph, coll, list and help as they are.
# plan, sweep and report need minutes or a study's results: not run.
awk '
  /^```sh/ { sh = 1; next }
  /^```/ { sh = 0; next }
  sh && cont { line = line " " $0 }
  sh && !cont && /^build\/weft (run|platform|graph|coll|list|help) / { line = $0 }
  sh && (cont || /^build\/weft (run|platform|graph|coll|list|help) /) {
    cont = sub(/[ ]*\\$/, "", line)
    if (!cont) {
      sub(/[ ]+#.*$/, "", line); sub(/[ ]+>.*$/, "", line)
      gsub(/[ ]+/, " ", line); print line
    }
  }
' "$readme" >"$tmp/runs"
while IFS= read -r cmd; do
  args=${cmd#build/weft }
  dry=""
  case $args in *' --dry-run'*) ;; run\ *) dry=--dry-run ;; esac
  # shellcheck disable=SC2086
  if (cd "$tmp/work" && "$weft" $args $dry >/dev/null 2>"$tmp/err"); then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: the README's '$cmd' is refused: $(cat "$tmp/err")"
  fi
done <"$tmp/runs"
grep -q '^build/weft run ' "$tmp/runs" || { echo "readme: no build/weft run example found"; fail=$((fail + 1)); }
# The test counts the README gives ("ends with `Ok: N`", "N test programs:
# S Criterion suites ... and K scripts") are the build's (the build of
# $weft; a build without valgrind's test has one fewer than the README).
build=$(dirname "$weft")
if meson introspect --tests "$build" >"$tmp/tests.json" 2>/dev/null; then
  set -- $(python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
names = [x["name"] for x in t]
suites = sum(1 for x in t if x["cmd"][0].split("/")[-1].startswith("test_") and not x["cmd"][0].endswith(".sh"))
extra = 0 if "valgrind" in names else 1
dup = sorted(set(n for n in names if names.count(n) > 1))
print(len(t) + extra, suites, len(t) - suites + extra, ",".join(dup) or "-")' "$tmp/tests.json")
  ok=$(sed -n 's/.*ends with `Ok: \([0-9]*\)`.*/\1/p' "$readme" | head -1)
  progs=$(sed -n 's/.*(\([0-9]*\) test programs: \([0-9]*\) Criterion suites.*/\1 \2/p' "$readme" | head -1)
  scripts=$(tr '\n' ' ' <"$readme" | sed -n 's/.* Criterion suites[^()]*, and \([0-9]*\) scripts.*/\1/p')
  if [ "$ok" = "$1" ] && [ "$progs" = "$1 $2" ] && [ "$scripts" = "$3" ] && [ "$4" = - ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: README's test counts (Ok: $ok; programs and suites: $progs; scripts: $scripts) are not the build's: $1 tests, $2 Criterion suites, $3 scripts; names given twice: $4"
  fi
else
  echo "readme: meson introspect --tests $build failed: the test counts are not checked"
fi
if [ "$update" = "--update" ]; then
  cp "$tmp/new" "$readme"
fi
echo "readme: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
