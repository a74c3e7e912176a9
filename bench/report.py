#!/usr/bin/env python3
"""bench/report.py: zflow's benchmark results, side by side.

    bench/report.py OUTDIR [--doc docs/performance.md] [--no-plots]

Reads every OUTDIR/rep*/*.json (zf-bench's schema: {"machine": {...},
"results": [{"bench", "impl", "size", "samples", "p50_ns", ...}]}), takes the
median of each field over the repetitions, and writes

  OUTDIR/results.json    the medians (same fields) plus every raw run
  OUTDIR/summary.md      the tables and the targets
  OUTDIR/data/*.dat      one series per benchmark/implementation, for gnuplot
  OUTDIR/*.png           the plots (bench/plot.gp)

and prints the summary to stdout. With --doc it also writes that Markdown
page and copies the plots beside it (docs/performance/*.png). It reads
OUTDIR/meta.env (KEY=VALUE lines from bench/run.sh) for the run's context.
Python 3 standard library only.
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["samples", "p50_ns", "p99_ns", "p999_ns", "mean_ns", "min_ns", "msgs_per_s",
          "cpu_ns_per_msg"]

# (bench, impl): label. Order is the order of tables and plot legends.
SERIES = [
    (("limit", "ring"), "the limit: a raw ring of 8-byte cells, same two pinned threads"),
    (("limit", "ring+header"),
     "the floor of a hop by handle: the same ring, the cell naming a header line"),
    (("hop", "zflow"), "zflow hop (in process, zero-copy)"),
    (("hop", "zflow+header"),
     "zflow hop and the capsule's first use (its header line read, as ring+header)"),
    (("copy", "memcpy"), "memcpy per hop (in process)"),
    (("hop", "tcp"), "TCP on 127.0.0.1 (two threads)"),
    (("ipc_hop", "uds"), "Unix domain socket (two processes)"),
    (("ipc_hop", "iceoryx"), "iceoryx (two processes, zero-copy)"),
    (("hop_isolated", "zflow"),
     "zflow into an isolated node: the source's send to the operator's receipt in its own "
     "process (1 crossing, zero-copy)"),
    (("hop_isolated", "zflow-roundtrip"),
     "zflow isolated node: source -> operator in its own process -> sink (2 crossings)"),
    (("dds_hop", "cyclonedds"), "Cyclone DDS (two processes, UDP loopback)"),
    (("pipeline", "zflow"), "zflow pipeline (3 links, 2 workers)"),
    (("pipeline", "gstreamer"), "GStreamer: fakesrc ! queue ! queue ! queue ! fakesink"),
    (("pipeline", "gstreamer-q0"), "GStreamer: fakesrc ! fakesink"),
    (("pipeline", "gstreamer-q1"), "GStreamer: fakesrc ! queue ! fakesink"),
    (("pipeline", "gstreamer-q2"), "GStreamer: fakesrc ! queue ! queue ! fakesink"),
    (("stage", "zflow"), "zflow pipeline on one worker (CPU per message of one stage)"),
]
LABEL = dict(SERIES)
HOPS = [("hop", "zflow"), ("copy", "memcpy"), ("hop", "tcp"), ("ipc_hop", "uds"),
        ("ipc_hop", "iceoryx"), ("hop_isolated", "zflow"), ("dds_hop", "cyclonedds")]
PIPES = [("pipeline", "zflow"), ("pipeline", "gstreamer")]
BREAKDOWN = [("pipeline", "gstreamer-q0"), ("pipeline", "gstreamer-q1"),
             ("pipeline", "gstreamer-q2"), ("pipeline", "gstreamer")]
# Under the DDS table: the zflow link between two workers is measured by
# bench/cluster.sh (two zfd, beside zfpeer-dds in its own run), not here.
DOC_CROSS_WORKER = (
    "A zflow link between two workers over the same DDS configuration is measured by "
    "`bench/cluster.sh` (two `zfd` joined on loopback, beside `zfpeer-dds` in the same "
    "run, at the same send period): its figures, as ratios to raw Cyclone DDS, are in "
    "[cluster.md](cluster.md#tests-and-figures).")
SCENARIOS = [
    ("One hop, in process", [("limit", "ring"), ("limit", "ring+header"), ("hop", "zflow"),
                             ("hop", "zflow+header"), ("copy", "memcpy"),
                             ("hop", "tcp")]),
    ("One hop, across processes",
     [("ipc_hop", "uds"), ("ipc_hop", "iceoryx"), ("hop_isolated", "zflow"),
      ("hop_isolated", "zflow-roundtrip")]),
    ("One hop, across processes over DDS (loopback)", [("dds_hop", "cyclonedds")]),
    ("3-stage pipeline: source -> operator -> operator -> sink", PIPES + [("stage", "zflow")]),
]
LIMIT = ("limit", "ring")
FLOOR = ("limit", "ring+header")  # a hop by handle: the cell, then the header it names
KiB, MiB = 1024, 1024 * 1024


def human_size(s):
    if s >= MiB and s % MiB == 0:
        return "%d MiB" % (s // MiB)
    if s >= KiB and s % KiB == 0:
        return "%d KiB" % (s // KiB)
    return "%d B" % s


def human_ns(ns):
    if ns is None:
        return "-"
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            v = ns / div
            return ("%.3g %s" % (v, unit)) if v < 100 else ("%.0f %s" % (v, unit))
    return "%.0f ns" % ns


def human_rate(r):
    if r is None:
        return "-"
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if r >= div:
            v = r / div
            return ("%.3g %s" % (v, unit)) if v < 100 else ("%.0f %s" % (v, unit))
    return "%.3g" % r if r < 10 else "%.0f" % r


def ratio(a, b):
    return a / b if a is not None and b else None


def read_meta(outdir):
    meta = {}
    path = os.path.join(outdir, "meta.env")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    return meta


# Limit rows measured beside a zflow benchmark, in its file (`zf-bench
# limit,hop`: the limit just before the hop, size by size): the
# denominator of that benchmark's ratios. BESIDE[(bench, impl, size)]
# [(rep, file)] = result. The tables' limit rows are zf-limit.json's.
BESIDE = {}


def load(outdir):
    """runs[(bench, impl, size)] = [result per repetition]; machine."""
    runs, machine = {}, {}
    files = sorted(glob.glob(os.path.join(outdir, "rep*", "*.json")))
    for path in files:
        rep = os.path.basename(os.path.dirname(path))
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print("report.py: skipping %s: %s" % (path, e), file=sys.stderr)
            continue
        machine = doc.get("machine", machine)
        for r in doc.get("results", []):
            r = dict(r, rep=rep, file=os.path.relpath(path, outdir))
            key = (r["bench"], r["impl"], r["size"])
            if r["bench"] == "limit" and os.path.basename(path) != "zf-limit.json":
                BESIDE.setdefault(key, {})[(rep, r["file"])] = r
                continue
            runs.setdefault(key, []).append(r)
    return runs, machine


def medians(runs):
    med = {}
    for key, rs in runs.items():
        m = {"bench": key[0], "impl": key[1], "size": key[2], "reps": len(rs)}
        for f in FIELDS:
            m[f] = statistics.median(r[f] for r in rs)
        rates = [r["msgs_per_s"] for r in rs]
        m["msgs_per_s_min"], m["msgs_per_s_max"] = min(rates), max(rates)
        med[key] = m
    return med


def sizes_of(med, series):
    return sorted({k[2] for k in med if (k[0], k[1]) in series})


def get(med, series, size, field):
    m = med.get((series[0], series[1], size))
    return m[field] if m else None


def denominators(runs, a, b, size, field):
    """[(row of a, b's value)] per repetition, in order: b from a's own file
    when it was measured there (BESIDE), else from the same repetition."""
    rb = {r["rep"]: r[field] for r in runs.get((b[0], b[1], size), [])}
    near = BESIDE.get((b[0], b[1], size), {})
    out = []
    for r in sorted(runs.get((a[0], a[1], size), []), key=lambda r: r["rep"]):
        d = near.get((r["rep"], r["file"]))
        v = d[field] if d else rb.get(r["rep"])
        if v:
            out.append((r, v))
    return out


def per_rep_ratios(runs, a, b, size, field="msgs_per_s"):
    """a / b per repetition (denominators)."""
    return [r[field] / v for r, v in denominators(runs, a, b, size, field)]


def limit_of(med, runs, a, size, field):
    """The limit a's ratios are taken against at `size`: the median of its
    denominators, else the repetitions' own limit run."""
    vs = [v for _, v in denominators(runs, a, LIMIT, size, field)]
    return statistics.median(vs) if vs else get(med, LIMIT, size, field)


# ---- tables ----

def vs_limit(med, runs, s, size):
    """zflow rows: p50 and messages/s as ratios to the limit at the same size,
    the median of the per-repetition ratios (each from the same run)."""
    if not s[1].startswith("zflow") or not med.get((LIMIT[0], LIMIT[1], size)):
        return ""
    lat = per_rep_ratios(runs, s, LIMIT, size, "p50_ns")
    thr = per_rep_ratios(runs, s, LIMIT, size, "msgs_per_s")
    parts = []
    if lat and s[0] != "stage":
        parts.append("p50 %.2fx" % statistics.median(lat))
    if thr:
        parts.append("msg/s %.0f%%" % (100 * statistics.median(thr)))
    return ", ".join(parts)


def table(med, series_list, runs=None):
    rows = ["| size | implementation | p50 | p99 | p99.9 | samples | messages/s (min-max) "
            "| CPU / message | vs the limit |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for size in sizes_of(med, series_list):
        for s in series_list:
            m = med.get((s[0], s[1], size))
            if not m:
                continue
            spread = ""
            if m["reps"] > 1:
                spread = " (%s-%s)" % (human_rate(m["msgs_per_s_min"]),
                                       human_rate(m["msgs_per_s_max"]))
            no_lat = s[0] == "stage"
            rows.append("| %s | %s | %s | %s | %s | %s | %s%s | %s | %s |" % (
                human_size(size), LABEL.get(s, "%s/%s" % s),
                "-" if no_lat else human_ns(m["p50_ns"]),
                "-" if no_lat else human_ns(m["p99_ns"]),
                "-" if no_lat else human_ns(m["p999_ns"]), "-" if no_lat else m["samples"],
                human_rate(m["msgs_per_s"]), spread, human_ns(m["cpu_ns_per_msg"]),
                vs_limit(med, runs or {}, s, size)))
    return "\n".join(rows)


# ---- targets ----

def floor_note(med, runs, size, field):
    """The zflow hop against the floor of a hop by handle (FLOOR), same runs."""
    f = get(med, FLOOR, size, field)
    reps = per_rep_ratios(runs, ("hop", "zflow"), FLOOR, size, field)
    if not f or not reps:
        return ""
    r = statistics.median(reps)
    if field == "p50_ns":
        used = per_rep_ratios(runs, ("hop", "zflow+header"), LIMIT, size, field)
        used_floor = per_rep_ratios(runs, ("hop", "zflow+header"), FLOOR, size, field)
        first_use = ""
        if used and used_floor:
            first_use = ("; with the capsule's first use (its header line read: "
                         "`hop` zflow+header) %s, %.2fx the limit and %.2fx that floor" % (
                             human_ns(get(med, ("hop", "zflow+header"), size, field)),
                             statistics.median(used), statistics.median(used_floor)))
        return ("; the floor of a hop by handle (a cell, then the header line it names: "
                "`limit` ring+header) %s, zflow %.2fx it%s" % (human_ns(f), r, first_use))
    return ("; the floor of a hop by handle streams %s msg/s, zflow %.0f%% of it" %
            (human_rate(f), 100 * r))


def targets(med, runs):
    """[(name, met: True/False/None, text)]"""
    out = []
    for size in (64, 100 * MiB):
        z = get(med, ("hop", "zflow"), size, "p50_ns")
        l = limit_of(med, runs, ("hop", "zflow"), size, "p50_ns")
        reps = per_rep_ratios(runs, ("hop", "zflow"), LIMIT, size, "p50_ns")
        if not reps:
            out.append(("one hop p50 <= 1.5x the limit at %s" % human_size(size), None,
                        "not measured"))
            continue
        r = statistics.median(reps)
        out.append(("one hop p50 <= 1.5x the limit's p50 at %s" % human_size(size), r <= 1.5,
                    "zflow %s, the limit %s (medians): %.2fx by the median of the per-run "
                    "ratios (%s)%s%s" % (human_ns(z), human_ns(l), r,
                                         ", ".join("%.2fx" % x for x in reps),
                                         "" if r <= 1.5 else "; over by %.0f%%" %
                                         ((r / 1.5 - 1) * 100), floor_note(med, runs, size,
                                                                           "p50_ns"))))
    z = get(med, ("hop", "zflow"), 64, "msgs_per_s")
    l = limit_of(med, runs, ("hop", "zflow"), 64, "msgs_per_s")
    reps = per_rep_ratios(runs, ("hop", "zflow"), LIMIT, 64)
    if z and l and reps:
        share = statistics.median(reps)
        met = z >= 8e6 or share >= 0.6
        out.append(("64 B hop >= 8 M msg/s, or >= 60% of the limit's streaming rate", met,
                    "zflow %s msg/s, the limit %s msg/s (%.0f%%, the median of the "
                    "per-run shares)%s" % (
                        human_rate(z), human_rate(l), 100 * share,
                        floor_note(med, runs, 64, "msgs_per_s"))))
    st = get(med, ("stage", "zflow"), 64, "cpu_ns_per_msg")
    if st:
        out.append(("CPU per message of a same-core pipeline stage <= 60 ns", st <= 60,
                    "%s per stage at 64 B (the pipeline on one worker, its CPU per message "
                    "over 3 stages)%s" % (human_ns(st), "" if st <= 60 else
                                          "; over by %.0f%%" % ((st / 60 - 1) * 100))))
    z64 = get(med, ("hop", "zflow"), 64, "p50_ns")
    z100 = get(med, ("hop", "zflow"), 100 * MiB, "p50_ns")
    r = ratio(z100, z64)
    if r is not None:
        p99 = ratio(get(med, ("hop", "zflow"), 100 * MiB, "p99_ns"),
                    get(med, ("hop", "zflow"), 64, "p99_ns"))
        out.append(("zflow in-process hop latency flat from 64 B to 100 MiB "
                    "(p50 at 100 MiB within 1.2x of 64 B)", r <= 1.2,
                    "p50 %s at 64 B, %s at 100 MiB: %.2fx (p99: %.2fx)%s" % (
                        human_ns(z64), human_ns(z100), r, p99 or 0,
                        "" if r <= 1.2 else "; over by %.0f%%" % ((r / 1.2 - 1) * 100))))
    else:
        out.append(("zflow in-process hop latency flat", None, "not measured"))
    for s in (("copy", "memcpy"), ("hop", "tcp")):
        a, b = get(med, s, 64, "p50_ns"), get(med, s, 100 * MiB, "p50_ns")
        r = ratio(b, a)
        out.append(("%s latency grows with size" % LABEL[s], None if r is None else r > 10,
                    "not measured" if r is None else
                    "p50 %s at 64 B, %s at 100 MiB: %.0fx" % (human_ns(a), human_ns(b), r)))
    iso = ("hop_isolated", "zflow")
    sizes = sorted(k[2] for k in med if k[:2] == iso)
    if sizes:
        reps = {s: per_rep_ratios(runs, iso, LIMIT, s, "p50_ns") for s in sizes}
        worst = max((statistics.median(r), s) for s, r in reps.items() if r)
        out.append(("isolated hop (one crossing) p50 within 2x the limit at every size",
                    worst[0] <= 2.0,
                    "%s (median of the per-run ratios); the largest at %s" % (
                        ", ".join("%s %.2fx" % (human_size(s), statistics.median(r))
                                  for s, r in reps.items() if r),
                        human_size(worst[1]))))
        io = ("ipc_hop", "iceoryx")
        pairs = [(s, get(med, iso, s, "p50_ns"), get(med, io, s, "p50_ns")) for s in sizes]
        pairs = [p for p in pairs if p[1] and p[2]]
        if pairs:
            out.append(("isolated hop (one crossing) p50 below iceoryx's at every size",
                        all(z < i for _, z, i in pairs),
                        ", ".join("%s %s vs %s" % (human_size(s), human_ns(z), human_ns(i))
                                  for s, z, i in pairs)))
        a, b = get(med, iso, 64, "p50_ns"), get(med, iso, 100 * MiB, "p50_ns")
        r = ratio(b, a)
        if r is not None:
            out.append(("isolated hop latency flat (p50 at 100 MiB within 1.2x of 64 B)",
                        r <= 1.2, "p50 %s at 64 B, %s at 100 MiB: %.2fx" % (
                            human_ns(a), human_ns(b), r)))
    for size, want, floor in ((64, 10, 7), (10 * MiB, 20, 15)):
        z = get(med, ("pipeline", "zflow"), size, "msgs_per_s")
        g = get(med, ("pipeline", "gstreamer"), size, "msgs_per_s")
        r = ratio(z, g)
        reps = per_rep_ratios(runs, ("pipeline", "zflow"), ("pipeline", "gstreamer"), size)
        name = ("3-stage pipeline >= %dx GStreamer's messages/s at %s, every repetition "
                "above %dx" % (want, human_size(size), floor))
        if r is None:
            out.append((name, None, "not measured"))
            continue
        text = "zflow %s msg/s, GStreamer %s msg/s: %.1fx (median of each)" % (
            human_rate(z), human_rate(g), r)
        if reps:
            text += "; per repetition %s" % ", ".join("%.1fx" % x for x in reps)
        if r < want:
            text += "; short of %dx by a factor %.1f (zflow would need %s msg/s)" % (
                want, want / r, human_rate(want * g))
        out.append((name, r >= want and all(x > floor for x in reps), text))
    return out


def mark(met):
    return {True: "met", False: "NOT met", None: "n/a"}[met]


# ---- outputs ----

def write_dat(med, datadir):
    os.makedirs(datadir, exist_ok=True)
    names = {}
    for s, label in SERIES:
        rows = sorted((k[2], m) for k, m in med.items() if (k[0], k[1]) == s)
        if not rows:
            continue
        name = "%s_%s" % s
        name = name.replace("-", "_")
        with open(os.path.join(datadir, name + ".dat"), "w") as f:
            f.write('size "%s" p99_ns p999_ns msgs_per_s cpu_ns_per_msg\n' % label)
            for size, m in rows:
                vals = [m["p50_ns"], m["p99_ns"], m["p999_ns"], m["msgs_per_s"],
                        m["cpu_ns_per_msg"]]
                f.write("%d %s\n" % (size, " ".join(
                    ("%.6g" % v) if v and v > 0 else "-" for v in vals)))
        names[s] = name
    return names


def plot(outdir, names):
    hops = " ".join(names[s] for s in HOPS if s in names)
    pipes = " ".join(names[s] for s in PIPES if s in names)
    if not hops or not pipes or not shutil.which("gnuplot"):
        print("report.py: no plots (gnuplot missing or no data)", file=sys.stderr)
        return []
    expr = "dat='%s'; out='%s'; hops='%s'; pipes='%s'" % (
        os.path.join(outdir, "data"), outdir, hops, pipes)
    r = subprocess.run(["gnuplot", "-e", expr, os.path.join(HERE, "plot.gp")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("report.py: gnuplot failed:\n" + r.stderr, file=sys.stderr)
        return []
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(outdir, "*.png")))


def summary(med, runs, machine, meta):
    lines = ["machine: %s, %s cores, %s MiB; repetitions: %s" % (
        machine.get("cpu", "?"), machine.get("cores", "?"), machine.get("memory_mib", "?"),
        meta.get("REPS", "?"))]
    for title, series in SCENARIOS:
        if any((s[0], s[1], z) in med for s in series for z in sizes_of(med, series)):
            lines += ["", "### " + title, "", table(med, series, runs)]
    if any(k[:2] in BREAKDOWN[:3] for k in med):
        lines += ["", "### GStreamer's cost per buffer, taken apart", "",
                  table(med, BREAKDOWN)]
    lines += ["", "### Targets", ""]
    for name, met, text in targets(med, runs):
        lines.append("- **%s** %s: %s" % (mark(met), name, text))
    failures = meta.get("FAILURES", "").strip()
    if failures:
        lines += ["", "Benchmarks that failed or were not built: " + failures]
    return "\n".join(lines)


def breakdown_text(med):
    """What a GStreamer buffer costs, from the --queues runs (64 B and 10 MiB)."""
    out = []
    for size in (64, 10 * MiB):
        c = [get(med, s, size, "cpu_ns_per_msg") for s in BREAKDOWN]
        r = [get(med, s, size, "msgs_per_s") for s in BREAKDOWN]
        z = get(med, ("pipeline", "zflow"), size, "cpu_ns_per_msg")
        if None in c or None in r:
            continue
        out.append(
            "- at %s: fakesrc ! fakesink alone (allocate, push, free; one thread) runs at %s "
            "msg/s for %s of CPU per buffer; one queue brings it to %s msg/s and %s, two to "
            "%s msg/s and %s, three to %s msg/s and %s. Each queue adds %s to %s of CPU per "
            "buffer (a lock, a condition variable signal and, when the next thread "
            "sleeps, a wake-up); zflow's whole pipeline costs %s per message." % (
                human_size(size), human_rate(r[0]), human_ns(c[0]), human_rate(r[1]),
                human_ns(c[1]), human_rate(r[2]), human_ns(c[2]), human_rate(r[3]),
                human_ns(c[3]), human_ns(min(c[i + 1] - c[i] for i in range(3))),
                human_ns(max(c[i + 1] - c[i] for i in range(3))), human_ns(z)))
    return "\n".join(out)


DOC_METHOD = """\
## Method

Every figure comes from one command, `bench/run.sh`, on one machine, in one run:
it builds zflow in Release mode (`build-bench/`), then runs each benchmark below
%(reps)s times, interleaved (all benchmarks once, then all again), and reports the
**median** of each figure over the repetitions (the min-max of messages/s is shown
beside it). All programs print the same JSON (zf-bench's schema) and follow the same
rules, those of `apps/zf-bench`:

- **Latency**: one message in flight. The sender reads `CLOCK_MONOTONIC` just before
  sending, after its buffer was allocated (`zf-bench hop`: the link stamps the
  capsule as it is pushed; `copy`: before the memcpy into a fresh capsule;
  `zf-bench pipeline`: after allocating it; iceoryx: after loaning the chunk; GStreamer:
  in a probe on fakesrc's pad, after the buffer was allocated); the receiver reads it
  on receipt (after the whole message is in its buffer, for the byte streams);
  the sender sends the next message only when the receiver has counted the previous
  one. The first n/10 + 10 messages are a warm-up and are dropped (or the first tenth
  of the phase's time cap, whichever comes first). Percentiles are sorted[n/2],
  sorted[0.99 n], sorted[0.999 n]: with few samples p99.9 is the maximum.
- **Samples**: %(samples)s per size, /5 from 8 MiB, /20 from 64 MiB (at least 200);
  the peers also stop a latency phase after %(maxlat)s s, so a slow transport at
  100 MiB reports fewer samples (the `samples` column says how many).
- **Throughput**: the producer runs free on a bounded queue for %(seconds)s s per size;
  messages counted at the receiver per second of wall time. The queue is zflow's link
  capacity: 512 MiB / (size + 64) messages for one hop, 256 MiB / (size + 64) / 3 per
  link for the pipeline, clamped to [2, 256]. The peers use the same depth (GStreamer
  queues, iceoryx subscriber queue, DDS history; the kernel's socket buffer for TCP
  and UDS) and measure after a %(warm)s s warm-up; zf-bench measures from the start.
  The harness's own counts have one writer per cache line (the source's and the
  sink's each on a line of its own; the source counts only in lockstep), as the
  peers' do: both on one line made it cross cores twice a message, a locked add
  among them, 9 %% of a 10 MiB zflow pipeline's samples.
- **CPU time per message**: user + system time of every thread of the benchmark
  (and of both processes for the two-process peers) over the throughput phase,
  divided by the messages received. RouDi, which is not on iceoryx's data path, is
  not counted.
- **Pinning**: the two sides of every hop are pinned to CPU 0 and CPU 1 (threads or
  processes). The pipelines are not pinned: zflow's two workers and GStreamer's four
  streaming threads are scheduled by the kernel on the 2 cores.
- **Waiting**: zflow's consumer spins up to 50 µs, then sleeps on a futex; every
  peer's receiver does the same (non-blocking reads / `take` for 50 µs, then a
  blocking read, WaitSet or `dds_waitset_wait`). GStreamer waits as GStreamer does
  (its queues' condition variables).
- **Payloads are not written**: zflow's capsules and iceoryx's chunks are allocated and
  sent untouched (16 bytes of header aside), GStreamer's `fakesrc` runs with
  `filltype=nothing`. The byte streams and DDS send a pre-filled buffer: they must
  copy it, which is the point of the comparison.
- **Against the machine's limit**: the CPU and the distance between its cores change
  from one virtual machine to the next (a cache line crosses cores in 30-50 ns on some,
  150-250 ns on others), so absolute figures do not compare across machines. Every
  repetition also runs `zf-bench limit`, a raw ring of 8-byte cells between the same
  two pinned threads under the same rules; the "vs the limit" column gives zflow's p50
  and messages/s as ratios to it, the median of the ratios of each repetition. The
  hops (`zf-bench limit,hop`, with and without `--isolated`) measure the limit again
  just before each size, and their ratios are to that one: a VM's vCPUs can be SMT
  siblings for some minutes and not for the next (the limit's p50 80 ns, then 300),
  and a ratio across that change measures the hypervisor. The limit rows of the
  tables are the repetition's own `zf-bench limit` run.
- Nothing draws random numbers; the order of the runs is fixed.
"""

DOC_PEERS = """\
## What each column is

| benchmark | implementation | what runs |
|---|---|---|
| `limit` | ring | `zf-bench limit`: the machine's limit for one hop, measured by `hop`'s rules: a raw single-producer ring of 8-byte cells (a word written, a word taken, nothing else) between the same two pinned threads; what crosses is the sender's timestamp itself, so its latency is one cache line crossing cores. Every zflow figure is also given as a ratio to it, from the same repetition |
| `limit` | ring+header | `zf-bench limit`, second series: the floor of a hop that names its message instead of carrying it, as a zflow link does (a handle in the cell, the capsule's header on a line of its own): the producer writes the timestamp into one of 512 line-sized headers, taken in turn, and its index into the cell; the consumer reads the cell, then the header. Two lines cross, the second only once the first has arrived |
| `hop` | zflow | `zf-bench hop`: two threads, one zflow link (a lock-free ring of 8-byte capsule handles), capsules from the shared-memory pool through per-thread magazines: a handle moves, no byte is copied. The clock is read when `zf_link_pop` returns the capsule; the take reads nothing of it (its length is in the cell) |
| `hop` | zflow+header | the same messages, the clock read again after the consumer has read the capsule's stamp from its header: the hop and the capsule's first use, two lines in a row as in `limit` ring+header (plus the first clock read, ~20 ns) |
| `copy` | memcpy | `zf-bench copy`: the same hop, but the sender copies the payload into a fresh capsule (the deep-copy hop zero-copy replaces) |
| `hop` | tcp | `zfpeer-sock tcp`: two threads, a TCP connection on 127.0.0.1 (`TCP_NODELAY`), a 16-byte header (length, timestamp) and the payload in one `writev`; the receiver reads the whole message |
| `ipc_hop` | uds | `zfpeer-sock uds`: the same over a Unix domain stream socket between two processes |
| `ipc_hop` | iceoryx | `zfpeer-iox`: Debian's iceoryx 2.0 through its C binding; publisher and subscriber processes; the benchmark starts its own RouDi with one mempool per size (room for a full queue and the publisher's loans); blocking policies (`WAIT_FOR_CONSUMER`, `BLOCK_PRODUCER`), no history |
| `hop_isolated` | zflow | `zf-bench hop --isolated`: `source -> operator -> sink` through the runtime with the operator in a process of its own (`isolation: process`, forwarding the same capsule), handles in shared-memory rings, no byte copied; lockstep for latency, as `pipeline`. This row is one crossing, as iceoryx's is: from the source's send (the capsule's stamp) to the operator's receipt in its process, where it reads the clock first thing and writes the sample into shared memory the bench maps. Messages/s: the whole path, free-running |
| `hop_isolated` | zflow-roundtrip | the same lockstep run, measured at the sink back in the runtime's process: two process crossings |
| `dds_hop` | cyclonedds | `zfpeer-dds`: raw Cyclone DDS 0.10 (C API), writer and reader processes, `struct {uint64 stamp, flags; sequence<octet> data}`, reliable, keep-last history; loopback only (`lo`, no multicast, unicast discovery), 64 KB datagrams and 60 KB fragments, socket buffers up to 8 MB, 1 ms NACK delay, 10 ms heartbeats, a 64 MB writer-history watermark (Cyclone's defaults take seconds per 100 MiB sample) |
| `pipeline` | zflow | `zf-bench pipeline`: `source -> operator -> operator -> sink` through the runtime (2 workers, the scheduler, three links), the bench node libraries; the operators forward the same capsule |
| `stage` | zflow | `zf-bench stage`: the same pipeline on one worker, so every node runs on one core and nothing crosses cores; its CPU per message divided by the 3 stages (a callback and the hop after it, the source's allocation and the sink's release included) is the cost of one stage |
| `pipeline` | gstreamer | `zfpeer-gst`: `fakesrc ! queue ! queue ! queue ! fakesink` through the C API: three queues are three thread boundaries as zflow's three links are; `fakesrc sizetype=fixed sizemax=SIZE filltype=nothing` allocates a fresh unfilled buffer per message; `fakesink sync=false enable-last-sample=false`; buffers counted by a pad probe on the sink; latency stamped by a pad probe on fakesrc's pad that lets the next buffer go only when the previous one reached the sink |

`hop_isolated` runs a whole runtime path where iceoryx's `ipc_hop` is one publisher and
one subscriber: in lockstep a message passes a worker (the source, then the proxy node
that writes its handle into the child's input ring), the child process (the operator)
and an idle worker (the sink), two process crossings and, when the child and the worker
had parked, two wake-ups ([isolation.md](isolation.md), "Waiting"). The first
crossing is the `zflow` row, the whole trip the `zflow-roundtrip` row. The `dds_hop`
row is the baseline for links between workers.
"""

DOC_PLOTS = """\
## Plots

![one hop: median latency vs size](%(d)s/latency_p50.png)

**The zero-copy picture.** One hop's median latency against the payload size, both
axes logarithmic. A zflow hop hands over a pointer, so its line is flat: 64 B and
100 MiB cost the same. Every transport that copies the payload (memcpy, TCP, a Unix
socket, DDS) grows with the size once the payload outgrows the caches, roughly
linearly (a slope of 1 on these axes): its cost is memory bandwidth. iceoryx is flat
too (shared memory, zero-copy) but pays for crossing processes.

![one hop: p99 latency vs size](%(d)s/latency_p99.png)

The same at the 99th percentile: the tail, what a consumer with a deadline sees. It
includes the page faults, the scheduler and the hypervisor of a 2-core virtual machine,
for every transport alike.

![one hop: messages per second](%(d)s/hop_throughput.png)

Messages per second through one hop with the producer running free. Zero-copy keeps
the rate independent of the size; a copying hop is bounded by bytes per second.

![pipeline: messages per second, zflow vs GStreamer](%(d)s/pipeline_throughput.png)

**The pipeline against GStreamer**: messages per second through
`source -> operator -> operator -> sink` (zflow) and `fakesrc ! queue ! queue ! queue !
fakesink` (GStreamer). Neither writes its payloads; both allocate one buffer per message.

![pipeline latency](%(d)s/pipeline_latency.png)

The pipelines' latency with one message in flight (p50 solid, p99 dashed).

![CPU per message](%(d)s/cpu_per_msg.png)

CPU time per message over the free-running phase, all threads and processes involved.
"""


def write_doc(path, outdir, med, runs, machine, meta, pngs):
    docdir = os.path.dirname(os.path.abspath(path))
    imgdir_name = os.path.splitext(os.path.basename(path))[0]
    imgdir = os.path.join(docdir, imgdir_name)
    os.makedirs(imgdir, exist_ok=True)
    for p in pngs:
        shutil.copy(os.path.join(outdir, p), os.path.join(imgdir, p))
    parts = ["# Performance", "",
             "<!-- Generated by bench/run.sh (bench/report.py) from %s: do not edit by hand; "
             "run `bench/run.sh` to regenerate it. -->" % meta.get("OUTDIR_REL", outdir), "",
             "zflow against its peers, side by side, from one run of `bench/run.sh` on the "
             "machine below (%s). The run took %s minutes: build, %s repetitions of every "
             "benchmark, report." % (meta.get("DATE", "?"),
                                     ("%.1f" % (float(meta["SECONDS"]) / 60))
                                     if meta.get("SECONDS") else "?", meta.get("REPS", "?")),
             "", "## How to run it", "",
             "```sh\nbench/run.sh                 # results in bench-results/<timestamp>/\n"
             "bench/run.sh OUTDIR          # or in OUTDIR\n"
             "bench/run.sh --quick         # a smoke test: 1 repetition, short phases, this page untouched\n"
             "bench/run.sh --help          # the options\n```", "",
             "As root it installs what is missing from Debian (`scripts/deps.sh bench`), builds "
             "into `build-bench/` (Release), runs everything, writes the JSON, the tables and "
             "the PNG plots to the output folder, prints the summary, and rewrites this page "
             "and `docs/performance/*.png`.", ""]
    parts.append(DOC_METHOD % {
        "reps": meta.get("REPS", "?"), "samples": meta.get("SAMPLES", "?"),
        "maxlat": meta.get("MAX_LATENCY_SECONDS", "?"), "seconds": meta.get("SECONDS_PER_SIZE", "?"),
        "warm": meta.get("WARMUP", "?")})
    parts += ["## The machine", "",
              "| | |", "|---|---|",
              "| CPU | %s |" % machine.get("cpu", "?"),
              "| cores | %s |" % machine.get("cores", "?"),
              "| memory | %s MiB |" % machine.get("memory_mib", "?"),
              "| system | %s |" % meta.get("SYSTEM", "?"),
              "| kernel | %s |" % meta.get("KERNEL", "?"),
              "| compiler | %s |" % meta.get("COMPILER", "?"),
              "| zflow | %s |" % meta.get("GIT", "?"),
              "| peers | %s |" % meta.get("PACKAGES", "?"), ""]
    parts.append(DOC_PEERS)
    parts += ["## Results (medians of %s repetitions)" % meta.get("REPS", "?"), ""]
    for title, series in SCENARIOS:
        parts += ["### " + title, "", table(med, series, runs), ""]
        if series[0][0] == "dds_hop":
            parts += [DOC_CROSS_WORKER, ""]
    parts.append(DOC_PLOTS % {"d": imgdir_name})
    parts += ["## Targets", ""]
    tg = targets(med, runs)
    for name, met, text in tg:
        parts.append("- **%s** %s: %s" % (mark(met), name, text))
    parts.append("")
    parts += why_text(med, tg, machine)
    failures = meta.get("FAILURES", "").strip()
    parts += ["## Limits of these figures", "",
              "- One 2-core virtual machine: two threads pinned to two cores, or a pipeline of "
              "four stages on two cores, share the machine with the kernel and the hypervisor. "
              "Run-to-run variation is large for the free-running figures (the min-max column); "
              "the medians are the figures to quote.",
              missing_text(med, meta),
              "- Cyclone DDS runs without shared memory (Debian builds it without iceoryx): "
              "every sample is serialized, sent as UDP datagrams over loopback, reassembled and "
              "deserialized, which is what a link between two machines will cost at least.",
              "- GStreamer's `fakesrc` allocates every buffer with `malloc` and has no buffer "
              "pool; real sources (`v4l2src`, `appsrc` with a pool) recycle their buffers, "
              "which would remove most of GStreamer's size-dependent cost, not its per-queue "
              "cost.",
              "- zflow's cross-process row is a whole runtime path (a worker runs the source, "
              "the child the operator, an idle worker delivers to the sink: two process "
              "crossings and two wake-ups in lockstep); iceoryx's is one publisher and one "
              "spinning subscriber (docs/isolation.md, \"Waiting\")."]
    if failures:
        parts.append("- Not measured in this run (failed, or not built for lack of a "
                     "package): %s." % failures)
    parts.append("")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def missing_text(med, meta):
    """Which (series, size) of the main tables this run has no figure for."""
    sizes = sorted({k[2] for k in med})
    missing = ["%s at %s" % (LABEL[s], human_size(z)) for s in HOPS + PIPES
               if any(k[:2] == s for k in med) for z in sizes if (s[0], s[1], z) not in med]
    absent = [LABEL[s] for s in HOPS + PIPES if not any(k[:2] == s for k in med)]
    if not missing and not absent:
        return ("- Every implementation ran every size: no peer was refused one (iceoryx's "
                "mempools are written for the sizes asked). The slow transports at 100 MiB hit "
                "the latency phase's time cap: the samples column says how many they took.")
    return "- Missing from this run: %s." % "; ".join(missing + ["%s (all sizes)" % a
                                                               for a in absent])


def why_text(med, tg, machine):
    """What GStreamer's path costs, and why the ratios are what they are (from the data)."""
    zp = lambda size, f: get(med, ("pipeline", "zflow"), size, f)
    gp = lambda size, f: get(med, ("pipeline", "gstreamer"), size, f)
    z, zc, g, gc = zp(64, "msgs_per_s"), zp(64, "cpu_ns_per_msg"), gp(64, "msgs_per_s"), \
        gp(64, "cpu_ns_per_msg")
    if None in (z, zc, g, gc):
        return []
    cores = int(machine.get("cores", 2) or 2)
    hop_c = get(med, ("hop", "zflow"), 64, "cpu_ns_per_msg")
    q0c = get(med, ("pipeline", "gstreamer-q0"), 64, "cpu_ns_per_msg")
    need = 1e9 * cores / (10 * g)
    out = ["### What GStreamer's path costs, and why the ratios are what they are", "",
           "At 64 B neither side copies a byte: a pipeline's rate is set by the CPU time one "
           "message costs and by how much of the %d cores (for four stages) it keeps busy. "
           "zflow delivered %s msg/s at %s of "
           "CPU per message (%.2f cores busy), GStreamer %s msg/s at %s (%.2f cores busy): "
           "zflow spends %.1fx less CPU per message%s; together that makes its %.1fx." % (
               cores, human_rate(z), human_ns(zc), z * zc / 1e9, human_rate(g), human_ns(gc),
               g * gc / 1e9, gc / zc,
               " but keeps fewer cores busy (its workers sleep part of the time)"
               if z * zc < g * gc else " and keeps more cores busy", z / g), ""]
    hop_txt = ""
    if hop_c:
        hop_txt = (", less than one zflow hop costs today (`zf-bench hop`: %s per message)"
                   % human_ns(hop_c)) if need < hop_c else (
            ", %.1fx what one zflow hop costs today (`zf-bench hop`: %s per message)"
            % (need / hop_c, human_ns(hop_c)))
    q0_txt = (" GStreamer itself needs %s per buffer with no thread boundary at all "
              "(`fakesrc ! fakesink`: allocate, push, free, in one thread)." % human_ns(q0c)
              ) if q0c else ""
    out += ["Ten times GStreamer's rate at 64 B is %s msg/s: with both cores fully busy, at "
            "most %s of CPU per message for the whole pipeline (allocation, three hand-offs, "
            "release)%s.%s" % (human_rate(10 * g), human_ns(need), hop_txt, q0_txt), "",
            "GStreamer's cost per buffer, taken apart with shorter pipelines "
            "(`zfpeer-gst --queues 0..2`, same run, medians):", ""]
    bt = breakdown_text(med)
    out += [bt if bt else "- (the breakdown runs are missing from this run)", ""]
    g10, g10c = gp(10 * MiB, "msgs_per_s"), gp(10 * MiB, "cpu_ns_per_msg")
    g100, g100c = gp(100 * MiB, "msgs_per_s"), gp(100 * MiB, "cpu_ns_per_msg")
    if g10 and g100:
        out += ["GStreamer's cost per buffer grows with the size although it writes no byte: "
                "`fakesrc` allocates every buffer with `malloc`, and with a queue between them "
                "the buffer is freed by another thread than the one that allocated it. "
                "glibc's heaps then shrink and grow again (`munmap`, `madvise`, and page "
                "faults when the memory comes back), and the queues run nearly empty, so "
                "threads sleep and wake for most buffers: system time, not user time. "
                "Without a queue none of it happens (see it with `/usr/bin/time -v` or "
                "`strace -c -f` on `zfpeer-gst --queues 0` and `--queues 1 --sizes 10MiB`). "
                "At 10 MiB this costs %s per buffer (%s msg/s) and varies with the "
                "heap's state from run to run; at 100 MiB, always above glibc's `mmap` "
                "threshold, %s (%s msg/s). zflow's pool recycles its segments: its cost per "
                "message does not depend on the size. A GStreamer source with a "
                "`GstBufferPool` (as real capture elements have) would avoid most of this; "
                "`fakesrc` has none." % (human_ns(g10c), human_rate(g10), human_ns(g100c),
                                         human_rate(g100)), ""]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--doc", help="also write this Markdown page (and its plots beside it)")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    runs, machine = load(a.outdir)
    if not runs:
        print("report.py: no results under %s/rep*/" % a.outdir, file=sys.stderr)
        return 1
    meta = read_meta(a.outdir)
    med = medians(runs)
    with open(os.path.join(a.outdir, "results.json"), "w") as f:
        json.dump({"machine": machine, "meta": meta,
                   "results": [med[k] for k in sorted(med)],
                   "runs": [r for k in sorted(runs) for r in runs[k]]}, f, indent=1)
    names = write_dat(med, os.path.join(a.outdir, "data"))
    pngs = [] if a.no_plots else plot(a.outdir, names)
    text = summary(med, runs, machine, meta)
    with open(os.path.join(a.outdir, "summary.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if pngs:
        print("\nplots: " + ", ".join(os.path.join(a.outdir, p) for p in pngs))
    if a.doc:
        write_doc(a.doc, a.outdir, med, runs, machine, meta, pngs)
        print("wrote " + a.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
