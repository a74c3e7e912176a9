#!/usr/bin/env bash
# Install the build into a temporary prefix, then build a consumer with
# pkg-config and with CMake's find_package (shared and static), and run them;
# then a C project that includes zflow's source tree with add_subdirectory()
# (zflow's tests, examples and benchmarks are not built there, nor is C++
# needed).
#   tests/install/run.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(find "$tmp/prefix" -name 'libzflow.so' -printf '%h\n' | head -1)
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir
test -f "$tmp/prefix/include/zflow/zflow.h"
echo "== pkg-config: $(pkg-config --modversion zflow)"
# the version, written once (include/zflow/version.h), is the same everywhere
version=$(pkg-config --modversion zflow)
pyversion=$(PYTHONPATH="$(find "$tmp/prefix" -type d -name dist-packages | head -1)" \
  python3 -c 'import zflow; print(zflow.__version__)')
test "$pyversion" = "$version"
grep -q "^#define ZF_VERSION_MAJOR ${version%%.*}$" "$tmp/prefix/include/zflow/version.h"
cc -std=c11 -Wall -Werror "$here/consumer.c" $(pkg-config --cflags --libs zflow) -o "$tmp/pc"
"$tmp/pc"
echo "== find_package(zflow)"
mkdir "$tmp/proj"
cp "$here/consumer.c" "$here/node.c" "$tmp/proj/"
cp "$here/CMakeLists.txt.in" "$tmp/proj/CMakeLists.txt"
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
"$tmp/proj/build/consumer_shared"
"$tmp/proj/build/consumer_static"
echo "== zf_node() from the package"
nm -D --defined-only "$tmp/proj/build/libconsumer_node.so" | grep -q ' zf_node_declare$'
"$tmp/prefix/bin/zfctl" validate "$tmp/prefix/share/zflow/examples/seed-pipeline/flow.yaml" --flatten \
  --var LIB_DIR="$tmp/prefix/lib/zflow/examples/seed-pipeline" >/dev/null
test ! -e "$tmp/prefix/bin/zf-bench" # benchmarks are not installed
echo "== the cluster module, loaded only by a process that joins a domain"
test -f "$libdir/zflow/libzflow-cluster.so"
if ldd "$libdir/libzflow.so" | grep -Eq 'libddsc|libsodium'; then
  echo "libzflow links Cyclone DDS or libsodium (the cluster module should)" >&2
  exit 1
fi
"$tmp/prefix/bin/zfd" --name solo --socket "$tmp/solo.sock" 2>"$tmp/solo.log" &
solo=$!
"$tmp/prefix/bin/zfd" --name joined --domain $((100 + $$ % 120)) --socket "$tmp/joined.sock" \
  2>"$tmp/joined.log" &
joined=$!
for _ in $(seq 100); do
  "$tmp/prefix/bin/zfctl" workers --socket "$tmp/joined.sock" 2>/dev/null | grep -q '^joined ' &&
    [[ -S "$tmp/solo.sock" ]] && break
  sleep 0.1
done
"$tmp/prefix/bin/zfctl" workers --socket "$tmp/joined.sock" | grep -q '^joined '
grep -q "$libdir/zflow/libzflow-cluster.so" "/proc/$joined/maps"
if grep -Eq 'libddsc|libsodium|libzflow-cluster' "/proc/$solo/maps"; then
  echo "zfd without --domain mapped the cluster module or Cyclone DDS" >&2
  exit 1
fi
kill -TERM "$solo" "$joined"
wait "$solo" "$joined" || true
echo "== add_subdirectory(zflow)"
src=$(cd "$here/../.." && pwd)
mkdir "$tmp/sub"
cp "$here/consumer.c" "$tmp/sub/"
cat >"$tmp/sub/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(zflow_parent C)
add_subdirectory("$src" zflow)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE zflow::zflow_static)
EOF
# C only, as a C project would build it: no C++ compiler is even looked for
cmake -S "$tmp/sub" -B "$tmp/sub/build" -DZF_PYTHON=OFF -DZF_CXX=OFF >/dev/null
if grep -q '^CMAKE_CXX_COMPILER:' "$tmp/sub/build/CMakeCache.txt"; then
  echo "add_subdirectory: C++ was enabled for a C build" >&2
  exit 1
fi
targets=$(cmake --build "$tmp/sub/build" --target help)
for t in test_link zf-bench zf_camera; do # tests, benchmarks, examples: top level only
  if grep -qx "\.\.\. $t" <<<"$targets"; then
    echo "add_subdirectory: target $t is defined" >&2
    exit 1
  fi
done
nice -n 10 cmake --build "$tmp/sub/build" --target consumer -j2 >/dev/null
"$tmp/sub/build/consumer"
echo "2 passed, 0 failed"
