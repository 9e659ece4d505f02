set terminal svg size 720,440 font 'sans,12'
set output 'efficiency-vs-restart.svg'
set title '131072 H100, 2 TB/s: effective time against restart time'
set xlabel 'restart time, min'
set ylabel 'effective time, %'
set key outside below
set grid
plot 'efficiency-vs-restart.dat' index 0 with linespoints title 'sync, optimal interval'
