#!/usr/bin/env bash
# Zenoh-Flow's own Python examples, run unchanged on zflow: the files come
# from checkouts given on the command line (nothing upstream is copied into
# this tree); each is copied to a temporary folder, its BASE_DIR edited as
# its README says, and run with `zfctl run`. Their Zenoh built-ins run as
# DDS sources and sinks; a second `zfctl run` publishes what they wait for.
#   tests/python/zenoh-flow/upstream.sh BUILD ZENOH_FLOW_PYTHON ZENOH_FLOW_EXAMPLES
# ZENOH_FLOW_PYTHON: a checkout of eclipse-zenoh-flow/zenoh-flow-python (the
# 0.5 examples are read from its commit c000683, the 0.6 ones from HEAD);
# ZENOH_FLOW_EXAMPLES: ZettaScaleLabs/zenoh-flow-examples (getting-started,
# period-miss-detector). Not in ctest: it needs both checkouts.
set -euo pipefail
build=$(cd "$1" && pwd) zfp=$2 zfe=$3
zfctl=$build/apps/zfctl/zfctl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
fail() {
  echo "FAIL $*" >&2
  exit 1
}
git_file() { git -C "$1" show "$2:$3"; } # a file of a checkout at a commit, as it is there
# run FLOW (the subscriber side) for SUB seconds, with PUB (a publisher flow)
# run meanwhile for PUBSEC seconds; the subscriber's output in $tmp/$4.log
run_pair() {
  local flow=$1 pub=$2 pubsec=$3 name=$4 sub=$5
  shift 5
  timeout 120 "$zfctl" run "$flow" --duration "${sub}s" "$@" >"$tmp/$name.log" 2>&1 &
  local pid=$!
  sleep 1
  timeout 120 "$zfctl" run "$pub" --duration "${pubsec}s" >"$tmp/$name.pub.log" 2>&1
  wait "$pid" || fail "$name: zfctl run failed: $(tail -5 "$tmp/$name.log")"
  grep -q "nothing leaked" "$tmp/$name.log" || fail "$name: leaked: $(tail -5 "$tmp/$name.log")"
  if grep -E "warn|error" "$tmp/$name.log" | grep -v "^DEBUG\|^INFO"; then
    fail "$name: warnings or errors above"
  fi
}
# a zflow source publishing `text` every 200 ms on a Zenoh key expression
publisher() {
  local dir=$1 key=$2 text=$3
  cat >"$dir/pub.py" <<EOF
import zflow
class Pub(zflow.Node):
    def __init__(self, context, configuration):
        self.n = 0
    def produce(self):
        if self.n < 8:
            self.n += 1
            self.send("out", b"$text")
EOF
  cat >"$dir/pub.yaml" <<EOF
name: pub
sources: [{id: pub, python: pub.py, period: 200ms, outputs: [out]}]
sinks: [{id: zpub, zenoh-publishers: {"in": "$key"}}]
links: [{from: {node: pub, output: out}, to: {node: zpub, input: in}}]
EOF
}

# zenoh-flow-python 0.5: source -> operator -> sink through uri: node files
d=$tmp/zfp05 && mkdir "$d"
for f in source.py operator.py sink.py py-source.yml py-operator.yml py-sink.yml py-pipeline.yml; do
  git_file "$zfp" c000683 "zenoh-flow-python/examples/$f" >"$d/$f"
done
(cd "$d" && timeout 60 "$zfctl" run py-pipeline.yml --duration 3s) >"$tmp/zfp05.log" 2>&1 ||
  fail "zenoh-flow-python 0.5: $(tail -5 "$tmp/zfp05.log")"
if ! grep -q "^Received 3$" "$tmp/zfp05.log" || ! grep -q "nothing leaked" "$tmp/zfp05.log"; then
  fail "zenoh-flow-python 0.5: $(cat "$tmp/zfp05.log")"
fi
ok "zenoh-flow-python 0.5 examples (source.py, operator.py, sink.py)"

# zenoh-flow-python 0.6: a Zenoh subscriber -> sink.py
d=$tmp/zfp06 && mkdir "$d"
git_file "$zfp" HEAD examples/flow.yaml >"$d/flow.yaml"
git_file "$zfp" HEAD examples/sink.py >"$d/sink.py"
publisher "$d" zenoh-flow-python/source hello
run_pair "$d/flow.yaml" "$d/pub.yaml" 2.5 zfp06 4 --var BASE_DIR="$d"
[[ $(grep -c "INFO:root:timestamp: Timestamp" "$tmp/zfp06.log") -ge 3 ]] ||
  fail "zenoh-flow-python 0.6: $(tail -20 "$tmp/zfp06.log")"
ok "zenoh-flow-python 0.6 example (flow.yaml, sink.py)"

# zenoh-flow-examples: getting-started and period-miss-detector, each file's
# BASE_DIR edited (their nodes write /tmp/greetings.txt and /tmp/period-log.txt)
for ex in getting-started period-miss-detector; do
  d=$tmp/$ex && mkdir "$d"
  git -C "$zfe" ls-tree -r --name-only HEAD "$ex" | grep -E '\.(yaml|py)$' | grep -v /rust/ |
    while read -r f; do
      mkdir -p "$d/$(dirname "${f#"$ex"/}")"
      git_file "$zfe" HEAD "$f" | sed "s|/path/to/zenoh-flow-examples/$ex|$d|" >"$d/${f#"$ex"/}"
    done
done
rm -f /tmp/greetings.txt /tmp/period-log.txt
publisher "$tmp/getting-started" zf/getting-started/hello Jade
run_pair "$tmp/getting-started/data-flow.yaml" "$tmp/getting-started/pub.yaml" 2.5 gs 4
[[ $(grep -c "^Bonjour, Jade!$" /tmp/greetings.txt) -ge 3 ]] ||
  fail "getting-started: $(cat /tmp/greetings.txt; tail -20 "$tmp/gs.log")"
ok "zenoh-flow-examples getting-started (greetings-maker.py, file-writer.py)"
publisher "$tmp/period-miss-detector" zf/period-miss-detector 3.1416
run_pair "$tmp/period-miss-detector/data-flow.yaml" "$tmp/period-miss-detector/pub.yaml" 2 pmd 10
if [[ $(grep -c "^Received: 3.1416$" /tmp/period-log.txt) -lt 3 ]] ||
  ! grep -q "^(default) 0$" /tmp/period-log.txt; then
  fail "period-miss-detector: $(cat /tmp/period-log.txt; tail -20 "$tmp/pmd.log")"
fi
ok "zenoh-flow-examples period-miss-detector (its 5 s timer without holding a worker)"
echo "$pass passed, 0 failed"
