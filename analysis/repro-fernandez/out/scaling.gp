set terminal svg size 900,650 dynamic
set output 'scaling.svg'
set title "Fernandez et al. (arXiv 2411.13055): throughput per GPU against GPUs, relative to 128 GPUs\nweft: Llama 2 on DGX H100, one 4096-token sequence per GPU, PyTorch FSDP1 (torchtitan stack)\n(solid: 7B, dashed: 70B; black: the paper, 128 -> 2048 GPUs as summarized)"
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
  'paper.dat' using 1:2 with linespoints lc rgb 'black' lw 3 pt 7 title 'paper (P2)'
