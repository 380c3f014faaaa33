"""Builds core.v with Icarus Verilog and runs the cocotb testbench (test_core.py), which
writes the trace: `python run.py [TRACE]` (default core.kanata)."""

import os
import sys
from pathlib import Path

from cocotb.runner import get_results, get_runner

HERE = Path(__file__).resolve().parent


def run(trace: str, build_dir: str) -> None:
    """Builds core.v into `build_dir`, runs test_core.py on it; the trace goes to `trace`."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    runner = get_runner("icarus")
    runner.build(sources=[HERE / "core.v"], hdl_toplevel="core", build_dir=build_dir, always=True)
    os.environ["KANATA_TRACE"] = str(Path(trace).resolve())
    # Under pytest cocotb names the results file itself (and refuses one given).
    named = {} if os.getenv("PYTEST_CURRENT_TEST") else {"results_xml": str(Path(build_dir) / "results.xml")}
    results = runner.test(
        hdl_toplevel="core",
        test_module="test_core",
        # The simulator runs (and cocotb writes its results) in the build directory; the
        # testbench module is found on sys.path, which the runner hands on.
        test_dir=build_dir,
        build_dir=build_dir,
        **named,
    )
    tests, failed = get_results(results)
    if tests == 0 or failed:
        raise RuntimeError(f"the cocotb testbench failed: {failed} of {tests} tests ({results})")


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "core.kanata"
    run(target, str(HERE / "sim_build"))
    print(f"wrote {target}")
