// isa.sv: the example core's instruction set, its program, and a disassembler for the
// trace's labels.
//
// One 32-bit format: op[31:28] rd[27:24] rs1[23:20] rs2[19:16] imm[15:0] (signed), sixteen
// 32-bit registers, r0 always zero, word addresses.
//
//   addi rd, rs1, imm     rd = rs1 + imm
//   add  rd, rs1, rs2     rd = rs1 + rs2
//   lw   rd, imm(rs1)     rd = mem[rs1 + imm]
//   sw   rs2, imm(rs1)    mem[rs1 + imm] = rs2
//   bne  rs1, rs2, imm    if rs1 != rs2: pc = pc + imm
//   halt                  stop fetching; the testbench ends when it retires
//   nop                   (op 0: also what the instruction memory reads past the program)
//
// SPDX-License-Identifier: MIT OR Apache-2.0

package isa;

  localparam logic [3:0] OP_NOP = 4'd0;
  localparam logic [3:0] OP_ADDI = 4'd1;
  localparam logic [3:0] OP_ADD = 4'd2;
  localparam logic [3:0] OP_LW = 4'd3;
  localparam logic [3:0] OP_SW = 4'd4;
  localparam logic [3:0] OP_BNE = 4'd5;
  localparam logic [3:0] OP_HALT = 4'd15;

  // Addresses of the instruction memory.
  typedef logic [7:0] pc_t;

  // The instruction format.
  typedef struct packed {
    logic [3:0]  op;
    logic [3:0]  rd;
    logic [3:0]  rs1;
    logic [3:0]  rs2;
    logic [15:0] imm;
  } insn_t;

  // An instruction in flight: what each pipeline register carries besides its data, and what
  // the core shows the testbench of each stage.
  typedef struct packed {
    logic        valid;
    logic [31:0] seq;   // fetch order, from 0: the testbench's id of the instruction
    pc_t         pc;
    insn_t       insn;
  } slot_t;

  function automatic logic [31:0] imm32(input logic [15:0] imm);
    return {{16{imm[15]}}, imm};
  endfunction

  function automatic logic reads_rs1(input logic [3:0] op);
    return op inside {OP_ADDI, OP_ADD, OP_LW, OP_SW, OP_BNE};
  endfunction
  function automatic logic reads_rs2(input logic [3:0] op);
    return op inside {OP_ADD, OP_SW, OP_BNE};
  endfunction
  // Whether the instruction writes a register (r0 is never written).
  function automatic logic writes_rd(input logic [3:0] op, input logic [3:0] rd);
    return op inside {OP_ADDI, OP_ADD, OP_LW} && rd != 4'd0;
  endfunction

  // The program: the sum of mem[0..3] (1 + 2 + 3 + 4) into mem[8]. Its loop has a load-use
  // stall (lw, then add) and a branch taken three times (each flushes what was fetched
  // after it) and not taken once.
  function automatic insn_t program_word(input pc_t pc);
    case (pc)
      8'd0: return '{OP_ADDI, 4'd1, 4'd0, 4'd0, 16'd0};   // addi r1, r0, 0     pointer
      8'd1: return '{OP_ADDI, 4'd2, 4'd0, 4'd0, 16'd4};   // addi r2, r0, 4     count
      8'd2: return '{OP_ADDI, 4'd3, 4'd0, 4'd0, 16'd0};   // addi r3, r0, 0     sum
      8'd3: return '{OP_LW, 4'd4, 4'd1, 4'd0, 16'd0};     // loop: lw r4, 0(r1)
      8'd4: return '{OP_ADD, 4'd3, 4'd3, 4'd4, 16'd0};    // add r3, r3, r4: a load-use stall
      8'd5: return '{OP_ADDI, 4'd1, 4'd1, 4'd0, 16'd1};   // addi r1, r1, 1
      8'd6: return '{OP_ADDI, 4'd2, 4'd2, 4'd0, -16'sd1}; // addi r2, r2, -1
      8'd7: return '{OP_BNE, 4'd0, 4'd2, 4'd0, -16'sd4};  // bne r2, r0, loop
      8'd8: return '{OP_SW, 4'd0, 4'd0, 4'd3, 16'd8};     // sw r3, 8(r0)
      8'd9: return '{OP_HALT, 4'd0, 4'd0, 4'd0, 16'd0};   // halt
      default: return '0;                                 // nop
    endcase
  endfunction

  // "addi r2, r2, -1", "lw r4, 0(r1)", "bne r2, r0, -4".
  function automatic string disasm(input insn_t i);
    int im = 32'($signed(i.imm));
    case (i.op)
      OP_ADDI: return $sformatf("addi r%0d, r%0d, %0d", i.rd, i.rs1, im);
      OP_ADD: return $sformatf("add r%0d, r%0d, r%0d", i.rd, i.rs1, i.rs2);
      OP_LW: return $sformatf("lw r%0d, %0d(r%0d)", i.rd, im, i.rs1);
      OP_SW: return $sformatf("sw r%0d, %0d(r%0d)", i.rs2, im, i.rs1);
      OP_BNE: return $sformatf("bne r%0d, r%0d, %0d", i.rs1, i.rs2, im);
      OP_HALT: return "halt";
      OP_NOP: return "nop";
      default: return $sformatf("unknown 0x%08h", i);
    endcase
  endfunction

endpackage
