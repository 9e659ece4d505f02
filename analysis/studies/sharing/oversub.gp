set terminal svg size 720,440 font 'sans,11'
set output 'oversub.svg'
set title 'Two spread Llama 3 8B jobs (TP 8 x DP 16) against the uplinks oversubscription'
set xlabel 'leaf uplink oversubscription (x:1)'
set ylabel 'step time, s'
set key top left
set grid
plot 'oversub.dat' using 1:2 with linespoints title 'alone', \
     '' using 1:3 with linespoints title 'shared'
