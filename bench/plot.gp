# bench/plot.gp: the figures of docs/performance.md, drawn from the .dat
# files bench/report.py writes (one per benchmark/implementation: size,
# p50, p99, p99.9 in ns, messages/s, CPU ns/message; medians over the
# repetitions; the header line names the series).
#
#   gnuplot -e "dat='DIR'; out='DIR'; hops='hop_zflow copy_memcpy ...'; \
#               pipes='pipeline_zflow pipeline_gstreamer'" bench/plot.gp

set terminal pngcairo size 960,600 enhanced font "DejaVu Sans,10" linewidth 1.5
set datafile missing "-"
set logscale xy
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set key top left box opaque
set xlabel "message size"
set xtics ("64 B" 64, "4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576, \
           "10 MiB" 10485760, "100 MiB" 104857600)
set xrange [40:1.6e8]
ns_tics = 'set ytics ("10 ns" 10, "100 ns" 100, "1 µs" 1e3, "10 µs" 1e4, "100 µs" 1e5, \
           "1 ms" 1e6, "10 ms" 1e7, "100 ms" 1e8, "1 s" 1e9, "10 s" 1e10)'
rate_tics = 'set ytics ("1" 1, "10" 10, "100" 100, "1 k" 1e3, "10 k" 1e4, "100 k" 1e5, \
             "1 M" 1e6, "10 M" 1e7, "100 M" 1e8)'
f(s) = dat.'/'.s.'.dat'

# 1. The zero-copy picture: one hop's latency against the payload size.
set output out.'/latency_p50.png'
set title "One hop: median latency (one message in flight; sender's clock to receiver's)"
set ylabel "latency, p50"
eval ns_tics
plot for [s in hops] f(s) using 1:2 with linespoints pt 7 ps 1.2 title columnheader(2)

set output out.'/latency_p99.png'
set title "One hop: 99th percentile latency (one message in flight)"
set ylabel "latency, p99"
plot for [s in hops] f(s) using 1:3 with linespoints pt 7 ps 1.2 title columnheader(2)

# 2. One hop, free-running: messages per second.
set output out.'/hop_throughput.png'
set title "One hop: messages per second (producer running free on a bounded queue)"
set ylabel "messages / s"
set key bottom left
eval rate_tics
plot for [s in hops] f(s) using 1:5 with linespoints pt 7 ps 1.2 title columnheader(2)

# 3. The 3-stage pipeline against GStreamer.
set output out.'/pipeline_throughput.png'
set title "source -> operator -> operator -> sink: messages per second"
set ylabel "messages / s"
plot for [s in pipes] f(s) using 1:5 with linespoints pt 7 ps 1.4 lw 2 title columnheader(2)

set key top left
set output out.'/pipeline_latency.png'
set title "source -> operator -> operator -> sink: latency, one message in flight (p50 solid, p99 dashed)"
set ylabel "latency"
eval ns_tics
plot for [i=1:words(pipes)] f(word(pipes, i)) using 1:2 with linespoints lc i pt 7 ps 1.2 \
       title columnheader(2), \
     for [i=1:words(pipes)] f(word(pipes, i)) using 1:3 with linespoints lc i dt 2 pt 6 \
       notitle

# 4. What each message costs in CPU time (all threads / processes of the benchmark).
set output out.'/cpu_per_msg.png'
set title "CPU time per message (free-running phase; all threads and processes involved)"
set ylabel "CPU time / message"
eval ns_tics
plot for [s in hops.' '.pipes] f(s) using 1:6 with linespoints pt 7 ps 1.2 title columnheader(2)

unset output
