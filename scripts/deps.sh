#!/usr/bin/env bash
# Install the Debian packages a zflow task needs, when any is missing.
#   scripts/deps.sh build|test|bench...
# As root it runs apt-get; otherwise it prints the exact apt-get line and
# exits 1, changing nothing.
set -euo pipefail

declare -A SETS=(
  [build]="build-essential cmake pkg-config libyaml-dev python3-dev cyclonedds-dev libsodium-dev libmicrohttpd-dev"
  [test]="build-essential cmake pkg-config libyaml-dev python3-dev cyclonedds-dev libsodium-dev libmicrohttpd-dev python3-numpy clang libclang-rt-14-dev clang-format universal-ctags graphviz procps prometheus chromium tmux"
  [bench]="build-essential cmake pkg-config libyaml-dev python3-dev cyclonedds-dev libsodium-dev libmicrohttpd-dev gnuplot-nox libgstreamer1.0-dev gstreamer1.0-tools gstreamer1.0-plugins-base libiceoryx-binding-c-dev iceoryx"
)

want=()
for set in "$@"; do
  [[ -n "${SETS[$set]:-}" ]] || { echo "deps.sh: unknown set '$set' (build, test, bench)" >&2; exit 2; }
  for p in ${SETS[$set]}; do want+=("$p"); done
done

missing=()
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "zflow needs these Debian packages: ${missing[*]}" >&2
  echo "run as root:  apt-get update && $line" >&2
  exit 1
fi
echo "== installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
