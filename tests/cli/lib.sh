# lib.sh - shared by the CLI test scripts (sourced; they set weft, dir, tmp).
# Counts cases in pass and fail.
pass=0
fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE "STDERR" ARGS... : exit code and exact stderr.
expect() {
  code=$1; want=$2; shift 2
  "$weft" "$@" >"$tmp/out" 2>"$tmp/err"
  got=$?
  if [ "$got" -eq "$code" ] && [ "$(cat "$tmp/err")" = "$want" ]; then ok
  else
    ko "weft $*"
    echo "  want exit $code: $want"
    echo "  got  exit $got: $(cat "$tmp/err")"
  fi
}
