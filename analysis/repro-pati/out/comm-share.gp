set terminal svg size 800,500 dynamic
set output 'comm-share.svg'
set title "Pati et al. (IISWC 2023): communication share of runtime\nweft: TP 8 x DP 4 on DGX A100 projected (lines); paper: 40-75 % (abstract, grey band)"
set xlabel 'hardware generations after A100 (weft datasheet trend)'
set ylabel 'communication, % of iteration'
set yrange [0:100]
set xtics 1
set grid
set key outside right
set object 1 rect from graph 0, first 40 to graph 1, first 75 fc rgb '#dddddd' fs solid 0.5 noborder behind
set label 1 'paper: 40-75 % (abstract)' at graph 0.02, first 72
plot 'comm-share.dat' using 1:2 with linespoints lw 2 title 'hidden 4096', \
  'comm-share.dat' using 1:3 with linespoints lw 2 title 'hidden 8192', \
  'comm-share.dat' using 1:4 with linespoints lw 2 title 'hidden 16384', \
  'comm-share.dat' using 1:5 with linespoints lw 2 title 'hidden 32768', \
  'comm-share.dat' using 1:6 with linespoints lw 2 title 'hidden 65536'
