set terminal svg size 900,650 dynamic
set output 'scaling.svg'
set title "Fernandez et al. (arXiv 2411.13055): throughput per GPU against GPUs, relative to 128 GPUs\nweft: Llama 2 on DGX H100, one 4096-token sequence per GPU, PyTorch FSDP1 (torchtitan stack)\n(solid: 7B, dashed: 70B, dotted: 7B with 2 NICs per node; black: the paper as summarized)"
set xlabel 'GPUs'
set ylabel 'tokens/s per GPU / that at 128'
set logscale x 2
set yrange [0.5:1.1]
set grid
set key below horizontal maxcols 4
plot 'scaling.dat' using 1:2 with linespoints lc 1 dt 1 lw 2 title 'llama2-7b fsdp', \
  'scaling.dat' using 1:3 with linespoints lc 2 dt 1 lw 2 title 'llama2-7b fsdp-tp2', \
  'scaling.dat' using 1:4 with linespoints lc 3 dt 1 lw 2 title 'llama2-7b fsdp-tp4', \
  'scaling.dat' using 1:5 with linespoints lc 4 dt 1 lw 2 title 'llama2-7b fsdp-compile', \
  'scaling.dat' using 1:6 with linespoints lc 1 dt 2 lw 2 title 'llama2-70b fsdp', \
  'scaling.dat' using 1:7 with linespoints lc 2 dt 2 lw 2 title 'llama2-70b fsdp-tp2', \
  'scaling.dat' using 1:8 with linespoints lc 3 dt 2 lw 2 title 'llama2-70b fsdp-tp4', \
  'scaling.dat' using 1:9 with linespoints lc 4 dt 2 lw 2 title 'llama2-70b fsdp-compile', \
  'nic2.dat' using 1:2 with linespoints lc rgb 'red' dt 3 lw 2 pt 6 title 'llama2-7b fsdp, 2 NICs/node', \
  'nic2.dat' using 1:3 with linespoints lc rgb 'blue' dt 3 lw 2 pt 6 title 'llama2-7b fsdp-tp4, 2 NICs/node (rel. to fsdp)', \
  'paper.dat' using 1:2 with points lc rgb 'black' pt 7 ps 1.5 title 'paper, 128 and 2048 GPUs (P2)'
