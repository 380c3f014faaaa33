// api_tb.sv: every function of kanata_dpi.sv, its statuses and its error paths, from a
// testbench without a clock. Run by kanata-writer/capi/tests/dpi.rs, which also compares
// the trace this writes with the one it must be byte for byte (so a refused call is seen to
// have written nothing).
//
//   +trace=PATH   where the trace goes (required)
//   +fatal=PATH   then open PATH with KANATA_FATAL and misuse it: the simulation must end
//                 with $fatal before "unreachable" is printed
//
// Prints "N passed, 0 failed" at the end, or one line per failed check.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

module api_tb;
  import kanata_dpi::*;

  int passed = 0;
  int failed = 0;

  function automatic void expect_status(input int got, input int want, input string what);
    if (got == want) begin
      passed++;
    end else begin
      failed++;
      $display("FAIL %s: status %0d (%s), expected %0d (%s); last error: %s", what, got,
               kanata_status_name(got), want, kanata_status_name(want), kanata_last_error());
    end
  endfunction

  function automatic void expect_true(input bit ok, input string what);
    if (ok) begin
      passed++;
    end else begin
      failed++;
      $display("FAIL %s; last error: %s", what, kanata_last_error());
    end
  endfunction

  // Whether `text` contains `needle`.
  function automatic bit contains(input string text, input string needle);
    for (int i = 0; i + needle.len() <= text.len(); i++)
      if (text.substr(i, i + needle.len() - 1) == needle) return 1;
    return 0;
  endfunction

  // The last error starts with `fn` and contains `needle`.
  function automatic void expect_error(input string fn, input string needle);
    string e = kanata_last_error();
    expect_true(e.len() > fn.len() && e.substr(0, fn.len() - 1) == fn && contains(e, needle),
                $sformatf("last error \"%s\" names %s and says \"%s\"", e, fn, needle));
  endfunction

  int fatal_w = 0;

  initial begin
    string path, fatal_path, version;
    int w, w2, s;
    int unsigned fetch, exec, bad;
    longint unsigned a, b, c, untraced, rid, n_insns, n_retired, n_flushed, cyc;

    if (!$value$plusargs("trace=%s", path)) $fatal(1, "api_tb: +trace=PATH is required");

    version = kanata_version();
    expect_true(version.len() > 0, "kanata_version() is not empty");
    expect_true(kanata_status_name(KANATA_NOT_LIVE) == "KW_STATUS_NOT_LIVE",
                "kanata_status_name names a status");

    // Handle 0: no writer, every call a no-op that succeeds.
    expect_status(kanata_stage(0, "F", bad), KANATA_OK, "stage on handle 0");
    expect_true(bad == KANATA_STAGE_NONE, "handle 0 gives KANATA_STAGE_NONE");
    expect_status(kanata_begin(0, 1, 0, untraced), KANATA_OK, "begin on handle 0");
    expect_true(untraced == KANATA_INSN_UNTRACED, "handle 0 gives KANATA_INSN_UNTRACED");
    expect_status(kanata_label(0, untraced, KANATA_LABEL_NAME, "x"), KANATA_OK,
                  "label on handle 0");
    expect_status(kanata_retire(0, untraced, rid), KANATA_OK, "retire on handle 0");
    expect_true(rid == KANATA_RETIRE_ID_NONE, "handle 0 gives KANATA_RETIRE_ID_NONE");
    expect_status(kanata_advance(0, 5), KANATA_OK, "advance on handle 0");
    expect_status(kanata_finish(0), KANATA_OK, "finish on handle 0");

    // Opening: bad flags, a path that cannot be created.
    expect_status(kanata_open(path, 64, w), KANATA_INVALID_ARGUMENT, "open with flag 64");
    expect_true(w == 0, "a failed open gives handle 0");
    expect_error("kanata_open", "flags 64");
    expect_status(kanata_open(path, KANATA_RETIRE_AT_END | KANATA_FLUSH_AT_END, w),
                  KANATA_INVALID_ARGUMENT, "open with both live-at-end flags");
    expect_status(kanata_open("", 0, w), KANATA_INVALID_ARGUMENT, "open an empty path");
    s = kanata_open("/nonexistent-kanata-dir/run.kanata", 0, w);
    expect_true(s != KANATA_OK && w == 0, "open in a missing folder fails with handle 0");
    expect_error("kanata_open", "nonexistent-kanata-dir");

    // The trace the Rust test compares.
    expect_status(kanata_open(path, 0, w), KANATA_OK, "open the trace");
    expect_true(w > 0, "a handle");
    expect_status(kanata_stage(w, "F", fetch), KANATA_OK, "stage F");
    expect_status(kanata_stage(w, "X", exec), KANATA_OK, "stage X");
    expect_status(kanata_stage(w, "F", bad), KANATA_OK, "stage F again");
    expect_true(bad == fetch && fetch != exec && fetch != KANATA_STAGE_STALL,
                "the same name gives the same handle");
    expect_status(kanata_stage(w, "", bad), KANATA_INVALID_STAGE_NAME, "an empty stage name");
    expect_true(bad == KANATA_STAGE_NONE, "a refused stage gives KANATA_STAGE_NONE");
    expect_status(kanata_stage(w, " F", bad), KANATA_INVALID_STAGE_NAME,
                  "a stage name with a leading space");
    expect_error("kanata_stage", "");

    // Cycle 0: instruction a, with a 64-bit simulator id and thread 3.
    expect_status(kanata_begin(w, 64'hFEDC_BA98_7654_3210, 3, a), KANATA_OK, "begin a");
    expect_true(a == 0, "the first instruction is 0");
    expect_status(kanata_label(w, a, KANATA_LABEL_NAME, "0x80: lw\tr1, 0(r2)"), KANATA_OK,
                  "a name label with a TAB");
    expect_status(kanata_label(w, a, KANATA_LABEL_DETAIL, "line1\nline2"), KANATA_OK,
                  "a detail label with a line break");
    expect_status(kanata_label(w, a, KANATA_LABEL_NAME, ""), KANATA_OK, "an empty label");
    expect_status(kanata_label(w, a, KANATA_LABEL_STAGE_NOTE, "early"),
                  KANATA_NOTE_BEFORE_STAGE, "a stage note before any stage");
    expect_status(kanata_label(w, a, 7, "kind 7"), KANATA_INVALID_ARGUMENT, "label kind 7");
    expect_status(kanata_label(w, a, -1, "kind -1"), KANATA_INVALID_ARGUMENT,
                  "label kind -1");
    expect_status(kanata_enter(w, a, KANATA_LANE_MAIN, fetch), KANATA_OK, "a enters F");
    expect_status(kanata_enter(w, a, KANATA_LANE_MAIN, 99), KANATA_UNKNOWN_STAGE,
                  "an unknown stage");
    expect_status(kanata_enter(w, 77, KANATA_LANE_MAIN, fetch), KANATA_UNKNOWN_INSN,
                  "an unknown instruction");
    expect_status(kanata_label(w, a, KANATA_LABEL_STAGE_NOTE, "in F"), KANATA_OK,
                  "a stage note");

    // Cycle 1: b.
    expect_status(kanata_advance(w, 1), KANATA_OK, "advance 1");
    expect_status(kanata_begin(w, 1, 0, b), KANATA_OK, "begin b");
    expect_true(b == 1, "the second instruction is 1");
    expect_status(kanata_depend(w, a, b, KANATA_DEP_WAKE_UP), KANATA_PRODUCER_NOT_OLDER,
                  "a dependency on a younger instruction");
    expect_error("kanata_depend", "");
    expect_status(kanata_enter(w, b, KANATA_LANE_MAIN, fetch), KANATA_OK, "b enters F");
    expect_status(kanata_enter(w, a, KANATA_LANE_MAIN, exec), KANATA_OK, "a enters X");
    expect_status(kanata_stall_begin(w, b), KANATA_OK, "b stalls");

    // Cycle 3.
    expect_status(kanata_set_cycle(w, 3), KANATA_OK, "set cycle 3");
    expect_status(kanata_cycle(w, cyc), KANATA_OK, "cycle");
    expect_true(cyc == 3, "the cycle is 3");
    expect_status(kanata_set_cycle(w, 2), KANATA_TIME_WENT_BACK, "set cycle 2 after 3");
    expect_error("kanata_set_cycle", "");
    expect_status(kanata_stall_end(w, b), KANATA_OK, "b stops stalling");
    expect_status(kanata_enter(w, b, KANATA_LANE_MAIN, exec), KANATA_OK, "b enters X");
    expect_status(kanata_depend(w, b, a, KANATA_DEP_WAKE_UP), KANATA_OK, "b depends on a");
    expect_status(kanata_retire(w, a, rid), KANATA_OK, "a retires");
    expect_true(rid == 0, "a's retire id is 0");
    expect_status(kanata_label(w, a, KANATA_LABEL_DETAIL, "late"), KANATA_NOT_LIVE,
                  "a label after retirement");
    expect_error("kanata_label", "");
    expect_status(kanata_retire(w, a, rid), KANATA_NOT_LIVE, "a retires twice");
    expect_true(rid == KANATA_RETIRE_ID_NONE, "a refused retire gives KANATA_RETIRE_ID_NONE");

    // Cycle 4: c begins and is flushed; b leaves X and retires.
    expect_status(kanata_advance(w, 1), KANATA_OK, "advance to 4");
    expect_status(kanata_begin(w, 2, 1, c), KANATA_OK, "begin c");
    expect_status(kanata_enter(w, c, KANATA_LANE_MAIN, fetch), KANATA_OK, "c enters F");
    expect_status(kanata_flush(w, c), KANATA_OK, "c is flushed");
    expect_status(kanata_flush(w, c), KANATA_NOT_LIVE, "c is flushed twice");
    expect_status(kanata_leave(w, b, KANATA_LANE_MAIN), KANATA_OK, "b leaves X");
    expect_status(kanata_leave(w, b, KANATA_LANE_MAIN), KANATA_NO_OPEN_STAGE,
                  "b leaves again");
    expect_status(kanata_retire(w, b, rid), KANATA_OK, "b retires");
    expect_true(rid == 1, "b's retire id is 1");
    expect_status(kanata_summary(w, n_insns, n_retired, n_flushed), KANATA_OK, "summary");
    expect_true(n_insns == 3 && n_retired == 2 && n_flushed == 1,
                $sformatf("summary 3/2/1, got %0d/%0d/%0d", n_insns, n_retired, n_flushed));
    expect_status(kanata_advance(w, 2), KANATA_OK, "advance to 6");
    expect_status(kanata_finish(w), KANATA_OK, "finish");

    // After finish.
    expect_status(kanata_summary(w, n_insns, n_retired, n_flushed), KANATA_OK,
                  "summary after finish");
    expect_true(n_insns == 3 && n_retired == 2 && n_flushed == 1, "it is finish's summary");
    expect_status(kanata_begin(w, 5, 0, a), KANATA_INVALID_ARGUMENT, "begin after finish");
    expect_true(a == KANATA_INSN_UNTRACED, "a refused begin gives KANATA_INSN_UNTRACED");
    expect_error("kanata_begin", "already finished");
    expect_status(kanata_finish(w), KANATA_INVALID_ARGUMENT, "finish twice");
    expect_status(kanata_advance(42, 1), KANATA_INVALID_ARGUMENT, "a made-up handle");
    expect_error("kanata_advance", "42 is not a writer handle");
    expect_status(kanata_advance(-1, 1), KANATA_INVALID_ARGUMENT, "a negative handle");

    // A second writer, compressed on a background thread, gets the next handle.
    expect_status(kanata_open({path, ".zst"}, KANATA_BACKGROUND | KANATA_COMPACT, w2),
                  KANATA_OK, "open a second writer");
    expect_true(w2 == w + 1, "handles are never reused");
    expect_status(kanata_begin(w2, 9, 0, a), KANATA_OK, "begin in the second writer");
    expect_status(kanata_enter(w2, a, KANATA_LANE_MAIN, KANATA_STAGE_STALL), KANATA_OK,
                  "enter stl");
    expect_status(kanata_finish(w2), KANATA_OK, "finish the second writer");

    $display("%0d passed, %0d failed", passed, failed);

    if ($value$plusargs("fatal=%s", fatal_path)) begin
      s = kanata_open(fatal_path, KANATA_FATAL, fatal_w);
      s = kanata_begin(fatal_w, 1, 0, a);
      s = kanata_retire(fatal_w, a, rid);
      $display("fatal writer: retired %0d", rid);
      s = kanata_label(fatal_w, a, KANATA_LABEL_NAME, "after retire");  // $fatal here
      $display("unreachable: status %0d", s);
    end
    $finish;
  end

  // Where the simulator runs final blocks on $fatal (Verilator 5.006 aborts instead), this
  // finish finds the trace already ended by the fatal path and succeeds.
  final begin
    if (fatal_w != 0) begin
      if (kanata_finish(fatal_w) != KANATA_OK)
        $display("FAIL finish after $fatal: %s", kanata_last_error());
    end
  end
endmodule
