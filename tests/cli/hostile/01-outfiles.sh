# Output files (issue 35, defect 2): replaced by one atomic rename, written
# in place when they are not regular files, never unlinked unless weft
# made them, no temporary left behind.
job="run --gpus 8 --gpus-per-node 8 --model gpt-1.7b --global-batch 8"

# Devices: copies of /dev/null and /dev/full made with mknod (root only;
# the real ones are never touched).  They stay devices; the full one is a
# write error that names the file.
if mknod null c 1 3 2>/dev/null && mknod full c 1 7 2>/dev/null; then
  "$weft" $job --paje null >/dev/null 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 0 ] && [ -c null ]; then ok; else ko "--paje to a null device: exit $rc, $(stat -c %F null)"; fi
  "$weft" $job --chrome full --json >/dev/null 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 1 ] && [ -c full ] && grep -qx "weft: full: write error: No space left on device" "$tmp/err"; then ok
  else ko "--chrome to a full device: exit $rc, $(stat -c %F full): $(cat "$tmp/err")"; fi
  "$weft" $job --paje full >/dev/null 2>"$tmp/err"
  if [ $? -eq 1 ] && [ -c full ]; then ok; else ko "--paje to a full device"; fi
else
  echo "(device cases skipped: mknod needs root)"
fi

# A FIFO is written through, not replaced.
mkfifo fifo
(wc -c <fifo >fifo.count &)
"$weft" $job --chrome fifo >/dev/null
rc=$?
sleep 0.3
if [ $rc -eq 0 ] && [ -p fifo ] && [ "$(cat fifo.count)" -gt 1000 ]; then ok
else ko "--chrome to a FIFO: exit $rc, $(stat -c %F fifo), $(cat fifo.count 2>/dev/null) bytes"; fi

# A link to a regular file stays a link; the file it names is replaced.
echo old >real.json
ln -s real.json link.json
"$weft" $job --chrome link.json >/dev/null
if [ -L link.json ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' real.json; then ok
else ko "--chrome through a link: $(ls -l link.json real.json)"; fi

# The mode of a replaced file is kept.
echo old >mode.json
chmod 600 mode.json
"$weft" $job --chrome mode.json >/dev/null
if [ "$(stat -c %a mode.json)" = 600 ]; then ok; else ko "mode not kept: $(stat -c %a mode.json)"; fi

# An empty name and a directory: refused, nothing left behind.
expect 1 "weft: cannot write to an empty file name" $job --chrome ""
expect 1 "weft: cannot write to an empty file name" $job --paje ""
mkdir adir
expect 1 "weft: adir: is a directory" $job --chrome adir
if [ -z "$(ls -a | grep weft-)" ]; then ok; else ko "temporaries left: $(ls -a | grep weft-)"; fi

# Killed at the rename (strace injects SIGKILL into rename()): the old
# file is still there, whole; only the temporary is extra.
if command -v strace >/dev/null 2>&1; then
  echo old >kill.json
  strace -f -qq -o /dev/null -e inject=rename:signal=SIGKILL "$weft" $job --chrome kill.json >/dev/null 2>&1
  # The temporary left shows the kill came at the rename (strace works).
  if [ "$(cat kill.json)" = old ] && ls kill.json.weft-* >/dev/null 2>&1; then ok
  else ko "killed at the rename: kill.json is '$(head -c 20 kill.json)', $(ls)"; fi
  rm -f kill.json.weft-*
else
  echo "(rename-kill case skipped: no strace)"
fi
