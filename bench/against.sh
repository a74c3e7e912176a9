#!/usr/bin/env bash
# zf-bench of this tree against zf-bench of an earlier commit, in the same
# run: interleaved rounds (the order alternates), medians and the spread of
# the pair ratios, then instructions per message under callgrind (which a
# loaded machine does not move).
#   bench/against.sh REV [BUILD_DIR] [ROUNDS] [BENCH]
#     (default build, 12 rounds, pipeline; REV is built in /tmp/zf-against-REV)
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short "${1:?usage: bench/against.sh REV [BUILD_DIR] [ROUNDS] [BENCH]}")
build=$(realpath "${2:-build}")
rounds=${3:-12} bench=${4:-pipeline}
old=/tmp/zf-against-$rev
if [[ ! -x $old/build/apps/zf-bench/zf-bench ]]; then
  mkdir -p "$old/src"
  git archive "$rev" | tar -x -C "$old/src"
  cmake -S "$old/src" -B "$old/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  nice -n 15 cmake --build "$old/build" -j2 --target zf-bench >/dev/null
fi
a=$old/build/apps/zf-bench/zf-bench b=$build/apps/zf-bench/zf-bench
one() { "$1" "$bench" --sizes 64 --seconds 2 --samples 2000 --json |
  sed -n 's/.*"msgs_per_s":\([0-9.]*\),"cpu_ns_per_msg":\([0-9.]*\).*/\1 \2/p'; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
rows=$(for i in $(seq "$rounds"); do
  l=$(cut -d' ' -f1 /proc/loadavg)
  if ((i % 2)); then x=$(one "$a"); y=$(one "$b"); else y=$(one "$b"); x=$(one "$a"); fi
  echo "$l $x $y"
done)
python3 - "$rev" "$bench" <<EOF
import statistics as s, sys
rows = [list(map(float, l.split())) for l in """$rows""".strip().splitlines()]
load = [r[0] for r in rows]
for k, what in ((1, "msgs/s"), (2, "cpu-ns/msg")):
    old = [r[k] for r in rows]; new = [r[k + 2] for r in rows]
    pr = sorted(n / o for o, n in zip(old, new))
    print(f"{sys.argv[2]} {what}: {sys.argv[1]} median {s.median(old):.0f}, this tree {s.median(new):.0f}"
          f" (ratio {s.median(new) / s.median(old):.3f}); pair ratios median {s.median(pr):.3f},"
          f" spread {pr[0]:.2f}-{pr[-1]:.2f}; {len(rows)} rounds, load {min(load):.1f}-{max(load):.1f}")
EOF
if command -v valgrind >/dev/null; then
  for x in "$a" "$b"; do
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$x" stage --sizes 64 --seconds 2 \
      >/dev/null 2>&1
    # (from /: run inside a source tree, it shortens paths and loses callers)
    tree=$(cd / && callgrind_annotate --tree=caller "$out" 2>/dev/null || true)
    incl=$(cd / && callgrind_annotate --inclusive=yes "$out" 2>/dev/null || true)
    # the messages: the calls of the source's produce, on its caller's line
    msgs=$(awk '/\*  .*bench_source.c:src_produce/ {print prev; exit} {prev = $0}' <<<"$tree" |
      sed -n 's/.*(\([0-9,]*\)x).*/\1/p' | tr -d ,)
    ir=$(grep 'sched.c:worker_main ' <<<"$incl" | awk 'NR == 1 {gsub(",", "", $1); print $1}')
    if [[ -n $msgs && -n $ir ]]; then
      echo "stage under callgrind, $x: $((ir / msgs)) instructions per message (the workers')"
    else
      echo "stage under callgrind, $x: not counted (no src_produce or worker_main in the profile)"
    fi
    rm -f "$out"
  done
fi
