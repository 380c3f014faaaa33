// core.sv: a small in-order core with five stages, for the kanata_dpi example.
//
//   F  fetch: two instructions a cycle into a four-entry fetch queue (the queue is stage F:
//      two instructions enter it in the same cycle, and wait there for decode)
//   D  decode: one instruction a cycle from the queue; held one cycle when it uses the
//      register a load in X is loading (load-use stall: a bubble goes to X)
//   X  execute: ALU, address, branch; operands forwarded from M and W; a taken bne
//      redirects fetch and kills the younger instructions in D and the queue
//   M  memory: loads read, stores write the data memory
//   W  write-back: the register file is written at the end of the cycle
//
// Branches are predicted not taken. A halt in D stops fetch (what was fetched after it is
// killed); `halted` rises once it has left W.
//
// The ports after `halted` only show the testbench what is in each stage; the core does
// not depend on them.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

module core
  import isa::*;
(
    input logic clk,
    input logic rst,
    output logic halted,
    // what each stage holds, for the trace
    output slot_t fq[4],   // the fetch queue, oldest first
    output slot_t d_slot,
    output slot_t x_slot,
    output slot_t m_slot,
    output slot_t w_slot,
    output logic stall,        // D is held this cycle (load-use)
    output logic kill,         // the younger instructions in D and F are killed this cycle
    output logic x_taken,      // the bne in X is taken
    output logic [31:0] x_result,  // X's ALU result or address
    output logic [31:0] w_value    // the value W writes
);

  logic [31:0] regs[16];
  logic [31:0] dmem[16];

  pc_t fetch_pc;
  logic fetch_stopped;
  logic [31:0] next_seq;
  logic [2:0] fq_count;

  logic [31:0] m_alu, m_store;

  // ----- X: operands, forwarded from M and W -----
  logic [31:0] m_value;
  assign m_value = m_slot.insn.op == OP_LW ? dmem[m_alu[3:0]] : m_alu;

  function automatic logic [31:0] operand(input logic [3:0] r);
    if (r == 4'd0) return 32'd0;
    if (m_slot.valid && writes_rd(m_slot.insn.op, m_slot.insn.rd) && m_slot.insn.rd == r)
      return m_value;
    if (w_slot.valid && writes_rd(w_slot.insn.op, w_slot.insn.rd) && w_slot.insn.rd == r)
      return w_value;
    return regs[r];
  endfunction

  logic [31:0] a, b;
  always_comb begin
    a = operand(x_slot.insn.rs1);
    b = operand(x_slot.insn.rs2);
    case (x_slot.insn.op)
      OP_ADD: x_result = a + b;
      default: x_result = a + imm32(x_slot.insn.imm);  // addi, lw, sw, and bne's (unused) sum
    endcase
  end
  assign x_taken = x_slot.valid && x_slot.insn.op == OP_BNE && a != b;
  pc_t x_target;
  assign x_target = x_slot.pc + x_slot.insn.imm[7:0];

  // ----- D: the load-use hazard -----
  logic d_uses_x;
  assign d_uses_x = (reads_rs1(d_slot.insn.op) && d_slot.insn.rs1 == x_slot.insn.rd)
                 || (reads_rs2(d_slot.insn.op) && d_slot.insn.rs2 == x_slot.insn.rd);
  assign stall = d_slot.valid && x_slot.valid && x_slot.insn.op == OP_LW
              && writes_rd(x_slot.insn.op, x_slot.insn.rd) && d_uses_x;

  logic d_halt;
  assign d_halt = d_slot.valid && d_slot.insn.op == OP_HALT;
  assign kill = x_taken || (d_halt && !stall);

  // ----- F: the fetch queue -----
  logic pop, push;
  assign pop = !stall && !kill && fq[0].valid;
  assign push = !fetch_stopped && !kill
             && ({1'b0, fq_count} - {3'd0, pop}) <= 4'd2;

  slot_t fq_next[4];
  logic [2:0] count_next;
  always_comb begin
    fq_next = fq;
    count_next = fq_count;
    if (pop) begin
      for (int i = 0; i < 3; i++) fq_next[i] = fq[i+1];
      fq_next[3] = '0;
      count_next = fq_count - 3'd1;
    end
    if (push) begin
      fq_next[count_next[1:0]] = '{1'b1, next_seq, fetch_pc, program_word(fetch_pc)};
      fq_next[count_next[1:0]+2'd1] =
          '{1'b1, next_seq + 32'd1, fetch_pc + 8'd1, program_word(fetch_pc + 8'd1)};
      count_next = count_next + 3'd2;
    end
    if (kill) begin
      for (int i = 0; i < 4; i++) fq_next[i] = '0;
      count_next = 3'd0;
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      for (int i = 0; i < 4; i++) fq[i] <= '0;
      fq_count <= 3'd0;
      d_slot <= '0;
      x_slot <= '0;
      m_slot <= '0;
      w_slot <= '0;
      fetch_pc <= 8'd0;
      fetch_stopped <= 1'b0;
      next_seq <= 32'd0;
      halted <= 1'b0;
      m_alu <= 32'd0;
      m_store <= 32'd0;
      w_value <= 32'd0;
      for (int i = 0; i < 16; i++) begin
        regs[i] <= 32'd0;
        dmem[i] <= i < 4 ? 32'(i + 1) : 32'd0;
      end
    end else begin
      // F
      fq <= fq_next;
      fq_count <= count_next;
      if (push) begin
        fetch_pc <= fetch_pc + 8'd2;
        next_seq <= next_seq + 32'd2;
      end
      if (x_taken) fetch_pc <= x_target;
      else if (d_halt && !stall) fetch_stopped <= 1'b1;
      // D (a halt leaving D kills only what is behind it)
      if (kill) d_slot <= '0;
      else if (!stall) d_slot <= pop ? fq[0] : '0;
      // X
      x_slot <= stall || x_taken ? '0 : d_slot;
      // M
      m_slot <= x_slot;
      m_alu <= x_result;
      m_store <= b;
      if (m_slot.valid && m_slot.insn.op == OP_SW) dmem[m_alu[3:0]] <= m_store;
      // W
      w_slot <= m_slot;
      w_value <= m_value;
      if (w_slot.valid && writes_rd(w_slot.insn.op, w_slot.insn.rd))
        regs[w_slot.insn.rd] <= w_value;
      if (w_slot.valid && w_slot.insn.op == OP_HALT) halted <= 1'b1;
    end
  end

endmodule
