"""Shared fixtures: the repository's samples and corpus, and the kanata-pp command line."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "samples"
CORPUS = ROOT.parent / "shared" / "corpus"


def corpus_files() -> List[Path]:
    """Every trace of ../shared/corpus (empty when it is not there)."""
    if not CORPUS.is_dir():
        return []
    return sorted(
        p for p in CORPUS.rglob("*") if p.is_file() and p.suffix != ".md"
    )


def _find_cli() -> str | None:
    given = os.environ.get("KANATA_PP")
    if given:
        return given
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "kanata-pp"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("kanata-pp")


@pytest.fixture(scope="session")
def cli() -> str:
    """The kanata-pp binary (KANATA_PP, else target/{release,debug}/kanata-pp, else PATH).

    CI builds it (`cargo test --workspace`) and sets KANATA_PP; elsewhere the tests that
    compare with the command line are skipped without one."""
    found = _find_cli()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs these tests against kanata-pp: set KANATA_PP")
        pytest.skip("no kanata-pp binary: cargo build -p kanata-pp, or set KANATA_PP")
    return found


def run_cli(cli: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [cli, "--no-progress", *args], capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
