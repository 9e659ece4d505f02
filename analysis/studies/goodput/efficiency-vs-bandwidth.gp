set terminal svg size 720,440 font 'sans,12'
set output 'efficiency-vs-bandwidth.svg'
set title 'Llama 3 405B on 131072 H100, 54 days: effective training time'
set xlabel 'storage write bandwidth, TB/s'
set ylabel 'effective time, %'
set key outside below
set grid
set logscale x
plot 'efficiency-vs-bandwidth.dat' index 0 with linespoints title 'async', 'efficiency-vs-bandwidth.dat' index 1 with linespoints title 'sync'
