"""Convert a folder of traces and gather their statistics into one table, on Dask.

    python dask_sweep.py TRACES_DIR OUT_DIR [--scheduler tcp://host:8786] [--workers 4]

Conversion and statistics are a pure function of one file, so each trace is one task:
`kt.convert` writes `OUT_DIR/<name>.kanata.zst` and `kt.stats` reads its statistics. The
results come back as one row per trace (a failed conversion is a row with its error), a
pandas DataFrame written to `OUT_DIR/stats.csv`. Without `--scheduler` a `LocalCluster` of
worker processes on this machine runs it; with one, the same code runs on that cluster (its
workers need `kanata-trace` installed and the paths visible). Needs
`pip install kanata-trace "dask[distributed]" pandas`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import kanata_trace as kt


def convert_one(src: str, out_dir: str) -> Dict[str, Any]:
    """One task: convert `src` into OUT_DIR and return one row of statistics."""
    name = Path(src).name.split(".")[0]
    dst = os.path.join(out_dir, f"{name}.kanata.zst")
    row: Dict[str, Any] = {"input": src, "output": dst, "status": "ok", "error": None}
    try:
        report = kt.convert(src, dst, stats=True)
    except kt.ConversionError as err:
        row.update(status="failed", error=str(err), output=None)
        return row
    stats = report.stats or {}
    row.update(
        format=report.format,
        repairs=report.repairs_total,
        instructions=stats.get("instructions"),
        retired=stats.get("retired"),
        flushed=stats.get("flushed"),
        flush_rate=stats.get("flush_rate"),
        cycles=stats.get("cycles"),
        ipc=stats.get("ipc"),
    )
    for stage in stats.get("stages", []):
        if stage["lane"] == 0:
            row[f"mean_{stage['stage']}"] = stage["mean"]
    return row


def sweep(traces: List[str], out_dir: str, client) -> "pandas.DataFrame":  # noqa: F821
    """Runs `convert_one` over `traces` on the Dask `client`; one row per trace, in order."""
    import pandas as pd

    os.makedirs(out_dir, exist_ok=True)
    futures = client.map(convert_one, traces, out_dir=out_dir, pure=False)
    return pd.DataFrame(client.gather(futures))


def main(argv: Optional[List[str]] = None) -> None:
    from dask.distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--scheduler", help="a running cluster's scheduler address")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    traces = sorted(str(p) for p in Path(args.traces_dir).iterdir() if p.is_file())
    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
        client = Client(cluster)
    with client:
        table = sweep(traces, args.out_dir, client)
    table.to_csv(os.path.join(args.out_dir, "stats.csv"), index=False)
    print(table.to_string())


if __name__ == "__main__":
    main()
