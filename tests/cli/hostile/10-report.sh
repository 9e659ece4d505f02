# weft report (issue 35): study values are text to gnuplot, never commands;
# no silent mixing of a third varying column; clear messages.

# A study value with line breaks and '!' (gnuplot runs '!' lines in a
# shell), as the series and as x: no file 'pwned' appears anywhere.
cat >pw.xml <<'XML'
<study name="hostile">
  <set model="gpt-1.7b" cluster="dgx-a100" gpus="8" global_batch="8" pp="1"/>
  <var name="lab"/>
  <cross><axis name="tp" values="1 2"/><axis name="lab" values="a b"/></cross>
  <scenario tp="1" lab="y&#10;!touch pwned&#10;"/>
  <scenario tp="2" lab="y&#10;!touch pwned&#10;"/>
</study>
XML
if "$weft" sweep pw.xml -o pw.csv >/dev/null 2>err &&
   "$weft" report pw.csv -o plots --x tp >out 2>err &&
   "$weft" report pw.csv -o plots-x >/dev/null 2>>err &&
   [ -z "$(find . -name 'pwned*')" ] && [ -s plots/shares.png ] &&
   grep -q "title 'y !touch pwned '" plots/mfu.gp &&
   grep -q "'1 y !touch pwned ' 4, " plots/shares.gp &&
   grep -q "'b' 1, 'y !touch pwned ' 2)" plots-x/mfu.gp &&
   ! grep -q '^!' plots/*.gp plots-x/*.gp plots/*.dat out &&
   grep -q "^lab = y !touch pwned $" out
then ok; else ko "report -o: a study value with '!' lines runs nothing"; cat err; find . -name 'pwned*'; fi

# Quotes in labels: gnuplot strings double ''; data files hold no labels.
sed '2s/^\([^,]*,[^,]*,ok,[^,]*,[^,]*\),a,/\1,"say ""hi"", it'"'"'s",/' pw.csv >q.csv
if "$weft" report q.csv -o q >out 2>err && grep -q "say \"hi\", it''s" q/shares.gp &&
   grep -q "say \"hi\", it''s" q/mfu.gp && [ -s q/shares.svg ] && ! grep -q '"' q/shares.dat
then ok; else ko "report -o: a label with quotes"; cat err; fi

# Enhanced-text markup is shown as it is (noenhanced terminals).
if grep -q "^set terminal pngcairo noenhanced" plots/mfu.gp &&
   grep -q "^set terminal svg noenhanced" plots/shares.gp
then ok; else ko "report -o: terminals noenhanced"; fi

# A third varying column: the series are combinations of tp and pp, no
# scenarios of one series share an x.
cat >third.xml <<'XML'
<study name="third">
  <set model="gpt-1.7b" cluster="dgx-a100" global_batch="16"/>
  <cross><axis name="gpus" values="8 16"/><axis name="tp" values="1 2"/><axis name="pp" values="1 2"/></cross>
</study>
XML
if "$weft" sweep third.xml -o third.csv -j 2 >/dev/null 2>err &&
   "$weft" report third.csv -o t3 >out 2>err &&
   [ "$(grep -c '^tp = [12], pp = [12]$' out)" = 4 ] &&
   grep -q "^tp = 2, pp = 1$" out &&
   grep -q "title 'tp=2, pp=1'" t3/mfu.gp &&
   [ "$(grep -c '^# series' t3/report.dat)" = 4 ] &&
   "$weft" report third.csv --by pp >out2 2>>err &&
   [ "$(grep -c '^pp = [12], tp = [12]$' out2)" = 4 ]
then ok; else ko "report: a third varying column makes series of its own"; cat err out; fi

# Bad inputs and messages.
mkdir dd
expect 1 "weft: dd: is a directory" report dd
sed '2,$s/^\([^,]*,[^,]*,\)ok,/\1invalid,/' pw.csv >none.csv
expect 1 "weft: none.csv: no scenario is ok or no_fit; nothing to plot" report none.csv -o none
[ ! -e none ] && ok || ko "report -o with nothing to plot makes no folder"
if [ -e /dev/full ]; then
  "$weft" report pw.csv >/dev/full 2>err
  [ "$(cat err)" = "weft: standard output: write error: No space left on device" ] && ok ||
    ko "report >/dev/full: $(cat err)"
fi
# Without gnuplot: every script is written, and the message says so.
(PATH=/nonexistent; "$weft" report pw.csv -o nognu >/dev/null 2>err)
if [ "$(cat err)" = "weft: gnuplot: cannot run it (No such file or directory); install it (apt-get install gnuplot-nox) and run the scripts written in nognu: gnuplot NAME.gp there" ] &&
   [ -s nognu/shares.gp ] && [ -s nognu/mfu.gp ] && [ -s nognu/closed.gp ] && [ -s nognu/report.dat ]
then ok; else ko "report -o without gnuplot"; cat err; ls nognu; fi
# A cut last row is left out with a warning.
head -c -1 pw.csv >cut.csv
"$weft" report cut.csv >out 2>err
if [ "$(cat err)" = "weft: warning: cut.csv: its last row is cut; left out" ] &&
   grep -q "^5 scenarios" out
then ok; else ko "report: a cut last row"; cat err; fi
"$weft" report cut.csv -q >out 2>err
[ ! -s err ] && ok || ko "report -q: no warning of a cut row: $(cat err)"
