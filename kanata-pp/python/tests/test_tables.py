"""table() and columns(): the same rows as read(), in pyarrow and in plain lists; and the
examples (the load-latency script, the Dask sweep on a LocalCluster of worker processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kanata_trace as kt
from conftest import ROOT, SAMPLES, corpus_files

EXAMPLES = ROOT / "kanata-pp" / "python" / "examples"
sys.path.insert(0, str(EXAMPLES))


def expected_rows(path, per, **options):
    rows = []
    for i in kt.read(path, **options):
        if per == "segment":
            rows += [(i.id, i.thread, s.lane, s.name, s.start, s.end, s.notes) for s in i.stages]
        elif per == "instruction":
            rows.append((i.id, i.sim_id, i.thread, i.name, i.detail, i.begin, i.end, i.retired,
                         i.flushed, i.retire_id, len(i.stages)))
        else:
            rows += [(i.id, p, k) for p, k in i.deps]
    return rows


@pytest.mark.parametrize("per", ["segment", "instruction", "dependency"])
@pytest.mark.parametrize("path", [SAMPLES / "sloppy.log", SAMPLES / "pipeline_sim.kanata", *corpus_files()[:4]],
                         ids=lambda p: getattr(p, "name", p))
def test_columns_hold_the_rows_of_read(path: Path, per: str):
    cols = kt.columns(path, per)
    rows = list(zip(*cols.values()))
    assert rows == expected_rows(path, per)


@pytest.mark.parametrize("per", ["segment", "instruction", "dependency"])
def test_table_equals_columns(per: str):
    pa = pytest.importorskip("pyarrow")
    path = SAMPLES / "sloppy.log"  # in-flight instructions and open stages: nulls
    table = kt.table(path, per, cycles=(100, 110))
    assert isinstance(table, pa.Table)
    assert table.to_pydict() == kt.columns(path, per, cycles=(100, 110))
    if per == "segment":
        assert pa.types.is_dictionary(table.schema.field("stage").type)
        assert table.column("end").null_count == sum(1 for r in expected_rows(path, per) if r[5] is None)


def test_table_of_nothing_and_bad_per(tmp_path: Path):
    pytest.importorskip("pyarrow")
    empty = tmp_path / "empty.kanata"
    empty.write_text("Kanata\t0004\nC=\t0\n")
    assert kt.table(empty).num_rows == 0
    assert kt.table(empty, "instruction").num_rows == 0
    with pytest.raises(ValueError):
        kt.columns(empty, "cycle")


def test_load_latency_example(tmp_path: Path):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import load_latency

    path = tmp_path / "loads.kanata"
    # Loads with known latencies from X to Cm: 1, 3, 3 and 5 cycles; an add that is not one.
    with kt.Writer(path) as w:
        x, cm = w.stage("X"), w.stage("Cm")
        for n, (text, lat) in enumerate([("lw a0, 0(sp)", 1), ("add a1, a0, a0", 2),
                                        ("lw a2, 4(sp)", 3), ("ld a3, 8(sp)", 3), ("lw a4, 0(a3)", 5)]):
            i = w.begin(n)
            w.label(i, f"0x{0x1000 + 4 * n:x}: {text}")
            w.enter(i, x)
            w.advance(lat)
            w.enter(i, cm)
            w.advance()
            w.retire(i)
    latency = load_latency.load_latencies(str(path))
    assert latency.to_dict() == {0: 1, 2: 3, 3: 3, 4: 5}
    done = subprocess.run([sys.executable, str(EXAMPLES / "load_latency.py"), str(path)],
                          capture_output=True, text=True, check=True)
    assert "4 loads" in done.stdout


def test_dask_sweep_on_a_local_cluster_of_processes(tmp_path: Path):
    distributed = pytest.importorskip("dask.distributed")
    pytest.importorskip("pandas")
    import dask_sweep

    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("sloppy.log", "pipeline_sim.kanata", "rsd_raw.log"):
        (traces / name).write_bytes((SAMPLES / name).read_bytes())
    (traces / "broken.log").write_text("Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t-1\n")
    out = tmp_path / "out"
    files = sorted(str(p) for p in traces.iterdir())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        table = dask_sweep.sweep(files, str(out), client)
    assert list(table["input"]) == files
    by_name = {Path(r["input"]).name: r for r in table.to_dict("records")}
    assert by_name["broken.log"]["status"] == "failed" and "broken.log:4" in by_name["broken.log"]["error"]
    for name in ("sloppy.log", "pipeline_sim.kanata", "rsd_raw.log"):
        row = by_name[name]
        assert row["status"] == "ok"
        # The same numbers as a conversion in this process.
        assert row["instructions"] == kt.stats(traces / name)["instructions"]
        assert Path(row["output"]).is_file()


@pytest.mark.parametrize("suffix", [".kanata", ".kanata.zst"])
def test_segments_of_a_canonical_file_read_directly(tmp_path: Path, suffix: str):
    # table() reads a whole canonical file straight into columns (kanata_pp::trace::
    # segment_columns): the rows must still be read()'s, with notes, open stages (nulls),
    # several lanes and threads, and the stage dictionary in the order rows first name them.
    pa = pytest.importorskip("pyarrow")
    path = tmp_path / f"direct{suffix}"
    with kt.Writer(str(path)) as w:
        f, x, c = w.stage("F"), w.stage("X"), w.stage("Cm")
        insns = []
        for n in range(40):
            i = w.begin(sim_id=n, thread=n % 3)
            w.label(i, f"0x{n:x}: op")
            w.enter(i, x if n % 2 else f)
            if n % 5 == 0:
                w.label(i, "line\\nbreak", kind="note")
                w.label(i, "second", kind="note")
            if n % 7 == 0:
                w.stall_begin(i)
            insns.append(i)
            w.advance(1)
            for j in insns[-3:-1]:
                w.enter(j, c)
            if len(insns) > 4:
                old = insns.pop(0)
                if n % 4 == 0:
                    w.flush(old)
                else:
                    w.retire(old)
    expected = expected_rows(path, "segment")
    assert any(r[5] is None for r in expected) and any(r[6] for r in expected)
    assert any(r[2] == 1 for r in expected)
    cols = kt.columns(path, "segment")
    assert list(zip(*cols.values())) == expected
    table = kt.table(path, "segment")
    assert table.to_pydict() == cols
    assert table.column("end").null_count == sum(1 for r in expected if r[5] is None)
    assert table.column("stage").chunk(0).dictionary.to_pylist() == list(dict.fromkeys(r[3] for r in expected))


def test_a_log_that_only_starts_canonical_is_converted(tmp_path: Path):
    # The direct path gives up at the first line that is not canonical; the rows are the
    # conversion's, as read() gives them.
    path = tmp_path / "late.kanata"
    path.write_text("Kanata\t0004\nC=\t0\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\n"
                    "S  0  0  X\nR\t0\t0\t0\n")
    expected = expected_rows(path, "segment")
    assert [r[3] for r in expected] == ["F", "X"]
    assert list(zip(*kt.columns(path, "segment").values())) == expected
