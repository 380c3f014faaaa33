// bench.sv: the cost of one kanata_dpi call, the DPI side of the micro-benchmark (bench_c.c
// makes the same calls from C; run.sh runs both side by side).
//
//   Vbench +n=INSNS +rounds=R [+out=PATH] [+null] [+nolabel]
//
// Each round opens PATH (default /dev/null), interns five stages, and traces INSNS
// instructions, each with the same ten calls (twelve every eighth) a testbench makes:
// begin, a name label, enter F, D, X, a dependency on the previous instruction, enter M, W,
// every eighth a stall begin and end in D, retire (every sixteenth a flush instead) and an
// advance of one cycle. The label strings are made before the clock starts, as bench_c.c's
// are, and each is copied into a string variable first, as a testbench holds its label in a
// variable (or a $sformatf result) rather than in an array. +null runs the same calls on handle 0 (no writer): the cost of the calls themselves.
// +nolabel leaves the label out (the one call with a string: Verilator 5.006 passes an SV
// string to an import by value, a copy of it each call).
// Prints "dpi replay=<ns per call> calls=<n> rounds=<r>", the median over the rounds after
// one warm-up round.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

module bench;
  import kanata_dpi::*;

  import "DPI-C" function longint unsigned bench_now_ns();

  initial begin
    int n = 200000;
    int rounds = 5;
    bit null_writer, no_label;
    string out = "/dev/null";
    string name;
    string names[16];
    real ns[$];
    real sorted[$];
    longint unsigned calls = 0;
    if ($value$plusargs("n=%d", n)) begin end
    if ($value$plusargs("rounds=%d", rounds)) begin end
    if ($value$plusargs("out=%s", out)) begin end
    null_writer = $test$plusargs("null") != 0;
    no_label = $test$plusargs("nolabel") != 0;
    for (int k = 0; k < 16; k++) names[k] = $sformatf("%08h: addi r%0d, r%0d, %0d", k * 4, k, k, k);

    for (int r = -1; r < rounds; r++) begin
      int w = 0;
      int last;
      int unsigned f, d, x, m, wb;
      longint unsigned insn, prev, rid = 0, t0, t1;
      calls = 0;
      if (!null_writer) begin
        if (kanata_open(out, KANATA_FATAL, w) != KANATA_OK) $fatal(1, "%s", kanata_last_error());
      end
      void'(kanata_stage(w, "F", f));
      void'(kanata_stage(w, "D", d));
      void'(kanata_stage(w, "X", x));
      void'(kanata_stage(w, "M", m));
      void'(kanata_stage(w, "W", wb));
      prev = KANATA_INSN_UNTRACED;
      t0 = bench_now_ns();
      for (int i = 0; i < n; i++) begin
        void'(kanata_begin(w, 64'(i), 0, insn));
        if (!no_label) begin
          name = names[i % 16];
          void'(kanata_label(w, insn, KANATA_LABEL_NAME, name));
          calls++;
        end
        void'(kanata_enter(w, insn, KANATA_LANE_MAIN, f));
        void'(kanata_enter(w, insn, KANATA_LANE_MAIN, d));
        if (i % 8 == 7) begin
          void'(kanata_stall_begin(w, insn));
          void'(kanata_stall_end(w, insn));
          calls += 2;
        end
        void'(kanata_enter(w, insn, KANATA_LANE_MAIN, x));
        if (i > 0) begin
          void'(kanata_depend(w, insn, prev, KANATA_DEP_WAKE_UP));
          calls++;
        end
        void'(kanata_enter(w, insn, KANATA_LANE_MAIN, m));
        void'(kanata_enter(w, insn, KANATA_LANE_MAIN, wb));
        if (i % 16 == 15) void'(kanata_flush(w, insn));
        else void'(kanata_retire(w, insn, rid));
        void'(kanata_advance(w, 1));
        calls += 8;
        prev = insn;
      end
      t1 = bench_now_ns();
      // The last retirement's id: one less than the instructions retired (none on handle 0).
      last = n - n / 16 - 1;
      if (rid != (null_writer ? KANATA_RETIRE_ID_NONE : 64'(last)))
        $fatal(1, "bench: last retire id %0d", rid);
      void'(kanata_finish(w));
      if (r >= 0) ns.push_back(real'(t1 - t0) / real'(calls));
    end
    sorted = ns;
    sorted.sort();
    $display("dpi%s%s replay=%.2f calls=%0d rounds=%0d", null_writer ? "_null" : "",
             no_label ? "_nolabel" : "",
             sorted[sorted.size() / 2], calls, rounds);
    $finish;
  end
endmodule
