set terminal svg size 900,560 dynamic
set output 'peak.svg'
set title "80B GPT on 1024 A100 of Perlmutter: paper (abstract; Megatron-LM derived as AxoNN/1.26)\nagainst weft (perlmutter preset, dragonfly and fat tree)"
set ylabel 'model TFLOP/s per GPU (A100 BF16 peak 312)'
set yrange [0:312]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid ytics
set key top left
set y2tics ('50 %%' 156, '57 %%' 177.8)
set y2range [0:312]
plot 'peak.dat' using 2:xtic(1) title 'paper (abstract)', '' using 3 title 'weft simulated, dragonfly', '' using 4 title 'weft simulated, fat tree', '' using 5 title 'weft closed form, dragonfly', '' using 6 title 'weft closed form, fat tree'
