set terminal svg size 820,460 font 'sans,11'
set output 'slowdown.svg'
set title 'Two 128-GPU jobs on 32 H100 nodes, 2:1 leaf uplinks: slowdown from sharing'
set ylabel 'step time shared over alone - 1, %'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -20 noenhanced
set key top left
set grid ytics
plot 'slowdown.dat' using 2:xtic(1) title 'packed (own leaf)', \
     '' using 3 title 'split (half in each leaf)', \
     '' using 4 title 'spread (alternating leaves)'
