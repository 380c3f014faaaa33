`timescale 1ns / 1ps
// A small in-order pipeline (F D X M W) for the cocotb example: it runs no program, it moves
// PCs down the pipeline. An instruction at a PC with bits [5:2] == 3 is a multi-cycle
// operation: it stays three cycles in X and stalls F, D and X behind it. One with bits
// [5:2] == 9 is a taken branch: when it leaves X, the instructions in F and D are flushed
// and fetch goes on at its PC + 72.
module core (
    input  wire        clk,
    input  wire        rst,
    output reg         f_valid,
    output reg  [31:0] f_pc,
    output reg         d_valid,
    output reg  [31:0] d_pc,
    output reg         x_valid,
    output reg  [31:0] x_pc,
    output reg         m_valid,
    output reg  [31:0] m_pc,
    output reg         w_valid,
    output reg  [31:0] w_pc,
    output wire        x_stall,
    output wire        x_flush
);
    reg [31:0] pc;
    reg [1:0]  x_busy;

    wire x_multi = x_valid && (x_pc[5:2] == 4'd3);
    assign x_stall = x_multi && (x_busy != 2'd2);
    assign x_flush = x_valid && !x_stall && (x_pc[5:2] == 4'd9);

    always @(posedge clk) begin
        if (rst) begin
            pc <= 32'h8000_0000;
            f_valid <= 1'b0; d_valid <= 1'b0; x_valid <= 1'b0;
            m_valid <= 1'b0; w_valid <= 1'b0;
            f_pc <= 0; d_pc <= 0; x_pc <= 0; m_pc <= 0; w_pc <= 0;
            x_busy <= 2'd0;
        end else begin
            w_valid <= m_valid;
            w_pc <= m_pc;
            if (x_stall) begin
                x_busy <= x_busy + 2'd1;
                m_valid <= 1'b0;
            end else begin
                x_busy <= 2'd0;
                m_valid <= x_valid;
                m_pc <= x_pc;
                if (x_flush) begin
                    x_valid <= 1'b0;
                    d_valid <= 1'b0;
                    f_valid <= 1'b1;
                    f_pc <= x_pc + 32'd72;
                    pc <= x_pc + 32'd76;
                end else begin
                    x_valid <= d_valid;
                    x_pc <= d_pc;
                    d_valid <= f_valid;
                    d_pc <= f_pc;
                    f_valid <= 1'b1;
                    f_pc <= pc;
                    pc <= pc + 32'd4;
                end
            end
        end
    end
endmodule
