"""The cocotb example end to end: core.v simulated under Icarus Verilog, the testbench's
monitor writing the trace through kanata_trace.Writer; the trace is canonical (kanata-pp
repairs nothing and gives the same bytes back, so Konata loads it with zero warnings) and
shows the pipeline as the RTL ran it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

import kanata_trace as kt
from conftest import ROOT

COCOTB_EXAMPLE = ROOT / "kanata-pp" / "python" / "examples" / "cocotb"


def test_the_cocotb_testbench_writes_a_canonical_trace_of_the_pipeline(tmp_path: Path, monkeypatch):
    if shutil.which("iverilog") is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs the cocotb example: install iverilog")
        pytest.skip("no Icarus Verilog (apt-get install iverilog)")
    pytest.importorskip("cocotb")
    sys.path.insert(0, str(COCOTB_EXAMPLE))
    import run

    trace = tmp_path / "core.kanata"
    monkeypatch.setenv("KANATA_CYCLES", "120")
    run.run(str(trace), str(tmp_path / "sim_build"))
    back = tmp_path / "back.kanata"
    report = kt.convert(trace, back)
    assert report.repairs == {}
    assert back.read_bytes() == trace.read_bytes()

    insns = list(kt.read(trace))
    retired = [i for i in insns if i.retired]
    flushed = [i for i in insns if i.flushed]
    assert len(retired) > 50 and flushed
    # Retired in program order: the next PC, or a taken branch's target (PC + 72).
    for before, after in zip(retired, retired[1:]):
        branch = (before.sim_id >> 2) & 0xF == 9
        assert after.sim_id == before.sim_id + (72 if branch else 4), (hex(before.sim_id), hex(after.sim_id))
        assert after.retire_id == before.retire_id + 1
    for i in retired:
        assert [s.name for s in i.stages if s.lane == 0] == ["F", "D", "X", "M", "W"]
        assert i.name == f"0x{i.sim_id:08x}"
        stalls = [s for s in i.stages if s.lane == 1]
        multi = (i.sim_id >> 2) & 0xF == 3
        assert bool(stalls) == multi
        if multi:
            x = next(s for s in i.stages if s.name == "X")
            assert (x.end - x.start, stalls[0].end - stalls[0].start) == (3, 2)
            assert x.notes == "multi-cycle"
    # A flushed instruction never reached X: it was in F or D behind a taken branch.
    for i in flushed:
        assert {s.name for s in i.stages} <= {"F", "D"}
