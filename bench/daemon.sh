#!/usr/bin/env bash
# The daemon's figures (issue 5 targets): deploy -> RUNNING time of the seed
# pipeline, `zfctl ls` time with 100 instances, idle daemon RSS.
#   bench/daemon.sh [BUILD_DIR]   (default build-daemon-bench, built if missing;
#                                  it needs zfd, zfctl and the seed pipeline's nodes)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-daemon-bench}
if [[ ! -x $build/apps/zfd/zfd || ! -d $build/examples/seed-pipeline ]]; then
  scripts/deps.sh build
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=OFF \
    -DZF_BUILD_EXAMPLES=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" >/dev/null
fi
tmp=$(mktemp -d)
export ZF_SOCKET=$tmp/zfd.sock
build=$(realpath "$build")
zfd=$build/apps/zfd/zfd zfctl=$build/apps/zfctl/zfctl libs=$build/examples/seed-pipeline
"$zfd" --name bench --lib-path "$libs" --log warn 2>"$tmp/zfd.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [[ -S $ZF_SOCKET ]] && break; sleep 0.05; done
kill -0 $pid 2>/dev/null || { cat "$tmp/zfd.log"; exit 1; }
sleep 0.5
rss_kib() { awk '{print $2 * 4}' /proc/$pid/statm; }
ms() { echo "scale=2; ($2 - $1) / 1000000" | bc; }
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "idle daemon RSS: $(( $(rss_kib) )) KiB"
best=999999
for i in $(seq 1 10); do
  t0=$(date +%s%N)
  "$zfctl" deploy examples/seed-pipeline/flow.yaml --var LIB_DIR="$libs" --name "d$i" >/dev/null
  t1=$(date +%s%N)
  d=$(( (t1 - t0) / 1000 )); (( d < best )) && best=$d
  state=$("$zfctl" status "d$i" -o json | grep -o '"state":"[A-Z]*"' | head -1)
  [[ $state == '"state":"RUNNING"' ]] || { echo "d$i is not RUNNING: $state"; exit 1; }
  "$zfctl" destroy "d$i" >/dev/null
done
echo "deploy -> RUNNING (seed pipeline, zfctl process included): best $(( best / 1000 )).$(( best % 1000 / 100 )) ms of 10"
for i in $(seq 1 100); do
  "$zfctl" deploy examples/seed-pipeline/flow.yaml --var LIB_DIR="$libs" --var FRAME_BYTES=4KiB \
    --no-start --name "i$i" >/dev/null
done
best=999999
for _ in $(seq 1 10); do
  t0=$(date +%s%N); n=$("$zfctl" ls | tail -n +2 | wc -l); t1=$(date +%s%N)
  d=$(( (t1 - t0) / 1000 )); (( d < best )) && best=$d
done
echo "zfctl ls with $n instances: best $(( best / 1000 )).$(( best % 1000 / 100 )) ms of 10"
echo "daemon RSS with $n instances: $(rss_kib) KiB"
