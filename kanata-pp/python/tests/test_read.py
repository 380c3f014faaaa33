"""kanata_trace.read: Konata's view of every input, windows as the command line cuts them,
streaming, errors."""

from __future__ import annotations

import itertools
import types
from pathlib import Path

import pytest

import kanata_trace as kt
from conftest import SAMPLES, corpus_files, run_cli
from konata_model import as_model, comparable, read_model

INPUTS = [SAMPLES / "sloppy.log", SAMPLES / "pipeline_sim.kanata", SAMPLES / "rsd_raw.log", *corpus_files()]


def check_against_model(insns, canonical_text: str):
    model = read_model(canonical_text)
    assert [comparable(as_model(i)) for i in insns] == [comparable(m) for m in model]
    for insn, m in zip(insns, model):
        # Konata puts a line break between two notes of a stage, then turns `\n` escapes into
        # line breaks.
        assert [s.notes for s in insn.stages] == ["\n".join(s.notes).replace("\\n", "\n") for s in m.stages]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_read_is_konatas_view_of_the_canonical_conversion(tmp_path: Path, path: Path):
    canonical = tmp_path / "c.kanata"
    kt.convert(path, canonical)
    insns = list(kt.read(path))
    check_against_model(insns, canonical.read_text())
    # Read from the canonical file, compressed or seekable: the same instructions.
    seekable = tmp_path / "c.kanata.zst"
    kt.convert(canonical, seekable, seekable=True, frame_size="4k")
    assert list(kt.read(seekable)) == insns


WINDOWS = [
    {"cycles": (103, 108)},
    {"insns": (2, 5)},
    {"threads": 0},
    {"cycles": (None, 104), "threads": [0]},
]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("path", [SAMPLES / "sloppy.log", SAMPLES / "pipeline_sim.kanata"], ids=lambda p: p.name)
def test_a_window_is_the_command_lines_window(cli: str, tmp_path: Path, path: Path, window: dict):
    flags = []
    for key, value in window.items():
        if isinstance(value, tuple):
            value = f"{'' if value[0] is None else value[0]}..{'' if value[1] is None else value[1]}"
        elif isinstance(value, list):
            value = ",".join(map(str, value))
        flags += [f"--{key}", str(value)]
    out = tmp_path / "w.kanata"
    done = run_cli(cli, str(path), "-o", str(out), "-q", *flags)
    assert done.returncode == 0, done.stderr
    got = list(kt.read(path, **window))
    check_against_model(got, out.read_text())
    assert got == list(kt.read(out))


def test_a_big_window_through_the_seekable_index(tmp_path: Path):
    # 200k instructions, seekable; a window from the middle is read through the index.
    big = tmp_path / "big.kanata.zst"
    with kt.Writer(big, background=True) as w:
        x = w.stage("X")
        for n in range(200_000):
            i = w.begin(n)
            w.enter(i, x)
            w.advance()
            w.retire(i)
    seekable = tmp_path / "big.seek.kanata.zst"
    kt.convert(big, seekable, seekable=True)
    reader = kt.read(seekable, cycles=(150_000, 150_010))
    got = list(reader)
    # Instruction n lives in cycles [n, n + 1]: kept when it ends at 150,000 or later.
    assert [i.sim_id for i in got] == list(range(149_999, 150_010))
    assert reader.report is not None and reader.report.window["indexed"]


def test_read_streams_and_stops_early(tmp_path: Path):
    path = tmp_path / "long.kanata"
    with kt.Writer(path) as w:
        for n in range(100_000):
            i = w.begin(n)
            w.enter(i, "X")
            w.advance()
            w.retire(i)
    reader = kt.read(path)
    assert not isinstance(reader, (list, tuple)) and iter(reader) is reader
    first = list(itertools.islice(reader, 3))
    assert [i.id for i in first] == [0, 1, 2]
    assert reader.report is None  # not read to the end
    reader.close()
    assert list(reader) == []
    with kt.read(path, insns=(10, 12)) as r:
        assert [i.id for i in r] == [0, 1]  # renumbered from 0 within the window
        assert r.report.instructions == 2


def test_errors_come_out_of_the_iteration_with_path_and_line(tmp_path: Path):
    bad = tmp_path / "bad.kanata"
    bad.write_text("Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t-1\n")
    reader = kt.read(bad, strict=True)
    with pytest.raises(kt.ConversionError) as caught:
        list(reader)
    assert (caught.value.path, caught.value.line) == (str(bad), 4)
    with pytest.raises(kt.ConversionError):
        list(kt.read(tmp_path / "missing.kanata"))
    with pytest.raises(ValueError):
        kt.read(bad, cycles=(3, 1))


def test_instruction_fields_and_helpers():
    insn = next(iter(kt.read(SAMPLES / "pipeline_sim.kanata")))
    d = insn.to_dict()
    assert set(d) == {"id", "sim_id", "thread", "name", "detail", "begin", "end", "retired",
                      "flushed", "retire_id", "stages", "deps"}
    lane, name, start, end, notes = insn.stages[0]
    assert (lane, name, start, end, notes) == tuple(insn.stages[0])
    assert insn.stages[0] == (lane, name, start, end, notes)
    assert "Instruction(id=0" in repr(insn)
    assert isinstance(kt.read, types.BuiltinFunctionType)
