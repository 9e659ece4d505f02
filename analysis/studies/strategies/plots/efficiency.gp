# gnuplot script written by weft report; run it in this folder: gnuplot efficiency.gp
set datafile missing 'nan'
set key outside right top
set grid ytics
set terminal pngcairo noenhanced size 960,540 font ',10'
set output 'efficiency.png'
set title 'scaling efficiency, %: speed-up over the growth of the GPUs'
set ylabel 'scaling efficiency, %: speed-up over the growth of the GPUs'
set xlabel 'gpus'
set xrange [326.4:1593.6]
set xtics ('384' 384, '768' 768, '1536' 1536)
set key title 'strategy'
set offsets 0, 0, graph 0.08, 0
set yrange [0:*]
plot 'report.dat' index 0 using 1:9 with linespoints pointtype 7 title 'zero3-deepspeed2021', 'report.dat' index 1 using 1:9 with linespoints pointtype 7 title 'zero3-deepspeed', 'report.dat' index 2 using 1:9 with linespoints pointtype 7 title 'tp8-pp12'
set terminal svg noenhanced size 960,540 font 'Sans,10'
set output 'efficiency.svg'
set title 'scaling efficiency, %: speed-up over the growth of the GPUs'
set ylabel 'scaling efficiency, %: speed-up over the growth of the GPUs'
set xlabel 'gpus'
set xrange [326.4:1593.6]
set xtics ('384' 384, '768' 768, '1536' 1536)
set key title 'strategy'
set offsets 0, 0, graph 0.08, 0
set yrange [0:*]
plot 'report.dat' index 0 using 1:9 with linespoints pointtype 7 title 'zero3-deepspeed2021', 'report.dat' index 1 using 1:9 with linespoints pointtype 7 title 'zero3-deepspeed', 'report.dat' index 2 using 1:9 with linespoints pointtype 7 title 'tp8-pp12'
