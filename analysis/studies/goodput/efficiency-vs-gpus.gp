set terminal svg size 720,440 font 'sans,12'
set output 'efficiency-vs-gpus.svg'
set title 'Llama 3 405B, 54 days, 2 TB/s: effective time against GPUs'
set xlabel 'GPUs'
set ylabel 'effective time, %'
set key outside below
set grid
set logscale x
plot 'efficiency-vs-gpus.dat' index 0 with linespoints title 'sync, optimal interval'
