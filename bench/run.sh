#!/usr/bin/env bash
# bench/run.sh: zflow against its peers, side by side, in one run. THE command.
#
#   bench/run.sh [OUTDIR] [options]
#
# Installs what is missing from Debian (scripts/deps.sh bench, as root),
# builds zflow and the peers in Release mode into build-bench/, runs every
# benchmark --reps times (interleaved), and writes to OUTDIR (default
# bench-results/<timestamp>/):
#   rep<N>/<bench>.json   each program's JSON (zf-bench's schema)
#   logs/                 each program's stderr
#   results.json          medians over the repetitions, and every run
#   summary.md, *.png     the tables and the plots (gnuplot)
# prints the summary table, and regenerates docs/performance.md and
# docs/performance/*.png (unless --no-docs). About 10 minutes on 2 cores.
#
# options:
#   --reps N                  repetitions of every benchmark (default 5)
#   --sizes LIST              message sizes (default 64,4KiB,1MiB,10MiB,100MiB)
#   --seconds S               throughput phase per size (default 1)
#   --samples N               latency samples per size (default 5000; zf-bench scales
#                             them down for big sizes)
#   --max-latency-seconds S   the peers' cap on one latency phase (default 5)
#   --quick                   1 repetition, 0.5 s, 1000 samples, no docs (a smoke test)
#   --docs / --no-docs        (do not) rewrite docs/performance.md
#   --no-deps                 do not call scripts/deps.sh
#   --no-build                use build-bench/ as it is
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$SECONDS

out="" reps=5 sizes="64,4KiB,1MiB,10MiB,100MiB" seconds=1 samples=5000 maxlat=5 warm=0.2
docs=yes deps=yes build=yes quick=no docs_set=no
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --max-latency-seconds) maxlat=$2; shift 2 ;;
    --quick) quick=yes; shift ;;
    --docs) docs=yes; docs_set=yes; shift ;;
    --no-docs) docs=no; docs_set=yes; shift ;;
    --no-deps) deps=no; shift ;;
    --no-build) build=no; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench/run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) [[ -z $out ]] || { echo "bench/run.sh: one output folder only" >&2; exit 2; }
       out=$1; shift ;;
  esac
done
if [[ $quick == yes ]]; then
  reps=1 seconds=0.5 samples=1000 maxlat=2
  [[ $docs_set == yes ]] || docs=no
fi
stamp=$(date +%Y%m%d-%H%M%S)
out=${out:-bench-results/$stamp}
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)

step() { printf '\n== %s (%d s)\n' "$*" $((SECONDS - start)); }

if [[ $deps == yes ]]; then
  step "Debian packages (scripts/deps.sh bench)"
  scripts/deps.sh bench || echo "bench/run.sh: packages missing: the peers that need them are skipped" >&2
fi

bdir=$root/build-bench
if [[ $build == yes ]]; then
  step "build (Release) into build-bench/"
  cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_BENCH=ON \
    -DZF_BUILD_TESTS=OFF -DZF_BUILD_EXAMPLES=OFF >"$out/logs/cmake.log" 2>&1 ||
    { cat "$out/logs/cmake.log" >&2; exit 1; }
  cmake --build "$bdir" -j"$(nproc)" >"$out/logs/build.log" 2>&1 ||
    { tail -40 "$out/logs/build.log" >&2; exit 1; }
fi
zfb=$bdir/apps/zf-bench/zf-bench
peers=$bdir/bench/peers
[[ -x $zfb ]] || { echo "bench/run.sh: $zfb was not built" >&2; exit 1; }

common=(--json --sizes "$sizes" --seconds "$seconds" --samples "$samples")
peer_opts=("${common[@]}" --max-latency-seconds "$maxlat" --warmup "$warm")
bd_opts=(--json --sizes 64,10MiB --seconds "$seconds" --samples "$samples"
  --max-latency-seconds "$maxlat" --warmup "$warm")
failures=()
unset CYCLONEDDS_URI # zfpeer-dds sets its own loopback configuration

# run NAME PROGRAM ARGS...: stdout to rep<N>/NAME.json, stderr to logs/.
run() {
  local name=$1; shift
  local json=$out/rep$rep/$name.json log=$out/logs/rep$rep-$name.log
  if [[ ! -x $1 ]]; then
    [[ $rep -gt 1 ]] || failures+=("$name (not built)")
    echo "   $name: skipped, $(basename "$1") not built"
    return 0
  fi
  local t0=$SECONDS
  if timeout --kill-after=10 600 "$@" >"$json" 2>"$log"; then
    echo "   $name: $((SECONDS - t0)) s"
  else
    echo "   $name: FAILED after $((SECONDS - t0)) s (see $log)"
    failures+=("$name (rep $rep)")
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$json" 2>/dev/null || rm -f "$json"
  fi
}

for ((rep = 1; rep <= reps; rep++)); do
  step "repetition $rep of $reps"
  mkdir -p "$out/rep$rep"
  run zf-limit "$zfb" limit "${common[@]}"
  run zf-hop "$zfb" limit,hop "${common[@]}"
  run tcp "$peers/zfpeer-sock" tcp "${peer_opts[@]}"
  run zf-copy "$zfb" copy "${common[@]}"
  run uds "$peers/zfpeer-sock" uds "${peer_opts[@]}"
  run iceoryx "$peers/zfpeer-iox" "${peer_opts[@]}"
  run zf-hop-isolated "$zfb" limit,hop --isolated "${common[@]}"
  run zf-pipeline "$zfb" pipeline "${common[@]}"
  run zf-stage "$zfb" stage --json --sizes 64,10MiB --seconds "$seconds" --samples "$samples"
  run gstreamer "$peers/zfpeer-gst" "${peer_opts[@]}"
  run cyclonedds "$peers/zfpeer-dds" "${peer_opts[@]}"
  # GStreamer's cost taken apart: 0, 1 and 2 queues, at 64 B and 10 MiB.
  for q in 0 1 2; do
    run "gstreamer-q$q" "$peers/zfpeer-gst" "${bd_opts[@]}" --queues "$q"
  done
done

step "report"
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }
{
  echo "DATE=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "OUTDIR_REL=${out#"$root"/}"
  echo "REPS=$reps"
  echo "SIZES=$sizes"
  echo "SAMPLES=$samples"
  echo "SECONDS_PER_SIZE=$seconds"
  echo "MAX_LATENCY_SECONDS=$maxlat"
  echo "WARMUP=$warm"
  echo "SYSTEM=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "KERNEL=$(uname -sr)"
  echo "COMPILER=$(cc --version 2>/dev/null | head -1)"
  echo "GIT=$(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "PACKAGES=GStreamer $(pkgver libgstreamer1.0-0), iceoryx $(pkgver libiceoryx-binding-c2), Cyclone DDS $(pkgver libddsc0debian)"
  echo "FAILURES=${failures[*]:-}"
  echo "SECONDS=$((SECONDS - start))"
} >"$out/meta.env"
doc_args=()
[[ $docs == yes ]] && doc_args=(--doc "$root/docs/performance.md")
python3 bench/report.py "$out" "${doc_args[@]}"
echo
echo "results: $out ($((SECONDS - start)) s)"
