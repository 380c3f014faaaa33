"""Notebook-style analysis: the latency of each load from `X` to `Cm`, with pandas.

    python load_latency.py TRACE [--load-prefix lw]

Reads the trace (any input kanata-pp reads) as two pyarrow tables, one row per stage segment
and one per instruction, joins them in pandas and prints the distribution of the cycles from
a load's entry into `X` to its entry into `Cm`. Needs `pip install 'kanata-trace[arrow]'
pandas`.
"""

from __future__ import annotations

import argparse
import re

import pandas as pd

import kanata_trace as kt


def load_latencies(trace: str, mnemonic: str = r"\b(lw|ld|lb|lh|lbu|lhu|lwu|flw|fld)\b") -> pd.Series:
    """Cycles from `X` to `Cm` of every retired instruction whose name matches `mnemonic`,
    indexed by op id."""
    segments = kt.table(trace).to_pandas()
    insns = kt.table(trace, per="instruction").to_pandas()
    loads = insns[insns["retired"] & insns["name"].str.contains(mnemonic, regex=True)]
    main = segments[(segments["lane"] == 0) & segments["id"].isin(loads["id"])]
    # The first entry into each stage (a replayed stage keeps its first start).
    starts = main.groupby(["id", "stage"], observed=True)["start"].min().unstack("stage")
    latency = (starts["Cm"] - starts["X"]).dropna().astype("int64")
    latency.name = "X_to_Cm"
    return latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--mnemonic", default=r"\b(lw|ld|lb|lh|lbu|lhu|lwu|flw|fld)\b",
                        help="regular expression a load's name matches")
    args = parser.parse_args()
    latency = load_latencies(args.trace, args.mnemonic)
    print(f"{len(latency)} loads, X to Cm in cycles")
    print(latency.describe(percentiles=[0.5, 0.9, 0.99]).to_string())
    print("\ncycles  loads")
    print(latency.value_counts().sort_index().to_string())


if __name__ == "__main__":
    main()
