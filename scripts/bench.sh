#!/usr/bin/env bash
# zflow against its peers (GStreamer, iceoryx, Cyclone DDS, TCP, Unix sockets):
# a thin wrapper for bench/run.sh, which does the work (see bench/run.sh --help).
#   scripts/bench.sh [OUTDIR] [--reps N] [--quick] [--no-docs] ...
exec "$(dirname "$0")/../bench/run.sh" "$@"
