# 30-signals.sh - issue 35 defect 5: weft plan and weft sweep stopped by a
# signal.  SIGINT to the whole process group (Ctrl-C on a terminal) must
# stop them with exit 130 and one line on stderr, with no child crashing
# in SimGrid's exit path; SIGTERM to the parent alone (as `kill PID` or
# an init system sends) must leave no child simulating as an orphan.
# Each run gets a process group of its own (setsid) and is signalled once
# its children are simulating, which the loops wait for (bounded).

# Processes of group $1 that are not zombies.
group_alive() {
  ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/' | wc -l
}

# Wait (at most 120 s) until group $1 has a child besides its leader.
wait_children() {
  n=0
  while [ "$(group_alive "$1")" -lt 2 ] && [ $n -lt 1200 ]; do
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.1; n=$((n + 1))
  done
  [ "$(group_alive "$1")" -ge 2 ]
}

# Wait (at most 10 s) until nothing of group $1 is left.
wait_gone() {
  n=0
  while [ "$(group_alive "$1")" -gt 0 ] && [ $n -lt 100 ]; do
    sleep 0.1; n=$((n + 1))
  done
  [ "$(group_alive "$1")" -eq 0 ]
}

# signal_case NAME HOW WANT_CODE WANT_ERR_RE ARGS...: run weft ARGS in a
# group of its own, signal it once children run (HOW: "-INT -- -PGID" to
# the group, or "-TERM PID" to the parent), then check the exit code, that
# stderr is one line matching WANT_ERR_RE, and that no process is left.
signal_case() {
  name=$1; how=$2; want=$3; want_err=$4; shift 4
  setsid "$weft" "$@" >sig.out 2>sig.err &
  pid=$!
  if ! wait_children $pid; then
    kill -9 -$pid 2>/dev/null; wait $pid 2>/dev/null
    ko "$name: no child simulating to signal (or setsid forked)"
    cat sig.err; return
  fi
  case $how in
    group) kill -INT -$pid ;;
    parent) kill -TERM $pid ;;
  esac
  wait $pid
  code=$?
  # Checked at once: weft reaps its children before it exits, so none may
  # be left now (an orphan would finish its simulation before dying).
  if [ "$(group_alive $pid)" -eq 0 ]; then gone=yes; else gone=no; fi
  wait_gone $pid || kill -9 -$pid 2>/dev/null
  lines=$(wc -l <sig.err)
  if [ "$code" -eq "$want" ] && [ "$gone" = yes ] && [ "$lines" -eq 1 ] &&
     grep -Eq "$want_err" sig.err &&
     ! grep -Eqi 'segmentation|backtrace|corrupted|core dumped' sig.err
  then ok
  else ko "$name: exit $code (want $want), processes gone: $gone, stderr $lines lines:"
    head -5 sig.err
  fi
}

if ! command -v setsid >/dev/null 2>&1; then
  echo "SKIP: 30-signals.sh needs setsid (util-linux)"
else
  # Minutes of simulations (1359 plans that fit), stopped after seconds.
  plan="plan --model llama3-70b --cluster dgx-h100 --gpus 1024 \
--global-batch 512 --top 100000 --budget 10m -j 2"
  signal_case "plan, SIGINT to the group" group 130 \
    '^weft: plan stopped by SIGINT after [0-9]+ plans simulated$' $plan
  signal_case "plan, SIGTERM to the parent" parent 143 \
    '^weft: plan stopped by SIGTERM after [0-9]+ plans simulated$' $plan
  # 48 scenarios of a second or more each.
  cat >long.xml <<'EOF'
<study name="long">
  <set model="gpt-7.5b" cluster="dgx-a100" gpus="256"/>
  <cross>
    <axis name="tp" values="1 2 4 8"/>
    <axis name="pp" values="1 2 4 8"/>
    <axis name="global_batch" values="512 1024 2048"/>
  </cross>
</study>
EOF
  rm -f long.csv
  signal_case "sweep, SIGINT to the group" group 130 \
    'sweep stopped: .* the same command resumes$' sweep long.xml -o long.csv -j 2
  rm -f long.csv
  signal_case "sweep, SIGTERM to the parent" parent 143 \
    'sweep stopped: .* the same command resumes$' sweep long.xml -o long.csv -j 2
fi

# The runner's own messages.  A timeout under a second is reported as
# configured (it said "timed out after 0 s" or "1 s", from the elapsed time
# rounded).  Scenarios of about a second each; a fast machine may finish
# one in time, so the test asks for at least one timed-out row, and that
# every row is either that or ok (not the exact pair, which failed once).
cat >slow.xml <<'EOF'
<study name="slow">
  <set model="gpt-7.5b" cluster="dgx-a100" gpus="256" global_batch="2048" pp="8"/>
  <cross>
    <axis name="tp" values="4 8"/>
  </cross>
</study>
EOF
rm -f slow.csv
"$weft" sweep slow.xml -o slow.csv -j 2 --timeout 0.5s >/dev/null 2>&1
st=$(cut -d, -f3,4 slow.csv | tail -n +2 | sed 's/^ok,.*/ok/')
if echo "$st" | grep -qx "error,timed out after 0.5 s" &&
   [ -z "$(echo "$st" | grep -vx "error,timed out after 0.5 s" | grep -vx ok)" ] &&
   [ "$(echo "$st" | wc -l)" -eq 2 ]
then ok; else ko "sweep --timeout 0.5s:"; cut -d, -f1-4 slow.csv; fi

# A row that cannot be written names the results file (it said "write
# error: File too large").  The file may hold the header and a few bytes
# (prlimit, in bytes); SIGXFSZ ignored, so that write() fails instead.
if command -v prlimit >/dev/null 2>&1; then
  cat >fast.xml <<'EOF'
<study name="fast">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="16"/>
</study>
EOF
  rm -f full.csv small.csv
  "$weft" sweep fast.xml -o full.csv >/dev/null 2>&1
  size=$(($(head -1 full.csv | wc -c) + 10))
  (trap '' XFSZ; prlimit --fsize=$size:$size "$weft" sweep fast.xml -o small.csv >/dev/null 2>err)
  code=$?
  if [ $code -eq 1 ] && [ "$(cat err)" = "weft: small.csv: write error: File too large" ]
  then ok; else ko "row write error (exit $code): $(cat err)"; fi
else
  echo "SKIP: the row write error needs prlimit (util-linux)"
fi
