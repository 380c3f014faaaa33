"""Write, convert, read and analyse Kanata pipeline traces (the format the Konata viewer draws).

The Python face of the kanata project's two Rust crates: ``kanata-writer`` (the typed writer
that cannot write an invalid trace) and ``kanata-pp`` (the converter of sloppy Kanata, gem5
O3PipeView and RSD logs into canonical Kanata, with windows, statistics and seekable files).
Nothing is implemented twice: every function here calls the Rust code.

>>> import kanata_trace as kt
>>> with kt.Writer("run.kanata.zst") as w:            # doctest: +SKIP
...     f, x = w.stage("F"), w.stage("X")
...     i = w.begin(sim_id=0x80000000, thread=0)
...     w.label(i, "0x80000000: lw a0, 0(sp)")
...     w.enter(i, f); w.advance(1); w.enter(i, x); w.advance(1)
...     rid = w.retire(i)
>>> for insn in kt.read("run.kanata.zst", cycles=(0, 100)):   # doctest: +SKIP
...     print(insn.id, insn.name, [s.name for s in insn.stages])

See docs/python.md in the repository for the whole guide.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Union

from ._native import (
    OPTIONS,
    ConversionError,
    Instruction,
    Reader,
    Report,
    Stage,
    Summary,
    Writer,
    WriterError,
    __version__,
    convert,
    read,
    stats,
)
from . import _native

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

__all__ = [
    "OPTIONS",
    "ConversionError",
    "Instruction",
    "Reader",
    "Report",
    "Stage",
    "Summary",
    "Writer",
    "WriterError",
    "__version__",
    "columns",
    "convert",
    "read",
    "stats",
    "table",
]

PathLike = Union[str, "os.PathLike[str]"]

_PER = ("segment", "instruction", "dependency")


def columns(src: PathLike, per: str = "segment", **options: Any) -> Dict[str, List[Any]]:
    """The trace as a dict of equal-length lists, one row per stage segment (``per="segment"``),
    instruction (``per="instruction"``) or dependency arrow (``per="dependency"``), with no
    dependency on pyarrow: ``pandas.DataFrame(columns(...))`` and ``polars.DataFrame(...)`` take
    it as it is. The columns are those of ``table()``; nulls are ``None``. The options are
    ``read()``'s (windows, repairs, format)."""
    return _native.columns(src, per, False, **options)


def _buffer(pa: Any, held: Any) -> Any:
    """A pyarrow buffer over memory the native side hands over as (address, size, owner),
    without a copy; the buffer keeps the owner alive."""
    if held is None:
        return None
    address, size, owner = held
    return pa.foreign_buffer(address, size, base=owner)


def table(src: PathLike, per: str = "segment", **options: Any) -> "pyarrow.Table":
    """The trace as a ``pyarrow.Table`` (needs pyarrow: ``pip install kanata-trace[arrow]``).

    ``per="segment"`` (the default): one row per stage segment, columns ``id`` (op id),
    ``thread``, ``lane``, ``stage`` (dictionary-encoded name), ``start``, ``end`` (Konata's
    cycles; null while still open at the end) and ``notes``.

    ``per="instruction"``: one row per instruction, columns ``id``, ``sim_id``, ``thread``,
    ``name``, ``detail``, ``begin``, ``end`` (null in flight), ``retired``, ``flushed``,
    ``retire_id`` (null without ``R``) and ``stages`` (how many segments).

    ``per="dependency"``: ``consumer``, ``producer`` and ``kind``.

    The columns are built in Rust into Arrow's own buffer layout and handed to pyarrow
    without a copy per value; pandas (``.to_pandas()``), polars (``polars.from_arrow``) and
    DuckDB (``duckdb.sql("select ... from tbl")``) take the table as it is. The options are
    ``read()``'s (windows ``cycles=``, ``insns=``, ``threads=``, repairs, format)."""
    try:
        import pyarrow as pa
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "kanata_trace.table needs pyarrow: pip install 'kanata-trace[arrow]' "
            "(or use kanata_trace.columns, which needs nothing)"
        ) from err
    raw = _native.columns(src, per, True, **options)
    names = []
    arrays = []
    for name, (kind, n, first, second, nulls) in raw.items():
        if kind == "int64":
            validity = _buffer(pa, second)
            array = pa.Array.from_buffers(
                pa.int64(), n, [validity, _buffer(pa, first)], null_count=nulls
            )
        elif kind == "bool":
            array = pa.Array.from_buffers(pa.bool_(), n, [None, _buffer(pa, first)])
        elif kind == "large_string":
            array = pa.Array.from_buffers(
                pa.large_string(), n, [None, _buffer(pa, first), _buffer(pa, second)]
            )
        elif kind == "dictionary":
            codes = pa.Array.from_buffers(pa.int32(), n, [None, _buffer(pa, first)])
            array = pa.DictionaryArray.from_arrays(codes, pa.array(second, pa.string()))
        else:  # pragma: no cover - the native side makes only these
            raise AssertionError(kind)
        names.append(name)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=names)
