set terminal svg size 900,650 dynamic
set output 'comm-share.svg'
set title "Pati et al. (IISWC 2023): communication share of runtime; paper: 40-75 % (abstract, grey band)\nweft: TP 8 x DP 4 on DGX A100 projected\n(solid: datasheets trend, dashed: memory-wall trend)"
set xlabel 'hardware generations after A100 (weft list trends)'
set ylabel 'communication, % of iteration'
set yrange [0:100]
set xtics 1
set grid
set key below horizontal maxcols 5
set object 1 rect from graph 0, first 40 to graph 1, first 75 fc rgb '#dddddd' fs solid 0.5 noborder behind
set label 1 'paper: 40-75 % (abstract)' at graph 0.02, first 72
plot 'comm-share.dat' using 1:2 with linespoints lc 1 dt 1 lw 2 title 'hidden 4096, datasheets', \
  'comm-share.dat' using 1:3 with linespoints lc 2 dt 1 lw 2 title 'hidden 8192, datasheets', \
  'comm-share.dat' using 1:4 with linespoints lc 3 dt 1 lw 2 title 'hidden 16384, datasheets', \
  'comm-share.dat' using 1:5 with linespoints lc 4 dt 1 lw 2 title 'hidden 32768, datasheets', \
  'comm-share.dat' using 1:6 with linespoints lc 5 dt 1 lw 2 title 'hidden 65536, datasheets', \
  'comm-share.dat' using 1:7 with linespoints lc 1 dt 2 lw 2 title 'hidden 4096, memory-wall', \
  'comm-share.dat' using 1:8 with linespoints lc 2 dt 2 lw 2 title 'hidden 8192, memory-wall', \
  'comm-share.dat' using 1:9 with linespoints lc 3 dt 2 lw 2 title 'hidden 16384, memory-wall', \
  'comm-share.dat' using 1:10 with linespoints lc 4 dt 2 lw 2 title 'hidden 32768, memory-wall', \
  'comm-share.dat' using 1:11 with linespoints lc 5 dt 2 lw 2 title 'hidden 65536, memory-wall'
