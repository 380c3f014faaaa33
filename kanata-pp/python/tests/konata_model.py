"""What Konata shows for a canonical Kanata file, read the way Konata's parser reads it.

An independent reading of the text (Konata's `OnikiriParser`, as `tests/src/konata_model.rs`
describes it, restricted to canonical input, which kanata-pp writes): the tests compare
`kanata_trace.read` with it. Per instruction: the file id, simulator id, thread, labels
(`\\n` unescaped, as Konata's `unescapeLabels_` does), stages per lane with the cycles they
are drawn over (a stage open at `R` ends there; one open at the end of the file is `None`,
which Konata draws up to the last cycle), the `R`'s cycle, retire id and type, and the `W`
arrows into it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


@dataclass
class ModelStage:
    lane: int
    name: str
    start: int
    end: Optional[int] = None
    notes: List[str] = field(default_factory=list)


@dataclass
class ModelInsn:
    id: int
    sim_id: int
    thread: int
    begin: int
    name: str = ""
    detail: str = ""
    end: Optional[int] = None
    retire_id: Optional[int] = None
    flushed: bool = False
    stages: List[ModelStage] = field(default_factory=list)
    deps: List[Tuple[int, int]] = field(default_factory=list)
    last_stage: Optional[ModelStage] = None
    open: Dict[int, ModelStage] = field(default_factory=dict)


def read_model(text: str) -> List[ModelInsn]:
    lines = text.split("\n")
    assert lines[0] == "Kanata\t0004", lines[0]
    cycle = 0
    insns: Dict[int, ModelInsn] = {}
    for line in lines[1:]:
        if not line:
            continue
        f = line.split("\t")
        cmd = f[0]
        if cmd == "C=":
            continue
        if cmd == "C":
            cycle += int(f[1])
            continue
        if cmd == "I":
            i = int(f[1])
            insns[i] = ModelInsn(id=i, sim_id=int(f[2]), thread=int(f[3]), begin=cycle)
            continue
        op = insns[int(f[1])]
        if cmd == "L":
            kind, label = int(f[2]), f[3]
            if kind == 0:
                op.name += label
            elif kind == 1:
                op.detail += label
            elif kind == 2 and op.last_stage is not None:
                op.last_stage.notes.append(label)
        elif cmd == "S":
            lane = int(f[2])
            if lane in op.open:
                op.open.pop(lane).end = cycle
            stage = ModelStage(lane=lane, name=f[3].strip(), start=cycle)
            op.stages.append(stage)
            op.open[lane] = stage
            op.last_stage = stage
        elif cmd == "E":
            lane = int(f[2])
            if lane in op.open:
                op.open.pop(lane).end = cycle
        elif cmd == "R":
            for stage in op.open.values():
                stage.end = cycle
            op.open.clear()
            op.end = cycle
            op.retire_id = int(f[2])
            op.flushed = int(f[3]) == 1
        elif cmd == "W":
            # W consumer producer type: the arrow is the consumer's.
            op.deps.append((int(f[2]), int(f[3])))
        else:
            raise AssertionError(f"not canonical: {line!r}")
    out = [insns[k] for k in sorted(insns)]
    for op in out:
        op.name = op.name.replace("\\n", "\n")
        op.detail = op.detail.replace("\\n", "\n")
    return out


def as_model(insn) -> ModelInsn:
    """A kanata_trace.Instruction in the model's terms."""
    return ModelInsn(
        id=insn.id,
        sim_id=insn.sim_id,
        thread=insn.thread,
        begin=insn.begin,
        name=insn.name,
        detail=insn.detail,
        end=insn.end,
        retire_id=insn.retire_id,
        flushed=insn.flushed,
        stages=[ModelStage(s.lane, s.name, s.start, s.end, []) for s in insn.stages],
        deps=list(insn.deps),
    )


def comparable(op: ModelInsn):
    """Everything but the notes, which the model keeps per `L` line."""
    return (
        op.id, op.sim_id, op.thread, op.begin, op.name, op.detail, op.end, op.retire_id,
        op.flushed, [(s.lane, s.name, s.start, s.end) for s in op.stages], op.deps,
    )
