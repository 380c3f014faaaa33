"""The performance goals of issue 15, side by side in one run (figures in BENCHMARKS.md).

    python kanata-pp/python/benches/bench.py [--insns 1000000] [--rounds 5]
    python kanata-pp/python/benches/bench.py --trace big.kanata [--rounds 5]   # 2. and 3. only

1. Writer: time per event of `kanata_trace.Writer` against a plain Python writer that formats
   the same lines with f-strings into a buffered file without any checking, on the same
   event stream (generated once: a 4-wide out-of-order core's stages, stalls, dependencies,
   flushes; Kanata-format lines with cycle steps).
2. read(): instructions per second into Python objects, without and with touching `stages`.
3. table(): stage segments per second into a pyarrow Table.

The median of the rounds is reported.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

import kanata_trace as kt

STAGES = ["F", "Dc", "Rn", "Is", "X", "Cm"]


def event_stream(n_insns: int, seed: int = 1):
    """(op, args) tuples; instruction numbers are the order of `begin`, so both writers'
    handles are the same numbers."""
    rng = random.Random(seed)
    events = []
    live = []  # [insn, stage index, remaining cycles in stage, stalled]
    next_id = 0
    while next_id < n_insns or live:
        for _ in range(4):
            if next_id < n_insns and len(live) < 96:
                i = next_id
                next_id += 1
                events.append(("begin", i, 0x8000_0000 + 4 * i))
                events.append(("label", i, f"0x{0x8000_0000 + 4 * i:x}: addi a{i % 8}, a{(i + 1) % 8}, {i % 100}"))
                events.append(("enter", i, 0))
                if live and rng.random() < 0.35:
                    events.append(("depend", i, live[-1][0]))
                live.append([i, 0, 1, False])
        keep = []
        for entry in live:
            i, stage, left, stalled = entry
            entry[2] -= 1
            if entry[2] > 0:
                keep.append(entry)
                continue
            if stalled:
                events.append(("stall_end", i))
                entry[3] = False
            if stage == len(STAGES) - 1:
                if rng.random() < 0.03:
                    events.append(("flush", i))
                else:
                    events.append(("retire", i))
                continue
            entry[1] = stage + 1
            entry[2] = rng.choice([1, 1, 1, 3, 4]) if STAGES[entry[1]] == "X" else 1
            events.append(("enter", i, entry[1]))
            if STAGES[entry[1]] == "Is" and rng.random() < 0.12:
                events.append(("stall_begin", i))
                entry[3] = True
                entry[2] += 2
            keep.append(entry)
        live = keep
        events.append(("advance", 1))
    return events


def run_kanata_trace(events, path):
    """The same stream through kanata_trace.Writer. The writer mints op ids dense from 0 in
    the order of `begin`, which is the stream's numbering: the handle of instruction `i` is
    `i`, as the f-string writer writes `i`."""
    w = kt.Writer(path)
    stage = [w.stage(s) for s in STAGES]
    begin, label, enter, advance = w.begin, w.label, w.enter, w.advance
    retire, flush, depend, stall_begin, stall_end = w.retire, w.flush, w.depend, w.stall_begin, w.stall_end
    for ev in events:
        op = ev[0]
        if op == "enter":
            enter(ev[1], stage[ev[2]])
        elif op == "advance":
            advance(ev[1])
        elif op == "begin":
            begin(ev[2], 0)
        elif op == "label":
            label(ev[1], ev[2])
        elif op == "retire":
            retire(ev[1])
        elif op == "flush":
            flush(ev[1])
        elif op == "depend":
            depend(ev[1], ev[2])
        elif op == "stall_begin":
            stall_begin(ev[1])
        elif op == "stall_end":
            stall_end(ev[1])
    w.finish()


def run_fstrings(events, path):
    """What a testbench writes by hand: no checks, f-strings into a buffered file, the E of
    the open stage before each S, a cycle line when time moved."""
    with open(path, "w", buffering=1 << 17) as f:
        write = f.write
        write("Kanata\t0004\nC=\t0\n")
        open_stage = {}
        stall = set()
        retired = 0
        pending = 0
        for ev in events:
            op = ev[0]
            if op == "advance":
                pending += ev[1]
                continue
            if pending:
                write(f"C\t{pending}\n")
                pending = 0
            if op == "enter":
                i = ev[1]
                old = open_stage.get(i)
                if old is not None:
                    write(f"E\t{i}\t0\t{old}\n")
                name = STAGES[ev[2]]
                write(f"S\t{i}\t0\t{name}\n")
                open_stage[i] = name
            elif op == "begin":
                write(f"I\t{ev[1]}\t{ev[2]}\t0\n")
            elif op == "label":
                write(f"L\t{ev[1]}\t0\t{ev[2]}\n")
            elif op in ("retire", "flush"):
                i = ev[1]
                old = open_stage.pop(i, None)
                if old is not None:
                    write(f"E\t{i}\t0\t{old}\n")
                if op == "retire":
                    write(f"R\t{i}\t{retired}\t0\n")
                    retired += 1
                else:
                    write(f"R\t{i}\t0\t1\n")
            elif op == "depend":
                write(f"W\t{ev[1]}\t{ev[2]}\t0\n")
            elif op == "stall_begin":
                write(f"S\t{ev[1]}\t1\tstl\n")
                stall.add(ev[1])
            elif op == "stall_end":
                write(f"E\t{ev[1]}\t1\tstl\n")
                stall.discard(ev[1])
        if pending:
            write(f"C\t{pending}\n")


def timed(fn, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--insns", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writer-only", action="store_true")
    parser.add_argument("--trace", help="measure read() and table() of this canonical trace only")
    args = parser.parse_args()
    if args.trace:
        insns = sum(1 for line in open(args.trace, "rb") if line.startswith(b"I\t"))
        read_and_table(args.trace, insns, args.rounds)
        return
    tmp = tempfile.mkdtemp(prefix="kt-bench-")
    events = event_stream(min(args.insns, 200_000))
    print(f"writer: {len(events):,} events")
    kt_path, fs_path = os.path.join(tmp, "kt.kanata"), os.path.join(tmp, "fs.kanata")
    for _ in range(1):
        kt_med, kt_best = timed(lambda: run_kanata_trace(events, kt_path), args.rounds)
        fs_med, fs_best = timed(lambda: run_fstrings(events, fs_path), args.rounds)
    n = len(events)
    print(f"  kanata_trace.Writer  {kt_med / n * 1e9:7.1f} ns/event (best {kt_best / n * 1e9:.1f})")
    print(f"  f-string writer      {fs_med / n * 1e9:7.1f} ns/event (best {fs_best / n * 1e9:.1f})")
    print(f"  speed-up             {fs_med / kt_med:7.2f}x")
    # Both wrote the same trace (the f-string one is canonical for this stream too).
    assert open(kt_path, "rb").read() == open(fs_path, "rb").read(), "the two writers differ"
    if args.writer_only:
        return

    big = os.path.join(tmp, "big.kanata")
    events = event_stream(args.insns, seed=2)
    run_kanata_trace(events, big)
    del events
    read_and_table(big, args.insns, args.rounds)


def read_and_table(big, insns, rounds):
    """read() and table() of the canonical trace `big`, of `insns` instructions."""
    size = os.path.getsize(big)
    print(f"read/table: {insns:,} instructions, {size / 1e6:.0f} MB of canonical text")

    def read_only():
        for _ in kt.read(big):
            pass

    def read_stages():
        for insn in kt.read(big):
            insn.stages

    r_med, r_best = timed(read_only, rounds)
    print(f"  read()               {insns / r_med / 1e6:7.2f} M insns/s (best {insns / r_best / 1e6:.2f})")
    s_med, s_best = timed(read_stages, rounds)
    print(f"  read() + .stages     {insns / s_med / 1e6:7.2f} M insns/s (best {insns / s_best / 1e6:.2f})")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("  table(): pyarrow is not installed")
        return
    segments = kt.table(big).num_rows
    t_med, t_best = timed(lambda: kt.table(big), rounds)
    print(f"  table()              {segments / t_med / 1e6:7.2f} M segments/s (best {segments / t_best / 1e6:.2f}), {segments:,} segments")
    c_med, _ = timed(lambda: kt.stats(big), rounds)
    print(f"  for scale: stats()   {segments / c_med / 1e6:7.2f} M segments/s (the conversion alone)")


if __name__ == "__main__":
    main()
