set terminal svg size 720,440 font 'sans,12'
set output 'efficiency-vs-interval.svg'
set title '131072 H100, sync checkpoints: effective time against the interval'
set xlabel 'training time between checkpoints, min'
set ylabel 'effective time, %'
set key outside below
set grid
set logscale x
plot 'efficiency-vs-interval.dat' index 0 with linespoints title '200GBps storage', 'efficiency-vs-interval.dat' index 1 with linespoints title '2TBps storage'
