"""kanata_trace.convert and kanata_trace.stats: the command line's bytes, reports and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kanata_trace as kt
from conftest import CORPUS, SAMPLES, corpus_files, run_cli


def without_seconds(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k != "seconds"}


def test_the_sloppy_sample_converts_to_the_shipped_canonical_file(tmp_path: Path):
    out = tmp_path / "sloppy.kanata"
    report = kt.convert(SAMPLES / "sloppy.log", out)
    assert out.read_bytes() == (SAMPLES / "sloppy.kanata").read_bytes()
    assert report.repairs["Q1"] == 3
    assert sum(report.repairs.values()) == report.repairs_total
    assert report.examples["Q1"][0] == (7, "padded number, white space or trailing empty field")
    assert (report.format, report.output, report.instructions) == ("kanata", out, 7)


@pytest.mark.parametrize(
    "options, flags",
    [
        ({}, []),
        ({"close_open": "flush", "renumber_retire": True}, ["--close-open", "flush", "--renumber-retire"]),
        ({"dedupe": True, "stretch_zero": True, "compact": True}, ["--dedupe", "--stretch-zero", "--compact"]),
        ({"cycles": (103, 108)}, ["--cycles", "103..108"]),
        ({"insns": (None, 3), "threads": [0]}, ["--insns", "..3", "--threads", "0"]),
        ({"compress": "gzip", "level": 9}, ["--compress", "gzip", "--level", "9"]),
    ],
)
def test_convert_writes_the_command_lines_bytes_and_report(cli: str, tmp_path: Path, options, flags):
    src = SAMPLES / "sloppy.log"
    suffix = ".kanata.gz" if options.get("compress") == "gzip" else ".kanata"
    py_out, cli_out = tmp_path / f"py{suffix}", tmp_path / f"cli{suffix}"
    report = kt.convert(src, py_out, **options)
    done = run_cli(cli, str(src), "-o", str(cli_out), "--report", "json", *flags)
    assert done.returncode == 0, done.stderr
    assert py_out.read_bytes() == cli_out.read_bytes()
    cli_report = json.loads(done.stdout.decode().splitlines()[0])
    mine = report.to_dict()
    for obj in (mine, cli_report):
        obj.pop("seconds")
        obj.pop("output")
    assert mine == cli_report


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_convert_of_the_corpus_equals_the_command_line(cli: str, tmp_path: Path, path: Path):
    py_out, cli_out = tmp_path / "py.kanata.zst", tmp_path / "cli.kanata.zst"
    kt.convert(path, py_out, seekable=True)
    done = run_cli(cli, str(path), "-o", str(cli_out), "--seekable", "-q")
    assert done.returncode == 0, done.stderr
    assert py_out.read_bytes() == cli_out.read_bytes()


def test_stats_are_the_command_lines(cli: str):
    for src in [SAMPLES / "sloppy.log", SAMPLES / "pipeline_sim.kanata", *corpus_files()[:6]]:
        done = run_cli(cli, str(src), "--stats", "--report", "json")
        assert done.returncode == 0, done.stderr
        expected = json.loads(done.stdout.decode().splitlines()[0])["stats"]
        assert kt.stats(src) == expected
    windowed = run_cli(cli, str(SAMPLES / "pipeline_sim.kanata"), "--stats", "--report", "json", "--cycles", "10..50")
    assert kt.stats(SAMPLES / "pipeline_sim.kanata", cycles=(10, 50)) == json.loads(windowed.stdout.decode().splitlines()[0])["stats"]


def test_check_writes_nothing_and_default_output_is_beside_the_input(tmp_path: Path):
    src = tmp_path / "run.log"
    src.write_bytes((SAMPLES / "sloppy.log").read_bytes())
    report = kt.convert(src, check=True)
    assert report.output is None and report.bytes_out == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.log"]
    report = kt.convert(src, compress="zstd")
    assert report.output == tmp_path / "run.kanata.zst"
    assert (tmp_path / "run.kanata.zst").is_file()


def bad_trace(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.kanata"
    bad.write_text("Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t-1\n")
    return bad


def test_a_failed_conversion_raises_conversion_error_with_path_and_line(tmp_path: Path):
    bad = bad_trace(tmp_path)
    out = tmp_path / "out.kanata"
    with pytest.raises(kt.ConversionError) as caught:
        kt.convert(bad, out, strict=True)
    err = caught.value
    assert (err.path, err.line) == (str(bad), 4)
    assert err.kind in ("input", "strict")
    assert str(err).startswith(f"{bad}:4: ")
    assert not out.exists(), "a failed conversion leaves no file"
    with pytest.raises(kt.ConversionError) as caught:
        kt.convert(tmp_path / "missing.log", out)
    assert caught.value.path == str(tmp_path / "missing.log")
    assert caught.value.line is None and caught.value.kind == "io"
    not_a_trace = tmp_path / "x.txt"
    not_a_trace.write_text("hello\n")
    with pytest.raises(kt.ConversionError):
        kt.convert(not_a_trace, check=True)


def test_options_are_checked_as_on_the_command_line(tmp_path: Path):
    src = SAMPLES / "sloppy.log"
    with pytest.raises(ValueError, match="5..1"):
        kt.convert(src, check=True, cycles=(5, 1))
    with pytest.raises(ValueError):
        kt.convert(src, tmp_path / "x.kanata", seekable=True)  # seekable needs zstd
    with pytest.raises(ValueError):
        kt.convert(src, check=True, close_open="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword"):
        kt.convert(src, check=True, colour=True)
    with pytest.raises(TypeError):
        kt.convert(src, check=True, cycles=object())
    assert kt.convert(src, check=True, cycles="103..1.08k").window is not None
    assert set(kt.OPTIONS) >= {"cycles", "insns", "threads", "strict", "from_", "close_open"}


def test_verbose_and_max_examples():
    src = SAMPLES / "sloppy.log"
    assert len(kt.convert(src, check=True).examples["Q3"]) == 5
    assert len(kt.convert(src, check=True, verbose=True).examples["Q3"]) == 36
    assert len(kt.convert(src, check=True, max_examples=1).examples["Q3"]) == 1


def test_gem5_and_rsd_inputs(tmp_path: Path):
    report = kt.convert(SAMPLES / "rsd_raw.log", tmp_path / "r.kanata")
    assert report.format == "rsd"
    if CORPUS.is_dir():
        gem5 = next(p for p in corpus_files() if p.parent.name == "gem5" and p.suffix == ".out")
        assert kt.convert(gem5, check=True, from_="gem5").format == "gem5"
