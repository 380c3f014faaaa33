// kanata_dpi.sv: write Kanata pipeline traces (the format the Konata viewer draws) from a
// SystemVerilog testbench, through kanata-writer's C API (DPI-C; the C side is kanata_dpi.c,
// linked with libkanata_writer.a).
//
//   import kanata_dpi::*;
//   int tr; int unsigned F; longint unsigned i, rid;
//   initial void'(kanata_open("run.kanata.zst", KANATA_BACKGROUND | KANATA_FATAL, tr));
//   ... void'(kanata_stage(tr, "F", F)); void'(kanata_begin(tr, pc, 0, i));
//   ... void'(kanata_enter(tr, i, KANATA_LANE_MAIN, F)); void'(kanata_retire(tr, i, rid));
//   always @(posedge clk) void'(kanata_advance(tr, 1));
//   final void'(kanata_finish(tr));
//
// Every function returns a status: KANATA_OK (0), a misuse code (1 to 19: the call was
// refused before anything was written, and the writer goes on), or KANATA_IO (20),
// KANATA_POISONED (21), KANATA_PANIC (22) (the writer is unusable; finish it all the same).
// kanata_last_error() is the message of the last failure, starting with the function's name.
// Nothing here stops the simulation unless the writer was opened with KANATA_FATAL: then
// the first failing call on it ends the simulation with $fatal and that message.
//
// Handles are ints: 0 is "no writer" (every call is a no-op that succeeds, and the out values
// are KANATA_INSN_UNTRACED, KANATA_STAGE_NONE, KANATA_RETIRE_ID_NONE), so tracing calls can
// stay unconditional with tracing off; a failed kanata_open gives 0. A handle after
// kanata_finish, or one kanata_open never gave, is an error, never a crash.
//
// The subset used is the one IEEE 1800-2017 section 35 and annex H define for DPI-C:
// import "DPI-C" functions (not context, not pure) in a package, with int, int unsigned,
// longint unsigned and string arguments, output arguments, int and string results. Tested
// with Verilator 5.006; see README.md beside this file for what was and was not tested.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

package kanata_dpi;

  // A testbench uses a few of these constants: the others are not lint findings. (A comment
  // to every other tool.)
  /* verilator lint_off UNUSEDPARAM */

  // ----- statuses (KwStatus in kanata_writer.h) -----
  localparam int KANATA_OK = 0;
  localparam int KANATA_TIME_WENT_BACK = 1;
  localparam int KANATA_CYCLE_OVERFLOW = 2;
  localparam int KANATA_NOT_LIVE = 3;
  localparam int KANATA_UNKNOWN_INSN = 4;
  localparam int KANATA_NO_OPEN_STAGE = 5;
  localparam int KANATA_NOTE_BEFORE_STAGE = 6;
  localparam int KANATA_PRODUCER_NOT_OLDER = 7;
  localparam int KANATA_INVALID_STAGE_NAME = 8;
  localparam int KANATA_UNKNOWN_STAGE = 9;
  localparam int KANATA_INVALID_OPTION = 10;
  localparam int KANATA_INVALID_ARGUMENT = 11;
  localparam int KANATA_IO = 20;
  localparam int KANATA_POISONED = 21;
  localparam int KANATA_PANIC = 22;
  localparam int KANATA_OTHER = 23;

  // ----- flags of kanata_open, or-ed -----
  // Compress and write on a background thread (the output bytes are the same).
  localparam int KANATA_BACKGROUND = 1;
  // Leave out the E lines Konata implies (smaller, drawn identically).
  localparam int KANATA_COMPACT = 2;
  // The first failing call on this writer (or its kanata_open) ends the simulation: $fatal,
  // after every open trace has been finished (complete files; kanata_finish on them is then
  // a no-op that succeeds).
  localparam int KANATA_FATAL = 4;
  // At kanata_finish, retire (or flush) the instructions still in flight at the last
  // cycle; by default they are left open, and Konata draws them up to the end.
  localparam int KANATA_RETIRE_AT_END = 8;
  localparam int KANATA_FLUSH_AT_END = 16;

  // ----- constants -----
  localparam int unsigned KANATA_LANE_MAIN = 0;   // the pipeline stages
  localparam int unsigned KANATA_LANE_STALL = 1;  // stalls, drawn over the main lane
  localparam int KANATA_LABEL_NAME = 0;           // left pane: PC and disassembly
  localparam int KANATA_LABEL_DETAIL = 1;         // mouse-over detail
  localparam int KANATA_LABEL_STAGE_NOTE = 2;     // a note on the stage entered last
  localparam int unsigned KANATA_DEP_WAKE_UP = 0; // the dependency kind Konata draws
  localparam int unsigned KANATA_STAGE_NONE = 0;
  localparam int unsigned KANATA_STAGE_STALL = 1; // `stl`, in every writer
  localparam longint unsigned KANATA_INSN_UNTRACED = 64'hFFFF_FFFF_FFFF_FFFF;
  localparam longint unsigned KANATA_RETIRE_ID_NONE = 64'hFFFF_FFFF_FFFF_FFFF;
  /* verilator lint_on UNUSEDPARAM */

  // ----- the imports (kanata_dpi.c) -----
  import "DPI-C" function int kanata_dpi_open(input string path, input int flags,
                                              output int w);
  import "DPI-C" function int kanata_dpi_finish(input int w);
  import "DPI-C" function int kanata_dpi_summary(input int w,
                                                 output longint unsigned instructions,
                                                 output longint unsigned retired,
                                                 output longint unsigned flushed);
  import "DPI-C" function int kanata_dpi_stage(input int w, input string name,
                                               output int unsigned stage);
  import "DPI-C" function int kanata_dpi_begin(input int w, input longint unsigned sim_id,
                                               input int unsigned thread,
                                               output longint unsigned insn);
  import "DPI-C" function int kanata_dpi_label(input int w, input longint unsigned insn,
                                               input int kind, input string text);
  import "DPI-C" function int kanata_dpi_enter(input int w, input longint unsigned insn,
                                               input int unsigned lane,
                                               input int unsigned stage);
  import "DPI-C" function int kanata_dpi_leave(input int w, input longint unsigned insn,
                                               input int unsigned lane);
  import "DPI-C" function int kanata_dpi_stall_begin(input int w,
                                                     input longint unsigned insn);
  import "DPI-C" function int kanata_dpi_stall_end(input int w,
                                                   input longint unsigned insn);
  import "DPI-C" function int kanata_dpi_retire(input int w, input longint unsigned insn,
                                                output longint unsigned retire_id);
  import "DPI-C" function int kanata_dpi_flush(input int w, input longint unsigned insn);
  import "DPI-C" function int kanata_dpi_depend(input int w,
                                                input longint unsigned consumer,
                                                input longint unsigned producer,
                                                input int unsigned kind);
  import "DPI-C" function int kanata_dpi_set_cycle(input int w,
                                                   input longint unsigned cycle);
  import "DPI-C" function int kanata_dpi_advance(input int w,
                                                 input longint unsigned cycles);
  import "DPI-C" function int kanata_dpi_cycle(input int w, output longint unsigned cycle);
  import "DPI-C" function string kanata_dpi_last_error();
  import "DPI-C" function string kanata_dpi_status_name(input int status);
  import "DPI-C" function string kanata_dpi_version();
  import "DPI-C" function int kanata_dpi_fatal(input int w);

  // A failed call: $fatal when its writer asked for it, after kanata_dpi_fatal has ended
  // every open trace (a simulator may abort on $fatal without running final blocks).
  // Kept out of the callers' fast path.
  function automatic void kanata_failed(input int w);
    if (kanata_dpi_fatal(w) != 0) $fatal(1, "kanata: %s", kanata_dpi_last_error());
  endfunction

  // ----- the API -----

  // The message of the last failure ("" if none yet), such as
  // "kanata_label: instruction 3 is not live (it was retired or flushed)".
  function automatic string kanata_last_error();
    return kanata_dpi_last_error();
  endfunction

  // The name of a status, such as "KW_STATUS_NOT_LIVE".
  function automatic string kanata_status_name(input int status);
    return kanata_dpi_status_name(status);
  endfunction

  // The library's version, such as "0.1.0".
  function automatic string kanata_version();
    return kanata_dpi_version();
  endfunction

  // Creates (truncates) the trace file at `path`, compressed as its extension says (.gz
  // gzip, .zst zstd, else plain text); `flags` or-s KANATA_BACKGROUND, KANATA_COMPACT,
  // KANATA_FATAL and KANATA_RETIRE_AT_END or KANATA_FLUSH_AT_END (0 for none). `w` is the
  // new handle, or 0 on failure (later calls then trace nothing).
  function automatic int kanata_open(input string path, input int flags, output int w);
    int s = kanata_dpi_open(path, flags, w);
    if (s != KANATA_OK && (flags & KANATA_FATAL) != 0)
      $fatal(1, "kanata: %s", kanata_dpi_last_error());
    return s;
  endfunction

  // Ends the trace: the live-at-end flag, the last cycle, the end of the compressed stream.
  // The trace is complete only after this; call it from a `final` block so that $finish
  // anywhere (and KANATA_FATAL's $fatal) still ends it. The handle is invalid afterwards.
  function automatic int kanata_finish(input int w);
    int s = kanata_dpi_finish(w);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // What has been written: instructions (traced), retired and flushed; after kanata_finish,
  // what it wrote.
  function automatic int kanata_summary(input int w, output longint unsigned instructions,
                                        output longint unsigned retired,
                                        output longint unsigned flushed);
    int s = kanata_dpi_summary(w, instructions, retired, flushed);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // Interns a stage name ("F", "X": Konata draws dependency arrows between stages whose name
  // has an upper-case X). The same name gives the same handle.
  function automatic int kanata_stage(input int w, input string name,
                                      output int unsigned stage);
    int s = kanata_dpi_stage(w, name, stage);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // An instruction appears, with the simulator's 64-bit id (a sequence number, a PC) and a
  // thread; `insn` is its handle for the other calls.
  function automatic int kanata_begin(input int w, input longint unsigned sim_id,
                                      input int unsigned thread,
                                      output longint unsigned insn);
    int s = kanata_dpi_begin(w, sim_id, thread, insn);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // Appends `text` to a label: KANATA_LABEL_NAME, KANATA_LABEL_DETAIL or
  // KANATA_LABEL_STAGE_NOTE (on the stage entered last; write it before kanata_stall_begin).
  // The text is escaped, never refused; empty text writes nothing.
  function automatic int kanata_label(input int w, input longint unsigned insn, input int kind,
                                      input string text);
    int s = kanata_dpi_label(w, insn, kind, text);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The instruction enters `stage` in `lane`, closing the stage it had open there.
  function automatic int kanata_enter(input int w, input longint unsigned insn,
                                      input int unsigned lane, input int unsigned stage);
    int s = kanata_dpi_enter(w, insn, lane, stage);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The instruction leaves the stage it has open in `lane`.
  function automatic int kanata_leave(input int w, input longint unsigned insn,
                                      input int unsigned lane);
    int s = kanata_dpi_leave(w, insn, lane);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The instruction starts stalling (stage `stl` in the stall lane) ...
  function automatic int kanata_stall_begin(input int w, input longint unsigned insn);
    int s = kanata_dpi_stall_begin(w, insn);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // ... and stops.
  function automatic int kanata_stall_end(input int w, input longint unsigned insn);
    int s = kanata_dpi_stall_end(w, insn);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The instruction retires; `retire_id` is its number among retired instructions, from 0.
  function automatic int kanata_retire(input int w, input longint unsigned insn,
                                       output longint unsigned retire_id);
    int s = kanata_dpi_retire(w, insn, retire_id);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The instruction is flushed (squashed, killed).
  function automatic int kanata_flush(input int w, input longint unsigned insn);
    int s = kanata_dpi_flush(w, insn);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // A dependency arrow from `producer` (older) to `consumer`, KANATA_DEP_WAKE_UP.
  function automatic int kanata_depend(input int w, input longint unsigned consumer,
                                       input longint unsigned producer,
                                       input int unsigned kind);
    int s = kanata_dpi_depend(w, consumer, producer, kind);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // Moves time to the absolute `cycle` (never back).
  function automatic int kanata_set_cycle(input int w, input longint unsigned cycle);
    int s = kanata_dpi_set_cycle(w, cycle);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // Moves time forward by `cycles`; a testbench calls it from its clock. Idle cycles cost
  // nothing in the file.
  function automatic int kanata_advance(input int w, input longint unsigned cycles);
    int s = kanata_dpi_advance(w, cycles);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

  // The current cycle.
  function automatic int kanata_cycle(input int w, output longint unsigned cycle);
    int s = kanata_dpi_cycle(w, cycle);
    if (s != KANATA_OK) kanata_failed(w);
    return s;
  endfunction

endpackage
