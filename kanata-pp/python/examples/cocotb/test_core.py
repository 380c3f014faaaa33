"""The cocotb testbench of core.v: a monitor that watches the pipeline's valid bits and PCs
on every clock and writes what it sees through kanata_trace.Writer.

The monitor keeps the instruction in each stage (its writer handle and PC). On each clock it
reads the stall and flush signals and the stages' valid bits and PCs, moves the instructions
as the pipeline did (checking each PC against the one it remembers), and tells the writer:
`begin` for a new fetch, `enter` for a stage change, `stall_begin`/`stall_end` around a
stall in X, `flush` for the squashed ones, `retire` after W. The trace goes to
$KANATA_TRACE (default core.kanata).
"""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

import kanata_trace as kt

STAGES = ["F", "D", "X", "M", "W"]
CYCLES = int(os.environ.get("KANATA_CYCLES", "80"))


def sample(dut):
    """(valid, pc) of each stage, and the stall and flush signals."""
    stages = []
    for name in STAGES:
        n = name.lower()
        valid = int(getattr(dut, f"{n}_valid").value)
        pc = int(getattr(dut, f"{n}_pc").value)
        stages.append((valid, pc))
    return stages, int(dut.x_stall.value), int(dut.x_flush.value)


@cocotb.test()
async def trace_the_pipeline(dut):
    cocotb.start_soon(Clock(dut.clk, 10, units="ns").start())
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    path = os.environ.get("KANATA_TRACE", "core.kanata")
    with kt.Writer(path) as w:
        handles = [w.stage(s) for s in STAGES]
        slots = [None] * len(STAGES)  # (handle, pc) of the instruction in each stage
        stalled = None  # the handle stalling in X
        await FallingEdge(dut.clk)
        _, stall, flush = sample(dut)
        for _ in range(CYCLES):
            await RisingEdge(dut.clk)
            await FallingEdge(dut.clk)  # the registers have settled
            now, next_stall, next_flush = sample(dut)
            old = slots
            slots = [None] * len(STAGES)
            # W leaves the pipeline: retired.
            if old[4] is not None:
                w.retire(old[4][0])
            slots[4] = old[3]
            if stall:
                slots[0:3] = old[0:3]
            else:
                slots[3] = old[2]
                if flush:
                    for squashed in old[0:2]:
                        if squashed is not None:
                            w.flush(squashed[0])
                else:
                    slots[2], slots[1] = old[1], old[0]
                if now[0][0]:
                    pc = now[0][1]
                    i = w.begin(sim_id=pc, thread=0)
                    w.label(i, f"0x{pc:08x}")
                    w.label(i, f"fetched at cycle {w.cycle}", kind="detail")
                    slots[0] = (i, pc)
            # The monitor's pipeline is the DUT's: every valid stage holds what it expects.
            for s, (valid, pc) in enumerate(now):
                assert bool(valid) == (slots[s] is not None), (w.cycle, STAGES[s])
                if valid:
                    assert slots[s][1] == pc, (w.cycle, STAGES[s], hex(pc))
            for s in reversed(range(len(STAGES))):
                if slots[s] is not None and (old[s] is None or old[s][0] != slots[s][0]):
                    w.enter(slots[s][0], handles[s])
            x = slots[2][0] if slots[2] is not None else None
            if stalled is not None and (not next_stall or stalled != x):
                w.stall_end(stalled)
                stalled = None
            if next_stall and stalled is None:
                w.label(x, "multi-cycle", kind="note")
                w.stall_begin(x)
                stalled = x
            stall, flush = next_stall, next_flush
            w.advance()
    dut._log.info("trace written to %s: %s", path, w.summary)
