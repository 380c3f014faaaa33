"""kanata_trace.Writer: the bytes of the Rust writer, its misuse rules, every kind of output."""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import pytest

import kanata_trace as kt
from kanata_trace import _native
from konata_model import read_model

try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # pragma: no cover
    given = None


def play(w: kt.Writer, events):
    """Runs `events` (the tuples of _native._replay) on a Python writer; per event None or
    the WriterError's message."""
    outcomes = []
    for ev in events:
        op, args = ev[0], ev[1:]
        try:
            if op == "begin":
                w.begin(sim_id=args[0], thread=args[1])
            elif op == "label":
                w.label(args[0], args[2], kind=args[1])
            elif op == "enter":
                w.enter(args[0], w.stage(args[1]), lane=args[2])
            elif op == "leave":
                w.leave(args[0], lane=args[1])
            elif op == "depend":
                w.depend(args[0], args[1], kind=args[2])
            else:
                getattr(w, op)(*args)
            outcomes.append(None)
        except kt.WriterError as err:
            outcomes.append(str(err))
    return outcomes


def random_events(rng: random.Random, n: int):
    """A random stream of calls, misuse included (ids that ended, never began, younger
    producers, bad stage names, empty lanes)."""
    events = []
    begun = 0
    for _ in range(n):
        r = rng.random()
        insn = rng.randrange(begun + 2) if begun else 0
        if r < 0.15 or begun == 0:
            events.append(("begin", rng.randrange(1 << 40), rng.randrange(3)))
            begun += 1
        elif r < 0.35:
            events.append(("enter", insn, rng.choice(["F", "D", "X", "Cm", " bad", "a\tb"]), rng.randrange(3)))
        elif r < 0.45:
            events.append(("label", insn, rng.choice(["name", "detail", "note"]),
                           rng.choice(["lw a0, 0(sp)", "x\ny", "tab\there", "", "é"])))
        elif r < 0.55:
            events.append(("advance", rng.randrange(4)))
        elif r < 0.62:
            events.append(("retire", insn))
        elif r < 0.67:
            events.append(("flush", insn))
        elif r < 0.74:
            events.append(("stall_begin", insn))
        elif r < 0.80:
            events.append(("stall_end", insn))
        elif r < 0.87:
            events.append(("leave", insn, rng.randrange(3)))
        else:
            events.append(("depend", insn, rng.randrange(begun + 1), rng.randrange(3)))
    return events


def python_bytes(events, **kwargs):
    out = io.BytesIO()
    w = kt.Writer(out, **kwargs)
    outcomes = play(w, events)
    w.finish()
    return out.getvalue(), outcomes


def test_the_issue_example_writes_the_rust_writers_bytes(tmp_path: Path):
    path = tmp_path / "run.kanata.zst"
    with kt.Writer(path, background=True) as w:
        f, x = w.stage("F"), w.stage("X")
        i = w.begin(sim_id=0x80000000, thread=0)
        w.label(i, "0x80000000: lw a0, 0(sp)")
        w.enter(i, f)
        w.advance(1)
        w.enter(i, x)
        w.stall_begin(i); w.advance(3); w.stall_end(i)
        rid = w.retire(i)
    assert rid == 0
    summary = w.summary
    assert (summary.instructions, summary.retired, summary.last_cycle) == (1, 1, 4)
    expected, outcomes = _native._replay([
        ("begin", 0x80000000, 0), ("label", 0, "name", "0x80000000: lw a0, 0(sp)"),
        ("enter", 0, "F", 0), ("advance", 1), ("enter", 0, "X", 0), ("stall_begin", 0),
        ("advance", 3), ("stall_end", 0), ("retire", 0),
    ])
    assert outcomes == [None] * 9
    # Read back through kanata-pp (which reads zstd): the canonical text is the Rust one.
    report = kt.convert(path, tmp_path / "back.kanata")
    assert (tmp_path / "back.kanata").read_bytes() == expected
    assert report.repairs == {}


@pytest.mark.parametrize("seed", range(20))
def test_random_calls_give_the_rust_writers_bytes_and_errors(seed: int):
    events = random_events(random.Random(seed), 400)
    expected, rust_outcomes = _native._replay(events)
    got, outcomes = python_bytes(events)
    assert got == expected
    assert outcomes == rust_outcomes
    assert any(o is not None for o in outcomes), "the stream has misuse in it"


if given is not None:

    @settings(max_examples=60, deadline=None)
    @given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=300))
    def test_property_python_writer_equals_rust_writer(seed: int, n: int):
        events = random_events(random.Random(seed), n)
        expected, rust_outcomes = _native._replay(events)
        got, outcomes = python_bytes(events)
        assert (got, outcomes) == (expected, rust_outcomes)


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_outputs_hold_the_same_text(tmp_path: Path, background: bool, compression: str):
    events = random_events(random.Random(7), 30_000)
    expected, _ = _native._replay(events)
    # A file object, compressed or not, on a thread or not.
    out = io.BytesIO()
    w = kt.Writer(out, background, compression=compression)
    play(w, events)
    w.finish()
    suffix = {"none": "", "gzip": ".gz", "zstd": ".zst"}[compression]
    stream = tmp_path / f"stream.kanata{suffix}"
    stream.write_bytes(out.getvalue())
    # A path, compressed as its extension says.
    path = tmp_path / f"path.kanata{suffix}"
    with kt.Writer(path, background=background) as w:
        play(w, events)
    for written in (stream, path):
        if compression == "gzip":
            assert gzip.decompress(written.read_bytes()) == expected
        back = tmp_path / "back.kanata"
        kt.convert(written, back)
        assert back.read_bytes() == expected


def test_misuse_raises_writer_error_and_writes_nothing():
    out = io.BytesIO()
    w = kt.Writer(out)
    x = w.stage("X")
    a = w.begin(1, 0)
    w.enter(a, x)
    w.advance(2)
    b = w.begin(2, 0)
    assert issubclass(kt.WriterError, ValueError)
    misuse = [
        lambda: w.stage(""),
        lambda: w.stage("a\tb"),
        lambda: w.stage(" X"),
        lambda: w.set_cycle(1),               # time goes back
        lambda: w.depend(a, b),               # the producer is younger
        lambda: w.leave(b),                   # nothing open in lane 0
        lambda: w.label(b, "n", kind="note"),  # a note before any stage
        lambda: w.enter(a, 99),               # a stage handle it did not make
        lambda: w.retire(12345),              # an id it did not mint
    ]
    before = w.summary
    for call in misuse:
        with pytest.raises(kt.WriterError):
            call()
    w.retire(a)
    with pytest.raises(kt.WriterError, match="already retired"):
        w.label(a, "late")
    with pytest.raises(kt.WriterError):
        w.retire(a)
    with pytest.raises(ValueError):
        w.label(b, "x", kind="comment")
    assert w.summary.lines == before.lines + 2  # only the retirement's E and R
    w.finish()
    text = out.getvalue().decode()
    assert text == (
        "Kanata\t0004\nC=\t0\nI\t0\t1\t0\nS\t0\t0\tX\nC\t2\nI\t1\t2\t0\nE\t0\t0\tX\nR\t0\t0\t0\n"
    )
    with pytest.raises(kt.WriterError, match="finished"):
        w.begin(3, 0)


def test_written_trace_reads_back_as_written(tmp_path: Path):
    path = tmp_path / "t.kanata"
    with kt.Writer(path) as w:
        f, x, cm = w.stage("F"), w.stage("X"), w.stage("Cm")
        load = w.begin(sim_id=0x1000, thread=1)
        w.label(load, "0x1000: lw a0, 0(sp)")
        w.label(load, "a0 = 5\nline two", kind="detail")
        w.enter(load, f)
        w.advance()
        add = w.begin(sim_id=0x1004, thread=1)
        w.enter(add, "F")
        w.enter(load, x)
        w.label(load, "miss", kind="note")
        w.advance(3)
        w.enter(load, cm)
        w.stall_begin(add)
        w.depend(add, load)
        w.advance()
        assert w.retire(load) == 0
        w.stall_end(add)
        w.enter(add, x)
        w.advance()
        w.flush(add)
        w.advance()
        open_one = w.begin(sim_id=2**63 + 5, thread=-1)  # beyond i64, negative thread
        w.enter(open_one, f)
        w.advance(2)
    text = path.read_text()
    insns = list(kt.read(path))
    assert [i.id for i in insns] == [0, 1, 2]
    ld, ad, op = insns
    assert (ld.sim_id, ld.thread, ld.name, ld.detail) == (0x1000, 1, "0x1000: lw a0, 0(sp)", "a0 = 5\nline two")
    assert (ld.begin, ld.end, ld.retired, ld.flushed, ld.retire_id) == (0, 5, True, False, 0)
    assert [tuple(s) for s in ld.stages] == [(0, "F", 0, 1, ""), (0, "X", 1, 4, "miss"), (0, "Cm", 4, 5, "")]
    assert ld.stages[1] == kt.Stage(0, "X", 1, 4, "miss")
    assert (ad.retired, ad.flushed, ad.end, ad.deps) == (False, True, 6, [(0, 0)])
    assert [(s.lane, s.name) for s in ad.stages] == [(0, "F"), (1, "stl"), (0, "X")]
    assert (op.sim_id, op.thread, op.end, op.retire_id, op.stages[0].end) == (2**63 + 5, -1, None, None, None)
    model = read_model(text)
    assert [m.name for m in model] == [i.name for i in insns]


def test_untraced_instructions_outside_the_trace_window():
    out = io.BytesIO()
    with kt.Writer(out, skip_retired=2) as w:
        handles = []
        for n in range(4):
            i = w.begin(n)
            handles.append(i)
            w.enter(i, "X")
            w.label(i, f"insn {n}")
            w.advance()
            w.retire(i)
    text = out.getvalue().decode()
    insns = list(kt.read(_write(text)))
    assert [i.sim_id for i in insns] == [n for n, h in enumerate(handles) if h is not None]
    assert handles[:2] == [None, None]


def test_calls_on_an_untraced_handle_write_nothing():
    out = io.BytesIO()
    with kt.Writer(out, retired_limit=0) as w:
        i = w.begin(1)
        assert i is None and not w.is_tracing
        w.enter(i, "X")
        w.label(i, "nothing")
        assert w.retire(i) is None
    assert out.getvalue() == b"Kanata\t0004\nC=\t0\n"


def _write(text: str) -> Path:
    import tempfile

    fd, name = tempfile.mkstemp(suffix=".kanata")
    with open(fd, "w") as f:
        f.write(text)
    return Path(name)


def test_writer_options_reach_the_rust_builder():
    out = io.BytesIO()
    with kt.Writer(out, start_cycle=100, compact=True, live_at_end="flush") as w:
        i = w.begin(1)
        w.enter(i, "F")
        w.advance()
        w.enter(i, "X")
        w.advance()
    text = out.getvalue().decode()
    assert text.startswith("Kanata\t0004\nC=\t100\n")
    assert "E\t0\t0\tF" not in text  # compact: the E before the next S is implied
    assert text.rstrip().endswith("R\t0\t0\t1")
    assert w.summary.ended_at_finish == 1
    with pytest.raises(ValueError):
        kt.Writer(io.BytesIO(), live_at_end="sometimes")
    with pytest.raises(kt.WriterError):
        kt.Writer(io.BytesIO(), compression="zstd", level=99)


def test_a_file_object_gets_the_bytes_in_pieces_and_a_dropped_writer_ends_its_trace():
    class Recorder(io.RawIOBase):
        def __init__(self):
            self.pieces = []

        def writable(self):
            return True

        def write(self, b):
            self.pieces.append(bytes(b))
            return len(b)

    rec = Recorder()
    w = kt.Writer(rec)
    for n in range(60_000):
        i = w.begin(n)
        w.enter(i, "X")
        w.advance()
        w.retire(i)
    assert len(rec.pieces) >= 1  # handed over as it goes, not all at the end
    del w  # no finish(): the drop ends the trace, as in Rust
    text = b"".join(rec.pieces).decode()
    assert text.endswith("R\t59999\t59999\t0\n")
