#!/usr/bin/env bash
# The .deb as a user installs it: cpack -G DEB from the build tree,
# `apt-get install ./zflow_*.deb`, then the installed files checked and used
# (zfctl, zfd started from its systemd unit's command line and the installed
# seed pipeline deployed to it, headers, the node host, man pages, pkg-config,
# a node built with zf_node() from the CMake package, the Python packages, the
# seed pipeline run in C and in Python), and the package purged. Root only (CI runs as root); otherwise it says so and
# passes without installing anything.
#   tests/install/deb.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if [[ $(id -u) -ne 0 ]]; then
  echo "skip: installing a .deb needs root"
  echo "0 passed, 0 failed"
  exit 0
fi
if dpkg-query -W -f='${Status}' zflow 2>/dev/null | grep -q "install ok installed"; then
  echo "a zflow package is installed already: not replacing it" >&2
  exit 1
fi
tmp=$(mktemp -d)
zfd_pid=
cleanup() {
  [[ -n "$zfd_pid" ]] && kill "$zfd_pid" 2>/dev/null || true
  apt-get purge -y -qq -o DPkg::Lock::Timeout=120 zflow >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
step() { echo "== $*"; }

step "cpack -G DEB"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp" >/dev/null)
cd "$tmp"
ls zflow_*.deb
step "apt-get install ./zflow_*.deb"
apt-get install -y -qq -o DPkg::Lock::Timeout=120 ./zflow_*.deb >/dev/null

step "files"
zfctl --version
zfd --version
test ! -e /usr/bin/zf-bench
man -w zfctl zfd
test "$(pkg-config --modversion zflow)" = "$(dpkg-query -W -f='${Version}' zflow)"
test -f /usr/lib/cmake/zflow/zflowConfig.cmake
test -f /usr/lib/libzflow-python.so
test -f /usr/lib/zflow/libzflow-cluster.so # the cluster module, dlopened by libzflow
test -f /usr/include/zflow/zflow.h && test -f /usr/include/zflow/zflow.hpp
test -x /usr/libexec/zflow/zf-node-host # the host of isolated nodes
getent passwd zflow >/dev/null

step "zfd from its unit"
unit=/usr/lib/systemd/system/zfd.service
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$unit"
fi
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ "$exec_start" == /usr/bin/zfd\ * ]]
# its command line, with this host's name and a socket of the test's
cmd=${exec_start//%H/$(hostname)}
cmd=${cmd//\/run\/zflow\/zfd.sock/$tmp/zfd.sock}
# shellcheck disable=SC2086
$cmd 2>"$tmp/zfd.log" &
zfd_pid=$!
for _ in $(seq 100); do [[ -S "$tmp/zfd.sock" ]] && break; sleep 0.1; done
zfctl --socket "$tmp/zfd.sock" runtime list | grep -q "$(hostname)"
# the installed example deploys to it (its folders are the unit's --lib-path),
# in C and in Python, with Zenoh-Flow's spellings
ex=/usr/share/zflow/examples/seed-pipeline lib=/usr/lib/zflow/examples/seed-pipeline
for flow in flow.yaml flow-python.yaml; do
  zctl() { zfctl --socket "$tmp/zfd.sock" "$@"; }
  zctl instance create "$ex/$flow" --vars "LIB_DIR=$lib,FRAME_BYTES=64KiB" --name seed >/dev/null
  zctl instance start seed | grep -q RUNNING
  zctl instance list | grep -q "seed  *RUNNING"
  zctl instance delete seed >"$tmp/destroy.txt" 2>&1 || { cat "$tmp/destroy.txt"; exit 1; }
  grep -q "nothing leaked" "$tmp/destroy.txt"
done
kill -TERM "$zfd_pid"
wait "$zfd_pid"
zfd_pid=

step "the seed pipeline, installed"
zfctl run "$ex/flow.yaml" --var LIB_DIR="$lib" --var FRAME_BYTES=1MiB --duration 2s \
  >"$tmp/run.txt" 2>&1 || { cat "$tmp/run.txt"; exit 1; }
grep "nothing leaked" "$tmp/run.txt"
zfctl run "$ex/flow-python.yaml" --var LIB_DIR="$lib" --var FRAME_BYTES=1MiB --duration 2s \
  >"$tmp/runpy.txt" 2>&1 || { cat "$tmp/runpy.txt"; exit 1; }
grep "nothing leaked" "$tmp/runpy.txt"

step "a node built with zf_node() from the installed CMake package"
mkdir "$tmp/proj"
cp "$here/consumer.c" "$here/node.c" "$tmp/proj/"
cp "$here/CMakeLists.txt.in" "$tmp/proj/CMakeLists.txt"
cmake -S "$tmp/proj" -B "$tmp/proj/build" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
"$tmp/proj/build/consumer_shared"
nm -D --defined-only "$tmp/proj/build/libconsumer_node.so" | grep -q ' zf_node_declare$'

step "Python outside the runtime"
/usr/bin/python3 -c "import zflow.testing, zenoh_flow, zenoh_flow_python; print(zflow.__file__)"
(cd "$ex" && PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m unittest -q test_detect)
echo "1 passed, 0 failed"
