#!/usr/bin/env bash
# Install the build into a temporary prefix, then build a consumer with
# pkg-config and with CMake's find_package (shared and static), and run them.
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
echo "1 passed, 0 failed"
