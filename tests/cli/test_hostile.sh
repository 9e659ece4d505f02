#!/bin/sh
# test_hostile.sh WEFT DIR - study files, results and output paths as a
# hostile or careless user would give them (issue 35): each file of
# DIR/hostile/*.sh is one defect's section, sourced in order in a scratch
# directory of its own.  Prints "hostile: N passed, N failed".
weft=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$dir/lib.sh"
for section in "$dir"/hostile/*.sh; do
  [ -f "$section" ] || continue
  work=$(mktemp -d "$tmp/section.XXXXXX")
  (pass=0; fail=0; cd "$work" && . "$section"; echo "$pass $fail" >"$work/.count")
  read -r p f <"$work/.count" || { p=0; f=1; echo "FAIL: $section died"; }
  pass=$((pass + p))
  fail=$((fail + f))
done
echo "hostile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
