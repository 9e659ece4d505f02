# gnuplot script written by weft report; run it in this folder: gnuplot shares.gp
set datafile missing 'nan'
set key outside right top
set grid ytics
set terminal pngcairo noenhanced size 960,540 font ',10'
set output 'shares.png'
set title 'share of the iteration'
set key below
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.8
set yrange [0:1]
set ylabel 'fraction of the iteration time'
set xtics ('384 zero3-deepspeed2021' 0, '384 zero3-deepspeed' 1, '384 tp8-pp12' 2, '768 zero3-deepspeed2021' 3, '768 zero3-deepspeed' 4, '768 tp8-pp12' 5, '1536 zero3-deepspeed2021' 6, '1536 zero3-deepspeed' 7, '1536 tp8-pp12' 8) rotate by -45
plot 'shares.dat' using 2 title 'compute only', '' using 3 title 'compute with communication overlapped', '' using 4 title 'exposed communication', '' using 5 title 'idle (bubbles, waits)'
set terminal svg noenhanced size 960,540 font 'Sans,10'
set output 'shares.svg'
set title 'share of the iteration'
set key below
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.8
set yrange [0:1]
set ylabel 'fraction of the iteration time'
set xtics ('384 zero3-deepspeed2021' 0, '384 zero3-deepspeed' 1, '384 tp8-pp12' 2, '768 zero3-deepspeed2021' 3, '768 zero3-deepspeed' 4, '768 tp8-pp12' 5, '1536 zero3-deepspeed2021' 6, '1536 zero3-deepspeed' 7, '1536 tp8-pp12' 8) rotate by -45
plot 'shares.dat' using 2 title 'compute only', '' using 3 title 'compute with communication overlapped', '' using 4 title 'exposed communication', '' using 5 title 'idle (bubbles, waits)'
