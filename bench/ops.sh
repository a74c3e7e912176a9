#!/usr/bin/env bash
# The operations figures (issue 14 targets): the idle `zfd --http` memory
# (Rss and RssAnon), then /metrics with N started instances of a small flow
# (the seed pipeline with 4 KiB frames) under one zfd: the time of several
# scrapes with curl, and `promtool check metrics` on the answer.
#   bench/ops.sh [BUILD_DIR] [N]   (default build, 100; it needs zfd, zfctl and
#                                  the seed pipeline's nodes; promtool, curl)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
n=${2:-100}
tmp=$(mktemp -d)
export ZF_SOCKET=$tmp/zfd.sock
zfd=$build/apps/zfd/zfd zfctl=$build/apps/zfctl/zfctl libs=$build/examples/seed-pipeline
"$zfd" --name bench --lib-path "$libs" --log info --http 127.0.0.1:0 --state-dir "$tmp/state" \
  2>"$tmp/zfd.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [[ -S $ZF_SOCKET ]] && grep -q "(port" "$tmp/zfd.log" && break; sleep 0.05; done
kill -0 $pid 2>/dev/null || { cat "$tmp/zfd.log"; exit 1; }
port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$tmp/zfd.log" | head -1)
url=http://127.0.0.1:$port/metrics
mem() { grep -E '^(VmRSS|RssAnon|RssFile|RssShmem)' /proc/$pid/status | tr -s ' \t' ' ' | paste -sd' '; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
curl -s -o /dev/null "$url" && curl -s -o /dev/null "http://127.0.0.1:$port/" # the page and metrics served once
sleep 0.5
echo "idle zfd --http: $(mem)"
for i in $(seq 1 "$n"); do
  "$zfctl" deploy examples/seed-pipeline/flow.yaml --var LIB_DIR="$libs" --var FRAME_BYTES=4KiB \
    --name "i$i" >/dev/null
done
sleep 1.5 # every instance's rates have a window
times=()
for _ in $(seq 1 10); do
  times+=("$(curl -s -o "$tmp/metrics.txt" -w '%{time_total}' "$url")")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n | awk '{printf "%.1f ", $1 * 1000}')
echo "/metrics with $("$zfctl" ls | tail -n +2 | wc -l) instances ($(wc -l <"$tmp/metrics.txt") lines," \
  "$(wc -c <"$tmp/metrics.txt") bytes), 10 scrapes in ms, sorted: $sorted"
if command -v promtool >/dev/null; then
  promtool check metrics <"$tmp/metrics.txt" && echo "promtool check metrics: ok"
fi
echo "zfd with $n instances: $(mem)"
