# ns/op against N (bench/results/scaling.dat), written by `make bench`.
set terminal svg size 900,420 font "sans,11"
set output "scaling.svg"
set multiplot layout 1,2
set logscale xy
set xlabel "N (IDs)"
set ylabel "ns/op (median of 3, log scale)"
set key top left
set grid
set title "dense allocation"
plot "scaling.dat" u 1:2 w lp t "libidr", "" u 1:3 w lp t "flat", \
     "" u 1:4 w lp t "judy", "" u 1:5 w lp t "libidr handles"
set title "random lookup"
plot "scaling.dat" u 1:6 w lp t "libidr", "" u 1:7 w lp t "flat", \
     "" u 1:8 w lp t "judy", "" u 1:9 w lp t "libidr handles"
unset multiplot
