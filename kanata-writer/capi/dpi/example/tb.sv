// tb.sv: runs core.sv's program and traces its pipeline through kanata_dpi.sv.
//
//   +trace=PATH     the trace (default pipeline.kanata; .gz or .zst compress it)
//   +background     compress on a background thread
//
// The tracer watches the stage ports of the core once a cycle, at the rising edge (before
// the edge's updates, so it sees the cycle that ends), and turns what changed into calls:
// an instruction seen for the first time begins (name label: its PC and disassembly) and
// enters F; one seen in another stage enters it; one held in D while the core stalls
// stalls; one gone after W retires (detail label: the value written); one gone from F or D
// after a kill is flushed. When an instruction enters X, a dependency is drawn from the
// instruction in flight that last wrote each register it reads, and a bne gets a stage note
// (taken or not). Anything else ends the simulation: the tracer checks the core as it goes.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

module tb;
  import kanata_dpi::*;
  import isa::*;

  logic clk = 1'b0;
  logic rst = 1'b1;
  initial forever #5 clk = ~clk;

  logic halted, stall, kill, x_taken;
  logic [31:0] x_result, w_value;
  slot_t fq[4];
  slot_t d_slot, x_slot, m_slot, w_slot;

  core dut (.*);

  // ----- the trace -----
  localparam int F = 0, D = 1, X = 2, M = 3, W = 4;
  int tr = 0;                          // the writer
  int unsigned stage_of[5];            // F..W -> the writer's stage handles
  longint unsigned insn_of[int unsigned];  // seq -> the instruction's handle
  int where[int unsigned];                 // seq -> the stage it is in (F..W)
  bit stalling[int unsigned];              // seq -> in the stall lane
  int unsigned writer_seq[16];         // the last instruction to enter X that writes r
  bit writer_valid[16];
  bit killed_last_cycle = 1'b0;
  longint unsigned retired = 0, flushed = 0;

  // A failed check ends the trace first (Verilator does not run final blocks on $fatal), so
  // that the trace up to the failure can be looked at.
  function automatic void check(input bit ok, input string what);
    if (!ok) begin
      void'(kanata_finish(tr));
      $fatal(1, "tb: %s", what);
    end
  endfunction

  // The instruction `s` is in `stage` this cycle.
  function automatic void seen(input slot_t s, input int stage, input bit in_stall);
    longint unsigned insn;
    check(s.valid, "seen() on an empty slot");
    if (where.exists(s.seq) == 0) begin
      check(stage == F, $sformatf("instruction %0d appears in stage %0d", s.seq, stage));
      void'(kanata_begin(tr, 64'(s.seq), 0, insn));
      insn_of[s.seq] = insn;
      where[s.seq] = F;
      stalling[s.seq] = 1'b0;
      void'(kanata_label(tr, insn, KANATA_LABEL_NAME,
                         $sformatf("%02h: %s", s.pc, disasm(s.insn))));
      void'(kanata_enter(tr, insn, KANATA_LANE_MAIN, stage_of[F]));
    end
    insn = insn_of[s.seq];
    if (stalling[s.seq] && (!in_stall || where[s.seq] != stage)) begin
      void'(kanata_stall_end(tr, insn));
      stalling[s.seq] = 1'b0;
    end
    if (where[s.seq] != stage) begin
      check(stage == where[s.seq] + 1, $sformatf("instruction %0d skips from stage %0d to %0d",
                                                 s.seq, where[s.seq], stage));
      void'(kanata_enter(tr, insn, KANATA_LANE_MAIN, stage_of[stage]));
      where[s.seq] = stage;
      if (stage == X) entered_x(s.seq, s.pc, s.insn, insn);
      if (stage == W && writes_rd(s.insn.op, s.insn.rd))
        void'(kanata_label(tr, insn, KANATA_LABEL_DETAIL,
                           $sformatf("r%0d = %0d", s.insn.rd, w_value)));
    end
    if (in_stall && !stalling[s.seq]) begin
      void'(kanata_stall_begin(tr, insn));
      stalling[s.seq] = 1'b1;
    end
  endfunction

  function automatic void entered_x(input int unsigned seq, input pc_t pc, input insn_t i,
                                    input longint unsigned insn);
    if (reads_rs1(i.op)) depend_on(insn, i.rs1);
    if (reads_rs2(i.op) && i.rs2 != i.rs1) depend_on(insn, i.rs2);
    if (i.op == OP_BNE)
      void'(kanata_label(tr, insn, KANATA_LABEL_STAGE_NOTE,
                         x_taken ? $sformatf("taken to %02h", pc + i.imm[7:0]) : "not taken"));
    if (i.op inside {OP_LW, OP_SW})
      void'(kanata_label(tr, insn, KANATA_LABEL_STAGE_NOTE, $sformatf("address %0d", x_result)));
    if (writes_rd(i.op, i.rd)) begin
      writer_seq[i.rd] = seq;
      writer_valid[i.rd] = 1'b1;
    end
  endfunction

  // A wake-up arrow from the last writer of `r`, while it is in flight (r0 has none).
  function automatic void depend_on(input longint unsigned consumer, input logic [3:0] r);
    if (r != 4'd0 && writer_valid[r] && insn_of.exists(writer_seq[r]) != 0)
      void'(kanata_depend(tr, consumer, insn_of[writer_seq[r]], KANATA_DEP_WAKE_UP));
  endfunction

  // Once a cycle: what the core holds in the cycle that ends now.
  function automatic void trace_cycle();
    bit present[int unsigned];
    int unsigned gone[$];
    longint unsigned rid;
    // Emptied explicitly: Verilator 5.006 keeps the contents of an automatic function's
    // associative arrays and queues from one call to the next.
    present.delete();
    gone.delete();
    for (int i = 0; i < 4; i++)
      if (fq[i].valid) begin
        seen(fq[i], F, 1'b0);
        present[fq[i].seq] = 1'b1;
      end
    if (d_slot.valid) begin
      seen(d_slot, D, stall);
      present[d_slot.seq] = 1'b1;
    end
    if (x_slot.valid) begin
      seen(x_slot, X, 1'b0);
      present[x_slot.seq] = 1'b1;
    end
    if (m_slot.valid) begin
      seen(m_slot, M, 1'b0);
      present[m_slot.seq] = 1'b1;
    end
    if (w_slot.valid) begin
      seen(w_slot, W, 1'b0);
      present[w_slot.seq] = 1'b1;
    end
    foreach (where[s]) if (present.exists(s) == 0) gone.push_back(s);
    foreach (gone[i]) begin
      int unsigned s = gone[i];
      if (where[s] == W) begin
        void'(kanata_retire(tr, insn_of[s], rid));
        check(rid == retired, $sformatf("retire id %0d, expected %0d", rid, retired));
        retired++;
      end else begin
        check(killed_last_cycle && where[s] <= D,
              $sformatf("instruction %0d vanished from stage %0d without a kill", s, where[s]));
        void'(kanata_flush(tr, insn_of[s]));
        flushed++;
      end
      insn_of.delete(s);
      where.delete(s);
      stalling.delete(s);
    end
    killed_last_cycle = kill;
    void'(kanata_advance(tr, 1));
  endfunction

  initial begin
    string path;
    int flags = KANATA_FATAL;  // any misuse of the writer ends the simulation
    if (!$value$plusargs("trace=%s", path)) path = "pipeline.kanata";
    if ($test$plusargs("background")) flags |= KANATA_BACKGROUND;
    void'(kanata_open(path, flags, tr));
    void'(kanata_stage(tr, "F", stage_of[F]));
    void'(kanata_stage(tr, "D", stage_of[D]));
    void'(kanata_stage(tr, "X", stage_of[X]));
    void'(kanata_stage(tr, "M", stage_of[M]));
    void'(kanata_stage(tr, "W", stage_of[W]));
    repeat (2) @(negedge clk);
    rst = 1'b0;
    repeat (200) @(negedge clk);
    $fatal(1, "tb: the program did not halt in 200 cycles");
  end

  // The tracer: procedural testbench code, so blocking assignments throughout.
  initial forever begin
    @(posedge clk);
    if (!rst) begin
      trace_cycle();
      if (halted) begin
        check(where.size() == 0, "instructions are left in flight after the halt");
        check(dut.dmem[8] == 32'd10, $sformatf("mem[8] = %0d, expected 10", dut.dmem[8]));
        $display("tb: halted: %0d retired, %0d flushed, mem[8] = %0d", retired, flushed,
                 dut.dmem[8]);
        $finish;
      end
    end
  end

  // The trace is complete only after kanata_finish: here it runs whatever ends the run.
  final void'(kanata_finish(tr));

endmodule
