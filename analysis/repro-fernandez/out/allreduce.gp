set terminal svg size 900,650 dynamic
set output 'allreduce.svg'
set title "NCCL all-reduce bus bandwidth. Points: the H100 cluster of Fernandez et al. (read off, +-10 GB/s)\nLines: weft on dgx-h100 (8 x 400 Gb/s NICs per node)" noenhanced
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set logscale x 2
set format x '2^{%L}'
set yrange [0:400]
set grid
set key below horizontal maxcols 4
plot 'allreduce.dat' using 1:2 with lines lc 1 lw 2 title 'weft 4 nodes', \
  'allreduce.dat' using 1:3 with lines lc 2 lw 2 title 'weft 8 nodes', \
  'allreduce.dat' using 1:4 with lines lc 3 lw 2 title 'weft 16 nodes', \
  'allreduce.dat' using 1:5 with lines lc 4 lw 2 title 'weft 32 nodes', \
  'allreduce.dat' using 1:6 with lines lc 5 lw 2 title 'weft 64 nodes', \
  'allreduce.dat' using 1:7 with lines lc 6 lw 2 title 'weft 128 nodes', \
  'allreduce.dat' using 1:8 with lines lc 7 lw 2 title 'weft 256 nodes', \
  'allreduce.dat' using 1:9 with lines lc 8 lw 2 title 'weft 512 nodes', \
  'allreduce-paper.dat' index 0 using 1:2 with points lc 1 pt 7 title 'paper 4 nodes', \
  'allreduce-paper.dat' index 1 using 1:2 with points lc 2 pt 7 title 'paper 8 nodes', \
  'allreduce-paper.dat' index 2 using 1:2 with points lc 3 pt 7 title 'paper 16 nodes', \
  'allreduce-paper.dat' index 3 using 1:2 with points lc 4 pt 7 title 'paper 32 nodes', \
  'allreduce-paper.dat' index 4 using 1:2 with points lc 5 pt 7 title 'paper 64 nodes', \
  'allreduce-paper.dat' index 5 using 1:2 with points lc 6 pt 7 title 'paper 128 nodes', \
  'allreduce-paper.dat' index 6 using 1:2 with points lc 7 pt 7 title 'paper 256 nodes', \
  'allreduce-paper.dat' index 7 using 1:2 with points lc 8 pt 7 title 'paper 512 nodes'
