"""Type stubs of kanata_trace._native, the Rust half of kanata_trace (use kanata_trace)."""

import os
from types import TracebackType
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Tuple, Type, Union

from typing_extensions import Literal, Self, TypedDict

PathLike = Union[str, os.PathLike[str]]
#: A window bound: ``(start, end)`` with either end ``None``, ``range(a, b)``, or kanata-pp's
#: text ``"12M..12.01M"``.
Range = Union[Tuple[Optional[Union[int, str]], Optional[Union[int, str]]], range, str]
Threads = Union[int, Sequence[int], str]

__version__: str
#: The keyword options of convert(), read(), stats(), table() and columns(): kanata-pp's
#: command-line options (``--close-open`` is ``close_open``, ``--from`` is ``from_``), and
#: ``max_examples``.
OPTIONS: List[str]

class WriterError(ValueError):
    """A Writer call that would make the trace invalid; nothing was written."""

class ConversionError(Exception):
    """A trace that does not convert: the file and the 1-based line it is about."""

    path: Optional[str]
    line: Optional[int]
    kind: Literal["input", "io", "strict"]
    message: str

class Summary:
    """What a finished trace holds."""

    instructions: int
    retired: int
    flushed: int
    left_open: int
    ended_at_finish: int
    first_cycle: int
    last_cycle: int
    text_bytes: int
    lines: int

Insn = Optional[int]
StageHandle = Union[int, str]

class Writer:
    """The typed writer of kanata-writer: every call is checked, the trace is always valid."""

    def __init__(
        self,
        output: Union[PathLike, BinaryIO, Any],
        background: bool = False,
        *,
        compression: Optional[Literal["none", "gzip", "zstd"]] = None,
        level: Optional[int] = None,
        start_cycle: int = 0,
        compact: bool = False,
        live_at_end: Literal["open", "flush", "retire"] = "open",
        late_labels: Optional[int] = None,
        skip_retired: Optional[int] = None,
        retired_limit: Optional[int] = None,
        trace_cycles: Optional[Tuple[int, int]] = None,
    ) -> None: ...
    def stage(self, name: str) -> int:
        """Checks and interns a stage name; returns the handle enter() takes."""
    def stage_name(self, stage: int) -> Optional[str]:
        """The name of a stage handle."""
    def begin(self, sim_id: int, thread: int = 0) -> Optional[int]:
        """Begins an instruction (``I``); its op id, or None outside the trace window."""
    def label(
        self, insn: Insn, text: str, kind: Literal["name", "detail", "note"] = "name"
    ) -> None:
        """Appends text to a label (``L``)."""
    def enter(self, insn: Insn, stage: StageHandle, lane: int = 0) -> None:
        """Enters a stage in a lane (``S``), closing the lane's open stage."""
    def leave(self, insn: Insn, lane: int = 0) -> None:
        """Leaves the lane's open stage (``E``)."""
    def stall_begin(self, insn: Insn) -> None:
        """Enters ``stl`` in lane 1."""
    def stall_end(self, insn: Insn) -> None:
        """Leaves the stage open in lane 1."""
    def retire(self, insn: Insn) -> Optional[int]:
        """Retires (``R … 0``); returns the retire id."""
    def flush(self, insn: Insn) -> None:
        """Flushes (``R … 1``)."""
    def retire_as(self, insn: Insn, retire_id: int) -> None:
        """Retires with the given retire id."""
    def flush_as(self, insn: Insn, retire_id: int) -> None:
        """Flushes with the given retire id."""
    def depend(self, consumer: Insn, producer: Insn, kind: int = 0) -> None:
        """A dependency arrow (``W``) from an older producer."""
    def advance(self, cycles: int = 1) -> None:
        """Moves time forward."""
    def set_cycle(self, cycle: int) -> None:
        """Moves time to an absolute cycle, never back."""
    @property
    def cycle(self) -> int:
        """The current cycle."""
    @property
    def is_tracing(self) -> bool:
        """Whether instructions that begin now are traced."""
    def is_live(self, insn: Insn) -> bool:
        """Whether the instruction is begun and not yet retired or flushed."""
    @property
    def summary(self) -> Summary:
        """What has been written (after finish(): what it returned)."""
    @property
    def finished(self) -> bool:
        """Whether finish() was called."""
    def flush_output(self) -> None:
        """Hands the bytes gathered so far to the file object."""
    def finish(self) -> Summary:
        """Ends the trace and returns its Summary."""
    def close(self) -> Summary:
        """finish()."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

class Stage:
    """One stay in a stage: Stage(lane, name, start, end, notes); unpacks like a tuple."""

    lane: int
    name: str
    start: int
    end: Optional[int]
    notes: str
    def __init__(
        self, lane: int, name: str, start: int, end: Optional[int] = None, notes: str = ""
    ) -> None: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Any: ...

class Instruction:
    """One instruction, as Konata shows it."""

    @property
    def id(self) -> int: ...
    @property
    def sim_id(self) -> int: ...
    @property
    def thread(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def begin(self) -> int: ...
    @property
    def end(self) -> Optional[int]: ...
    @property
    def retired(self) -> bool: ...
    @property
    def flushed(self) -> bool: ...
    @property
    def retire_id(self) -> Optional[int]: ...
    @property
    def stages(self) -> List[Stage]: ...
    @property
    def deps(self) -> List[Tuple[int, int]]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class WindowReport(TypedDict):
    instructions_read: int
    stopped_early: bool
    indexed: bool

class Report:
    """What a conversion did; to_dict() is kanata-pp's --report json object."""

    @property
    def input(self) -> str: ...
    @property
    def output(self) -> Optional[os.PathLike[str]]: ...
    @property
    def format(self) -> Literal["kanata", "gem5", "rsd"]: ...
    @property
    def input_compression(self) -> str: ...
    @property
    def output_compression(self) -> str: ...
    @property
    def instructions(self) -> int: ...
    @property
    def retired(self) -> int: ...
    @property
    def flushed(self) -> int: ...
    @property
    def open(self) -> int: ...
    @property
    def first_cycle(self) -> int: ...
    @property
    def last_cycle(self) -> int: ...
    @property
    def repairs(self) -> Dict[str, int]: ...
    @property
    def repairs_total(self) -> int: ...
    @property
    def examples(self) -> Dict[str, List[Tuple[int, str]]]: ...
    @property
    def bytes_in(self) -> int: ...
    @property
    def bytes_out(self) -> int: ...
    @property
    def lines_in(self) -> int: ...
    @property
    def lines_out(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def window(self) -> Optional[WindowReport]: ...
    @property
    def stats(self) -> Optional[Dict[str, Any]]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_json(self) -> str: ...

class Reader(Iterator[Instruction]):
    """The instructions of a window, streamed."""

    def __iter__(self) -> Self: ...
    def __next__(self) -> Instruction: ...
    @property
    def report(self) -> Optional[Report]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]] = None,
        exc: Optional[BaseException] = None,
        tb: Optional[TracebackType] = None,
    ) -> bool: ...

def convert(
    src: PathLike,
    dst: Optional[PathLike] = None,
    *,
    check: bool = False,
    from_: Optional[Literal["kanata", "gem5", "rsd"]] = None,
    compress: Optional[Literal["none", "gzip", "zstd"]] = None,
    level: Optional[int] = None,
    stats: bool = False,
    strict: bool = False,
    verbose: bool = False,
    max_examples: Optional[int] = None,
    late_window: Optional[int] = None,
    renumber_retire: bool = False,
    close_open: Optional[Literal["flush", "retire"]] = None,
    dedupe: bool = False,
    stretch_zero: bool = False,
    strip_prefix: Optional[str] = None,
    window: Optional[int] = None,
    ticks_per_cycle: Optional[int] = None,
    deps: bool = False,
    rsd_disasm: Optional[Literal["head", "2021"]] = None,
    compact: bool = False,
    seekable: bool = False,
    no_seekable: bool = False,
    frame_size: Optional[Union[int, str]] = None,
    no_index: bool = False,
    cycles: Optional[Range] = None,
    sim_cycles: Optional[Range] = None,
    insns: Optional[Range] = None,
    threads: Optional[Threads] = None,
) -> Report:
    """Converts src into the canonical Kanata file dst (kanata-pp's options as keywords)."""

def read(
    path: PathLike,
    *,
    cycles: Optional[Range] = None,
    sim_cycles: Optional[Range] = None,
    insns: Optional[Range] = None,
    threads: Optional[Threads] = None,
    **options: Any,
) -> Reader:
    """Streams the instructions of a window of any trace kanata-pp reads."""

def stats(src: PathLike, **options: Any) -> Dict[str, Any]:
    """The statistics of kanata-pp --stats --report json, as a dict."""

def columns(src: PathLike, per: str = "segment", arrow: bool = False, **options: Any) -> Dict[str, Any]:
    """The columns of table() and columns(); use those."""
