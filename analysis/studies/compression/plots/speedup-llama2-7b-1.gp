set terminal svg size 720,420 font "Helvetica,12"
set output "speedup-llama2-7b-1.svg"
set title "llama2-7b/1 GPU(s) per node, 128 GPUs: speedup of gradient compression over DDP (weft)"
set logscale x
set xlabel "network bandwidth per GPU (Gb/s)"
set ylabel "speedup"
set key outside right
set grid
set logscale y
plot 1 title 'DDP' dt 2 lc rgb 'black', 'speedup-llama2-7b-1.dat' using 1:2 with linespoints title 'fp16', 'speedup-llama2-7b-1.dat' using 1:3 with linespoints title 'powersgd:4', 'speedup-llama2-7b-1.dat' using 1:4 with linespoints title 'topk:0.01', 'speedup-llama2-7b-1.dat' using 1:5 with linespoints title 'randomk:0.01', 'speedup-llama2-7b-1.dat' using 1:6 with linespoints title 'sign', 'speedup-llama2-7b-1.dat' using 1:7 with linespoints title 'efsign', 'speedup-llama2-7b-1.dat' using 1:8 with linespoints title 'qsgd:8'
