#!/usr/bin/env bash
# The whole test suite: install what is missing, build and run ctest in
#   1. a normal build (warnings are errors),
#   2. an AddressSanitizer + UndefinedBehaviorSanitizer build,
#   3. a ThreadSanitizer build,
#   4. the libFuzzer targets (clang) for a fixed time each (30 s here, to
#      keep the suite under 20 minutes on 2 cores; the CMake default,
#      ZF_FUZZ_TIME, is 60 s, and the nightly run gives each an hour:
#      docs/building.md),
# and check the formatting of the tree. Stops at the first failure.
#   scripts/test.sh [ctest -R regex]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
filter=()
[[ $# -gt 0 ]] && filter=(-R "$1")
start=$SECONDS

step() { echo; echo "== $* ($((SECONDS - start)) s)"; }

run_suite() { # name, ctest label (or ""), cmake options...
  local name=$1 label=$2; shift 2
  local labels=()
  [[ -n "$label" ]] && labels=(-L "$label")
  step "build: $name"
  cmake -S . -B "build-test/$name" -DZF_WERROR=ON "$@" >/dev/null
  cmake --build "build-test/$name" -j"$jobs" >/dev/null
  step "test: $name"
  ctest --test-dir "build-test/$name" --output-on-failure -j"$jobs" "${labels[@]}" "${filter[@]}"
}

step "format: clang-format --dry-run"
mapfile -t sources < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' 2>/dev/null || find include src apps examples tests bench -name '*.[ch]')
clang-format --dry-run --Werror "${sources[@]}"

run_suite normal "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The 60 s soak runs in full in the normal build; the sanitizer builds run it
# for 20 s (they check memory errors and races, not flatness over a minute).
export ZF_SOAK_SECONDS=20
run_suite asan "" -DCMAKE_BUILD_TYPE=Debug -DZF_SANITIZE=address
run_suite tsan "" -DCMAKE_BUILD_TYPE=Debug -DZF_SANITIZE=thread
unset ZF_SOAK_SECONDS
run_suite fuzz fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DZF_FUZZ=ON -DZF_BUILD_EXAMPLES=OFF -DZF_BUILD_BENCH=OFF -DZF_FUZZ_TIME=30

step "all suites passed"
