#!/usr/bin/env bash
# The main job: build zflow and run the seed pipeline (camera -> detect ->
# motor, with a recorder on the camera's fan-out) for a few seconds.
#   scripts/demo.sh [extra zfctl run options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/apps/zfctl/zfctl run examples/seed-pipeline/flow.yaml --duration 5s --stats "$@"
