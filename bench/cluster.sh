#!/usr/bin/env bash
# A cross-worker link (two zfd workers on loopback, one DDS domain) beside
# raw Cyclone DDS (zfpeer-dds) in the same run, with the same configuration
# (docs/cluster.md's default is bench/peers/dds.c's):
#   bench/cluster.sh BUILD_DIR [SECONDS] [latency]
# (`latency`: the 64 B cases only, zflow and zfpeer-dds at the same
# periods: a short batch to repeat under the machine lock)
# - throughput: gen (free-running, 1 MiB / 10 MiB) on w1 -> count on w2,
#   a block link of capacity 16: capsules per second taken by count over
#   SECONDS, after one second of warm-up;
# - 10 MiB at 60 fps: gen with period 16.667ms, frames taken per second;
# - latency: 64 B every 10 ms and every 100 us, the median of now - the
#   capsule's timestamp at count, beside zfpeer-dds with the same period
#   (--period: both ends park between samples, as zflow's do) and back to
#   back (one in flight, the next as soon as it arrived: both ends hot);
# - deploy -> RUNNING, destroy.
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd)
SECS=${2:-4}
MODE=${3:-all}
[[ $MODE == all || $MODE == latency ]] || { echo "mode: all or latency, not '$MODE'" >&2; exit 2; }
ZFD=$B/apps/zfd/zfd
ZF=$B/apps/zfctl/zfctl
NODES=$B/tests/nodes
PEER=$B/bench/peers/zfpeer-dds
T=$(mktemp -d /tmp/zf-cluster-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"' EXIT
DOMAIN=$((100 + $$ % 120))
for w in w1 w2; do
  "$ZFD" --name $w --domain $DOMAIN --socket "$T/$w.sock" --lib-path "$NODES" \
    --allow-writable-lib-path --log warn > "$T/$w.log" 2>&1 &
  PIDS+=($!)
done
for i in $(seq 1 100); do
  [[ $("$ZF" workers --socket "$T/w1.sock" 2>/dev/null | grep -c " alive ") -ge 2 ]] && break
  sleep 0.1
done

# flow NAME SIZE PERIOD(or "") CAPACITY
flow() {
  local per=""
  [[ -n $3 ]] && per="period: $3, "
  cat > "$T/$1.yaml" <<EOS
name: $1
sources: [{id: gen, library: $NODES/libt_gen.so, ${per}configuration: {size: $2}, outputs: [out]}]
sinks: [{id: count, library: $NODES/libt_count.so, configuration: {summary: "$T/$1.json"}, inputs: [in]}]
links: [{from: {node: gen, output: out}, to: {node: count, input: in}, queue: {capacity: $4, policy: block}}]
mapping: {w1: [gen], w2: [count]}
EOS
}

taken() {
  "$ZF" status "$1" --socket "$T/w2.sock" -o json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(sum(l["dequeued"] for l in r["links"] if l["to"]=="count.in"))'
}

# rate NAME: capsules per second taken over SECS
rate() {
  local t0 uuid a b ms
  t0=$(date +%s%N)
  uuid=$("$ZF" deploy "$T/$1.yaml" --socket "$T/w1.sock")
  DEPLOY_MS=$((($(date +%s%N) - t0) / 1000000))
  sleep 1
  a=$(taken "$uuid"); t0=$(date +%s%N)
  sleep "$SECS"
  b=$(taken "$uuid"); ms=$((($(date +%s%N) - t0) / 1000000))
  t0=$(date +%s%N)
  "$ZF" destroy "$uuid" --socket "$T/w2.sock" > "$T/$1.destroy"
  DESTROY_MS=$((($(date +%s%N) - t0) / 1000000))
  grep -q "bytes leaked: 0" "$T/$1.destroy" || { echo "leak in $1" >&2; cat "$T/$1.destroy" >&2; }
  echo "$DEPLOY_MS $DESTROY_MS" > "$T/$1.ms" # rate runs in a subshell
  python3 -c "print(f'{($b - $a) * 1000 / $ms:.1f}')"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
# the same 64 B sample every 10 ms and every 100 us
peer_p50_every() {
  nice -n 0 "$PEER" --sizes 64 --seconds 0.2 --period "$1" --samples "$2" 2>/dev/null |
    awk '$1 == "dds_hop" {print $6}' | head -1
}
p50_of() { sed 's/.*"lat_p50_ns":\([0-9]*\).*/\1/' "$T/$1.json"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
if [[ $MODE == latency ]]; then
  pp50_10ms=$(peer_p50_every 0.01 $((SECS * 100)))
  flow l64 64 10ms 16; rate l64 > /dev/null
  pp50_100us=$(peer_p50_every 0.0001 $((SECS * 5000)))
  flow l64f 64 100us 16; rate l64f > /dev/null
  echo "64 B p50: every 10 ms zflow $(p50_of l64) ns, zfpeer-dds $pp50_10ms ns ($(ratio "$(p50_of l64)" "$pp50_10ms"));" \
       "every 100 us zflow $(p50_of l64f) ns, zfpeer-dds $pp50_100us ns ($(ratio "$(p50_of l64f)" "$pp50_100us"))"
  exit 0
fi
PEER_OUT=$(nice -n 0 "$PEER" --sizes 64,1MiB,10MiB --seconds "$SECS" 2>/dev/null | grep dds_hop)
echo "$PEER_OUT"
peer_rate() { echo "$PEER_OUT" | awk -v s="$1" '$3 == s && $4 == $4 {for (i=1;i<=NF;i++) if ($i == "msg/s") print $(i-1)}' | head -1; }
peer_p50() { echo "$PEER_OUT" | awk -v s="$1" '$3 == s {print $6}' | head -1; }
pp50_10ms=$(peer_p50_every 0.01 $((SECS * 100)))
pp50_100us=$(peer_p50_every 0.0001 $((SECS * 5000)))
echo "zfpeer-dds 64 B p50: $pp50_10ms ns every 10 ms, $pp50_100us ns every 100 us"

flow t1m 1048576 "" 16;  r1=$(rate t1m); read -r d1 x1 < "$T/t1m.ms"
flow t10m 10485760 "" 16; r10=$(rate t10m)
flow f60 10485760 16.667ms 16; r60=$(rate f60)
flow l64 64 10ms 16; rate l64 > /dev/null
flow l64f 64 100us 16; rate l64f > /dev/null
p50f=$(p50_of l64f)
p50=$(p50_of l64)
pr1=$(peer_rate 1); pr10=$(peer_rate 10); pp50=$(peer_p50 64)
echo "zflow cross-worker link: 1 MiB $r1 msg/s (zfpeer-dds $pr1: $(python3 -c "print(f'{$r1 / $pr1 * 100:.0f}')") %);" \
     "10 MiB $r10 msg/s (zfpeer-dds $pr10); 10 MiB at 60 fps: $r60 frames/s;" \
     "64 B p50 $p50 ns every 10 ms ($(python3 -c "print(f'{$p50 / $pp50_10ms:.2f}x')") zfpeer-dds's $pp50_10ms ns)," \
     "$p50f ns every 100 us ($(python3 -c "print(f'{$p50f / $pp50_100us:.2f}x')") zfpeer-dds's $pp50_100us ns;" \
     "zfpeer-dds back to back $pp50 ns);" \
     "deploy -> RUNNING $d1 ms, destroy $x1 ms"
