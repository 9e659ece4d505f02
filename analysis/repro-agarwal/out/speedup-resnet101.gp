set terminal svg size 800,500 dynamic
set output 'speedup-resnet101.svg'
set title "Agarwal et al. (MLSys 2022) setup: resnet101-like (64 img), 64 V100 (16 x p3.8xlarge)\nweft simulation (solid), the paper's performance model on weft's inputs (dashed)"
set xrange [0.8:120]
set xlabel 'network bandwidth per node (Gb/s)'
set ylabel 'speedup over DDP (>1: compression helps)'
set logscale xy
set key outside right
set grid
plot 'speedup-resnet101.dat' using 1:2 with linespoints lc 1 lw 2 title 'powersgd:4', \
  'speedup-resnet101.dat' using 1:3 with lines lc 1 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:4 with linespoints lc 2 lw 2 title 'powersgd:8', \
  'speedup-resnet101.dat' using 1:5 with lines lc 2 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:6 with linespoints lc 3 lw 2 title 'powersgd:16', \
  'speedup-resnet101.dat' using 1:7 with lines lc 3 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:8 with linespoints lc 4 lw 2 title 'topk:0.1', \
  'speedup-resnet101.dat' using 1:9 with lines lc 4 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:10 with linespoints lc 5 lw 2 title 'topk:0.01', \
  'speedup-resnet101.dat' using 1:11 with lines lc 5 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:12 with linespoints lc 6 lw 2 title 'topk:0.001', \
  'speedup-resnet101.dat' using 1:13 with lines lc 6 dt 2 notitle, \
  'speedup-resnet101.dat' using 1:14 with linespoints lc 7 lw 2 title 'sign', \
  'speedup-resnet101.dat' using 1:15 with lines lc 7 dt 2 notitle, \
  1 with lines lc rgb 'black' title 'no speedup'
