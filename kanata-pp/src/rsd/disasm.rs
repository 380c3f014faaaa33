//! RV32IMF disassembly in the exact text of RSD's KanataConverter (`RISCV_Disassembler.py`),
//! the type-0 label RSD traces show as `<pc>: <disassembly>` (`shared/spec/rsd-raw.md`
//! §2.6).
//!
//! The text is RSD's, not an assembler's: ABI register names with x8 as `s0/fp`; the
//! immediates of I, S, B and J forms sign-extended to 32 bits and printed as Python's `hex()`
//! prints them (`0x10`, `0xfffffff0`); the U immediate already shifted (`lui sp,
//! 0x80020000`); shift amounts in hex; `fence` with its pred/succ bits in binary; CSRs as
//! `0x%03x`. A known opcode with an unknown function code gives `Unknown` glued to the
//! operands (`Unknowna0, 0x0(a1)`), an unknown opcode `unknown <hex>`.
//!
//! Two versions of the disassembler are in use ([`Syntax`]): RSD's current one (HEAD) and
//! the one before commit 8df5054 (2023-02-06), which wrote stores as `sw rs2, rs1, IMM` and
//! knew no RV32F; that older text is what Konata's RSD sample shows.
//!
//! The RV32I and RV32M text of both versions follows the Python source line by line. The
//! RV32F forms of HEAD are built from the spec's summary of them (mnemonics, `ft0`…
//! register names, operands in the order of the integer forms, no rounding mode), because
//! the HEAD source of that part was not available: they may differ from RSD's in detail.
//! See `docs/rsd.md`.

use std::fmt::{self, Write as _};

/// Which version of RSD's disassembler to reproduce.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Syntax {
    /// RSD's current disassembler: stores as `sw rs2, IMM(rs1)`, RV32F.
    #[default]
    Head,
    /// The disassembler before 2023-02-06 (Konata's RSD sample): stores as
    /// `sw rs2, rs1, IMM`, floating-point opcodes as `unknown <hex>`.
    Before2023,
}

/// RSD's own disassembler raises an exception on this word (it stops the whole conversion
/// there); kanata-pp still writes a text for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PythonCrash;

impl fmt::Display for PythonCrash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RSD's disassembler raises on this instruction word")
    }
}

impl std::error::Error for PythonCrash {}

/// The disassembly of `code` (the `L` line's instruction field, hexadecimal text) as RSD's
/// converter writes it.
///
/// ```
/// use kanata_pp::rsd::disasm::{disassemble, Syntax};
/// assert_eq!(disassemble("0100006f", Syntax::Head), "jal zero, 0x10");
/// assert_eq!(disassemble("00c12023", Syntax::Head), "sw a2, 0x0(sp)");
/// assert_eq!(disassemble("00c12023", Syntax::Before2023), "sw a2, sp, 0x0");
/// assert_eq!(disassemble("xxxxxxxx", Syntax::Head), "invalid:xxxxxxxx");
/// ```
pub fn disassemble(code: &str, syntax: Syntax) -> String {
    let mut out = String::new();
    // A word RSD's disassembler fails on still gets kanata-pp's text.
    let _ = disassemble_into(code, syntax, &mut out);
    out
}

/// Appends the disassembly of `code` to `out`.
///
/// # Errors
/// [`PythonCrash`] when RSD's disassembler would raise on this word (one floating-point
/// case, see `docs/rsd.md`); `out` then holds kanata-pp's text for it, as if that case fell
/// through to `Unknown` like the others.
pub fn disassemble_into(code: &str, syntax: Syntax, out: &mut String) -> Result<(), PythonCrash> {
    if code.is_empty() || code == "xxxxxxxx" {
        out.push_str("invalid:");
        out.push_str(code);
        return Ok(());
    }
    let Some(value) = PyHex::parse(code) else {
        out.push_str("invalid: ");
        out.push_str(code);
        return Ok(());
    };
    Insn(value.low32).write(&value, syntax, out)
}

/// A number as Python's `int(text, 16)` reads it: any length, any sign.
#[derive(Debug, PartialEq, Eq)]
struct PyHex {
    negative: bool,
    /// The magnitude's hex digits, lower case, without leading zeros (`0` for zero).
    digits: String,
    /// The low 32 bits of the value in two's complement (Python's `code & 0xffffffff`).
    low32: u32,
}

impl PyHex {
    /// `int(text, 16)`: white space around, an optional sign, an optional `0x`, hex digits
    /// with single underscores between them. `None` where Python raises `ValueError`.
    fn parse(text: &str) -> Option<PyHex> {
        let text = text.trim_matches(|c: char| c.is_whitespace());
        let (negative, text) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let text = match text.get(..2) {
            // `0x_1` is accepted, `0x` alone is not.
            Some("0x" | "0X") => text[2..].strip_prefix('_').unwrap_or(&text[2..]),
            _ => text,
        };
        if text.is_empty() || text.starts_with('_') || text.ends_with('_') || text.contains("__") {
            return None;
        }
        let mut digits = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '_' => {}
                c if c.is_ascii_hexdigit() => {
                    if !(digits.is_empty() && c == '0') {
                        digits.push(c.to_ascii_lowercase());
                    }
                }
                _ => return None,
            }
        }
        if digits.is_empty() {
            digits.push('0');
        }
        let tail = &digits[digits.len().saturating_sub(8)..];
        let magnitude = u32::from_str_radix(tail, 16).ok()?;
        let low32 = if negative {
            magnitude.wrapping_neg()
        } else {
            magnitude
        };
        Some(PyHex {
            negative: negative && digits != "0",
            digits,
            low32,
        })
    }
}

const INT_REGS: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0/fp", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

const FP_REGS: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];

/// The word's fields.
#[derive(Clone, Copy)]
struct Insn(u32);

impl Insn {
    fn bits(self, high: u32, low: u32) -> u32 {
        (self.0 >> low) & ((1u32 << (high - low + 1)) - 1)
    }
    fn opcode(self) -> u32 {
        self.bits(6, 0)
    }
    fn funct3(self) -> u32 {
        self.bits(14, 12)
    }
    fn funct7(self) -> u32 {
        self.bits(31, 25)
    }
    fn rd(self) -> usize {
        self.bits(11, 7) as usize
    }
    fn rs1(self) -> usize {
        self.bits(19, 15) as usize
    }
    fn rs2(self) -> usize {
        self.bits(24, 20) as usize
    }
    fn rs3(self) -> usize {
        self.bits(31, 27) as usize
    }
    /// The I immediate, sign-extended to 32 bits.
    fn imm_i(self) -> u32 {
        ((self.0 as i32) >> 20) as u32
    }
    fn imm_s(self) -> u32 {
        (((self.0 as i32) >> 25) << 5) as u32 | self.bits(11, 7)
    }
    fn imm_b(self) -> u32 {
        (((self.0 as i32) >> 31) << 12) as u32
            | self.bits(7, 7) << 11
            | self.bits(30, 25) << 5
            | self.bits(11, 8) << 1
    }
    fn imm_u(self) -> u32 {
        self.0 & 0xffff_f000
    }
    fn imm_j(self) -> u32 {
        (((self.0 as i32) >> 31) << 20) as u32
            | self.bits(19, 12) << 12
            | self.bits(20, 20) << 11
            | self.bits(30, 21) << 1
    }

    fn write(self, value: &PyHex, syntax: Syntax, out: &mut String) -> Result<(), PythonCrash> {
        let (rd, rs1, rs2) = (
            INT_REGS[self.rd()],
            INT_REGS[self.rs1()],
            INT_REGS[self.rs2()],
        );
        let f3 = self.funct3();
        let f7 = self.funct7();
        // `write!` into a String cannot fail.
        let _ = match self.opcode() {
            0b000_0011 => {
                let op = match f3 {
                    0b000 => "lb ",
                    0b001 => "lh ",
                    0b010 => "lw ",
                    0b100 => "lbu ",
                    0b101 => "lhu ",
                    0b110 => "lwu ",
                    _ => "Unknown",
                };
                write!(out, "{op}{rd}, {:#x}({rs1})", self.imm_i())
            }
            0b010_0011 => {
                let op = match f3 {
                    0b000 => "sb ",
                    0b001 => "sh ",
                    0b010 => "sw ",
                    _ => "Unknown",
                };
                match syntax {
                    Syntax::Head => write!(out, "{op}{rs2}, {:#x}({rs1})", self.imm_s()),
                    Syntax::Before2023 => write!(out, "{op}{rs2}, {rs1}, {:#x}", self.imm_s()),
                }
            }
            0b110_0011 => {
                let op = match f3 {
                    0b000 => "beq ",
                    0b001 => "bne ",
                    0b100 => "blt ",
                    0b101 => "bge ",
                    0b110 => "bltu ",
                    0b111 => "bgeu ",
                    _ => "Unknown",
                };
                write!(out, "{op}{rs1}, {rs2}, {:#x}", self.imm_b())
            }
            0b110_0111 => write!(out, "jalr {rd}, {:#x}({rs1})", self.imm_i()),
            0b110_1111 => write!(out, "jal {rd}, {:#x}", self.imm_j()),
            0b001_0011 => {
                let shamt = self.bits(24, 20);
                let (op, imm) = match (f3, f7) {
                    (0b000, _) => ("addi ", self.imm_i()),
                    (0b001, 0b000_0000) => ("slli ", shamt),
                    (0b101, 0b000_0000) => ("srli ", shamt),
                    (0b101, 0b010_0000) => ("srai ", shamt),
                    (0b001 | 0b101, _) => ("Unknown", self.imm_i()),
                    (0b010, _) => ("slti ", self.imm_i()),
                    (0b011, _) => ("sltiu ", self.imm_i()),
                    (0b100, _) => ("xori ", self.imm_i()),
                    (0b110, _) => ("ori ", self.imm_i()),
                    _ => ("andi ", self.imm_i()),
                };
                write!(out, "{op}{rd}, {rs1}, {imm:#x}")
            }
            0b011_0011 => {
                let op = match (f7, f3) {
                    (0b000_0001, _) => [
                        "mul ", "mulh ", "mulhsu ", "mulhu ", "div ", "divu ", "rem ", "remu ",
                    ][f3 as usize],
                    (0b000_0000, 0b000) => "add ",
                    (0b010_0000, 0b000) => "sub ",
                    (0b000_0000, 0b001) => "sll ",
                    (0b000_0000, 0b010) => "slt ",
                    (0b000_0000, 0b011) => "sltu ",
                    (0b000_0000, 0b100) => "xor ",
                    (0b000_0000, 0b101) => "srl ",
                    (0b010_0000, 0b101) => "sra ",
                    (0b000_0000, 0b110) => "or ",
                    (0b000_0000, 0b111) => "and ",
                    _ => "Unknown",
                };
                write!(out, "{op}{rd}, {rs1}, {rs2}")
            }
            0b001_0111 => write!(out, "auipc {rd}, {:#x}", self.imm_u()),
            0b011_0111 => write!(out, "lui {rd}, {:#x}", self.imm_u()),
            0b000_1111 => match f3 {
                0b000 => write!(out, "fence {:08b}", self.bits(27, 20)),
                // RSD writes the trailing space.
                0b001 => write!(out, "fence.i "),
                _ => write!(out, "unknown misc mem"),
            },
            0b111_0011 => self.write_system(rd, rs1, rs2, out),
            opcode if syntax == Syntax::Head && is_fp_opcode(opcode) => {
                return self.write_fp(out);
            }
            _ => {
                let sign = if value.negative { "-" } else { "" };
                write!(out, "unknown {sign}{}", value.digits)
            }
        };
        Ok(())
    }

    fn write_system(self, rd: &str, rs1: &str, rs2: &str, out: &mut String) -> fmt::Result {
        let csr = self.bits(31, 20);
        let zimm = self.bits(19, 15);
        match self.funct3() {
            0b000 => match self.bits(31, 20) {
                0b0000_0000_0000 => write!(out, "ecall"),
                0b0000_0000_0001 => write!(out, "ebreak"),
                0b0000_0000_0010 => write!(out, "uret"),
                0b0001_0000_0010 => write!(out, "sret"),
                0b0011_0000_0010 => write!(out, "mret"),
                0b0001_0000_0101 => write!(out, "wfi"),
                _ if self.funct7() == 0b000_1001 => write!(out, "sfence.vma {rs1}, {rs2}"),
                _ => write!(out, "unknown system"),
            },
            0b001 => write!(out, "csrrw {rd}, {csr:#05x}, {rs1}"),
            0b010 => write!(out, "csrrs {rd}, {csr:#05x}, {rs1}"),
            0b011 => write!(out, "csrrc {rd}, {csr:#05x}, {rs1}"),
            0b101 => write!(out, "csrrwi {rd}, {csr:#05x}, {zimm:#05x}"),
            0b110 => write!(out, "csrrsi {rd}, {csr:#05x}, {zimm:#05x}"),
            0b111 => write!(out, "csrrci {rd}, {csr:#05x}, {zimm:#05x}"),
            _ => write!(out, "unknown system"),
        }
    }

    /// RV32F (HEAD only; reconstructed, see the module documentation).
    fn write_fp(self, out: &mut String) -> Result<(), PythonCrash> {
        let (x_rd, x_rs1) = (INT_REGS[self.rd()], INT_REGS[self.rs1()]);
        let (fd, fs1, fs2, fs3) = (
            FP_REGS[self.rd()],
            FP_REGS[self.rs1()],
            FP_REGS[self.rs2()],
            FP_REGS[self.rs3()],
        );
        let f3 = self.funct3();
        let mut crash = Ok(());
        let _ = match self.opcode() {
            0b000_0111 => {
                let op = if f3 == 0b010 { "flw " } else { "Unknown" };
                write!(out, "{op}{fd}, {:#x}({x_rs1})", self.imm_i())
            }
            0b010_0111 => {
                let op = if f3 == 0b010 { "fsw " } else { "Unknown" };
                write!(out, "{op}{fs2}, {:#x}({x_rs1})", self.imm_s())
            }
            opcode @ (0b100_0011 | 0b100_0111 | 0b100_1011 | 0b100_1111) => {
                let op = match (opcode, self.bits(26, 25)) {
                    (0b100_0011, 0) => "fmadd.s ",
                    (0b100_0111, 0) => "fmsub.s ",
                    (0b100_1011, 0) => "fnmsub.s ",
                    (0b100_1111, 0) => "fnmadd.s ",
                    _ => "Unknown",
                };
                write!(out, "{op}{fd}, {fs1}, {fs2}, {fs3}")
            }
            _ => {
                let rs2 = self.bits(24, 20);
                match (self.funct7(), f3, rs2) {
                    (0b000_0000, _, _) => write!(out, "fadd.s {fd}, {fs1}, {fs2}"),
                    (0b000_0100, _, _) => write!(out, "fsub.s {fd}, {fs1}, {fs2}"),
                    (0b000_1000, _, _) => write!(out, "fmul.s {fd}, {fs1}, {fs2}"),
                    (0b000_1100, _, _) => write!(out, "fdiv.s {fd}, {fs1}, {fs2}"),
                    (0b010_1100, _, _) => write!(out, "fsqrt.s {fd}, {fs1}"),
                    (0b001_0000, 0b000, _) => write!(out, "fsgnj.s {fd}, {fs1}, {fs2}"),
                    (0b001_0000, 0b001, _) => write!(out, "fsgnjn.s {fd}, {fs1}, {fs2}"),
                    (0b001_0000, 0b010, _) => write!(out, "fsgnjx.s {fd}, {fs1}, {fs2}"),
                    (0b001_0000, _, _) => {
                        // RSD's sign-injection branch has no fallback: UnboundLocalError.
                        crash = Err(PythonCrash);
                        write!(out, "Unknown{fd}, {fs1}, {fs2}")
                    }
                    (0b001_0100, 0b000, _) => write!(out, "fmin.s {fd}, {fs1}, {fs2}"),
                    (0b001_0100, 0b001, _) => write!(out, "fmax.s {fd}, {fs1}, {fs2}"),
                    (0b110_0000, _, 0) => write!(out, "fcvt.w.s {x_rd}, {fs1}"),
                    (0b110_0000, _, 1) => write!(out, "fcvt.wu.s {x_rd}, {fs1}"),
                    (0b111_0000, 0b000, 0) => write!(out, "fmv.x.w {x_rd}, {fs1}"),
                    (0b111_0000, 0b001, 0) => write!(out, "fclass.s {x_rd}, {fs1}"),
                    (0b101_0000, 0b010, _) => write!(out, "feq.s {x_rd}, {fs1}, {fs2}"),
                    (0b101_0000, 0b001, _) => write!(out, "flt.s {x_rd}, {fs1}, {fs2}"),
                    (0b101_0000, 0b000, _) => write!(out, "fle.s {x_rd}, {fs1}, {fs2}"),
                    (0b110_1000, _, 0) => write!(out, "fcvt.s.w {fd}, {x_rs1}"),
                    (0b110_1000, _, 1) => write!(out, "fcvt.s.wu {fd}, {x_rs1}"),
                    (0b111_1000, 0b000, 0) => write!(out, "fmv.w.x {fd}, {x_rs1}"),
                    _ => write!(out, "Unknown{fd}, {fs1}, {fs2}"),
                }
            }
        };
        crash
    }
}

/// LOAD-FP, STORE-FP, the four fused multiply-adds and OP-FP.
fn is_fp_opcode(opcode: u32) -> bool {
    matches!(
        opcode,
        0b000_0111 | 0b010_0111 | 0b100_0011 | 0b100_0111 | 0b100_1011 | 0b100_1111 | 0b101_0011
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(code: &str) -> String {
        disassemble(code, Syntax::Head)
    }

    fn old(code: &str) -> String {
        disassemble(code, Syntax::Before2023)
    }

    #[test]
    fn invalid_and_non_hex_words_are_named_as_rsd_names_them() {
        assert_eq!(head(""), "invalid:");
        assert_eq!(head("xxxxxxxx"), "invalid:xxxxxxxx");
        assert_eq!(head("xxxx0013"), "invalid: xxxx0013");
        assert_eq!(head("0x"), "invalid: 0x");
        assert_eq!(head("1__3"), "invalid: 1__3");
        assert_eq!(head("_13"), "invalid: _13");
    }

    #[test]
    fn words_are_read_as_python_int_base_16_reads_them() {
        // Spaces, a `0x` prefix, underscores and upper case are accepted.
        assert_eq!(head(" 0x0000_0013 "), "addi zero, zero, 0x0");
        assert_eq!(head("00000013"), "addi zero, zero, 0x0");
        assert_eq!(head("13"), "addi zero, zero, 0x0");
        assert_eq!(head("FFF00093"), "addi ra, zero, 0xffffffff");
        // An unknown opcode prints the whole value, as Python's `%x`: no padding, any
        // length, with its sign; the opcode is taken from the low 32 bits.
        assert_eq!(head("0000007f"), "unknown 7f");
        assert_eq!(head("1000000013"), "addi zero, zero, 0x0");
        assert_eq!(head("10000007f"), "unknown 10000007f");
        assert_eq!(head("-1"), "unknown -1");
        assert_eq!(head("-0"), "unknown 0");
        // -0xffffffed has the low 32 bits 0x00000013: addi.
        assert_eq!(head("-ffffffed"), "addi zero, zero, 0x0");
    }

    #[test]
    fn loads_print_rd_imm_rs1_and_unknown_widths_glue_unknown() {
        assert_eq!(head("00012603"), "lw a2, 0x0(sp)");
        assert_eq!(head("ff812403"), "lw s0/fp, 0xfffffff8(sp)");
        assert_eq!(head("00058503"), "lb a0, 0x0(a1)");
        assert_eq!(head("00159503"), "lh a0, 0x1(a1)");
        assert_eq!(head("0045c503"), "lbu a0, 0x4(a1)");
        assert_eq!(head("7ff5d503"), "lhu a0, 0x7ff(a1)");
        assert_eq!(head("0005e503"), "lwu a0, 0x0(a1)");
        assert_eq!(head("0005b503"), "Unknowna0, 0x0(a1)");
        assert_eq!(head("0005f503"), "Unknowna0, 0x0(a1)");
        assert_eq!(old("00012603"), "lw a2, 0x0(sp)");
    }

    #[test]
    fn stores_follow_the_syntax_of_the_version() {
        assert_eq!(head("00c12023"), "sw a2, 0x0(sp)");
        assert_eq!(old("00c12023"), "sw a2, sp, 0x0");
        // `sw s0/fp, sp, 0xa8` as in Konata's RSD sample.
        assert_eq!(old("0a812423"), "sw s0/fp, sp, 0xa8");
        assert_eq!(head("0a812423"), "sw s0/fp, 0xa8(sp)");
        assert_eq!(head("fe050fa3"), "sb zero, 0xffffffff(a0)");
        assert_eq!(old("fe050fa3"), "sb zero, a0, 0xffffffff");
        assert_eq!(head("00b51123"), "sh a1, 0x2(a0)");
        assert_eq!(head("00b53023"), "Unknowna1, 0x0(a0)");
        assert_eq!(old("00b53023"), "Unknowna1, a0, 0x0");
    }

    #[test]
    fn branches_print_rs1_rs2_and_the_sign_extended_offset() {
        assert_eq!(head("feb514e3"), "bne a0, a1, 0xffffffe8");
        assert_eq!(head("00b50463"), "beq a0, a1, 0x8");
        assert_eq!(head("00b54463"), "blt a0, a1, 0x8");
        assert_eq!(head("00b55463"), "bge a0, a1, 0x8");
        assert_eq!(head("00b56463"), "bltu a0, a1, 0x8");
        assert_eq!(head("00b57463"), "bgeu a0, a1, 0x8");
        assert_eq!(head("00b52463"), "Unknowna0, a1, 0x8");
        // The largest forward offset, and -4096.
        assert_eq!(head("7eb50fe3"), "beq a0, a1, 0xffe");
        assert_eq!(head("80b50063"), "beq a0, a1, 0xfffff000");
    }

    #[test]
    fn jumps_print_their_offsets_in_hex() {
        assert_eq!(head("0100006f"), "jal zero, 0x10");
        assert_eq!(head("fddff06f"), "jal zero, 0xffffffdc");
        assert_eq!(head("008000ef"), "jal ra, 0x8");
        assert_eq!(head("000080e7"), "jalr ra, 0x0(ra)");
        assert_eq!(head("ffc50067"), "jalr zero, 0xfffffffc(a0)");
    }

    #[test]
    fn immediate_arithmetic_prints_shift_amounts_in_hex() {
        assert_eq!(head("00c00593"), "addi a1, zero, 0xc");
        assert_eq!(head("80000513"), "addi a0, zero, 0xfffff800");
        assert_eq!(head("00a52513"), "slti a0, a0, 0xa");
        assert_eq!(head("00a53513"), "sltiu a0, a0, 0xa");
        assert_eq!(head("fff54513"), "xori a0, a0, 0xffffffff");
        assert_eq!(head("00a56513"), "ori a0, a0, 0xa");
        assert_eq!(head("0ff57513"), "andi a0, a0, 0xff");
        assert_eq!(head("01f51513"), "slli a0, a0, 0x1f");
        assert_eq!(head("00355513"), "srli a0, a0, 0x3");
        assert_eq!(head("40355513"), "srai a0, a0, 0x3");
        // Shifts with a function code RV32I does not have.
        assert_eq!(head("02351513"), "Unknowna0, a0, 0x23");
        assert_eq!(head("60355513"), "Unknowna0, a0, 0x603");
    }

    #[test]
    fn register_arithmetic_and_multiply_divide() {
        let names = [
            ("00c686b3", "add a3, a3, a2"),
            ("40c686b3", "sub a3, a3, a2"),
            ("00c696b3", "sll a3, a3, a2"),
            ("00c6a6b3", "slt a3, a3, a2"),
            ("00c6b6b3", "sltu a3, a3, a2"),
            ("00c6c6b3", "xor a3, a3, a2"),
            ("00c6d6b3", "srl a3, a3, a2"),
            ("40c6d6b3", "sra a3, a3, a2"),
            ("00c6e6b3", "or a3, a3, a2"),
            ("00c6f6b3", "and a3, a3, a2"),
            ("02c686b3", "mul a3, a3, a2"),
            ("02c696b3", "mulh a3, a3, a2"),
            ("02c6a6b3", "mulhsu a3, a3, a2"),
            ("02c6b6b3", "mulhu a3, a3, a2"),
            ("02b6c733", "div a4, a3, a1"),
            ("02b6d733", "divu a4, a3, a1"),
            ("02b6e733", "rem a4, a3, a1"),
            ("02b6f733", "remu a4, a3, a1"),
            ("40c6e6b3", "Unknowna3, a3, a2"),
        ];
        for (code, text) in names {
            assert_eq!(head(code), text, "{code}");
            assert_eq!(old(code), text, "{code}");
        }
    }

    #[test]
    fn upper_immediates_are_printed_shifted() {
        assert_eq!(head("80020137"), "lui sp, 0x80020000");
        assert_eq!(head("00001517"), "auipc a0, 0x1000");
        assert_eq!(head("00000517"), "auipc a0, 0x0");
    }

    #[test]
    fn fences_print_their_bits_and_fence_i_keeps_its_space() {
        assert_eq!(head("0ff0000f"), "fence 11111111");
        assert_eq!(head("0330000f"), "fence 00110011");
        assert_eq!(head("0000100f"), "fence.i ");
        assert_eq!(head("0000200f"), "unknown misc mem");
    }

    #[test]
    fn system_instructions_and_csrs() {
        assert_eq!(head("00000073"), "ecall");
        assert_eq!(head("00100073"), "ebreak");
        assert_eq!(head("00200073"), "uret");
        assert_eq!(head("10200073"), "sret");
        assert_eq!(head("30200073"), "mret");
        assert_eq!(head("10500073"), "wfi");
        assert_eq!(head("12b50073"), "sfence.vma a0, a1");
        assert_eq!(head("00300073"), "unknown system");
        assert_eq!(head("34151073"), "csrrw zero, 0x341, a0");
        assert_eq!(head("30002573"), "csrrs a0, 0x300, zero");
        assert_eq!(head("30053573"), "csrrc a0, 0x300, a0");
        assert_eq!(head("3002d073"), "csrrwi zero, 0x300, 0x005");
        assert_eq!(head("30046073"), "csrrsi zero, 0x300, 0x008");
        assert_eq!(head("300ff073"), "csrrci zero, 0x300, 0x01f");
        assert_eq!(head("30004073"), "unknown system");
    }

    #[test]
    fn floating_point_forms_are_head_only() {
        let names = [
            ("00052007", "flw ft0, 0x0(a0)"),
            ("00a52227", "fsw fa0, 0x4(a0)"),
            ("182081c3", "fmadd.s ft3, ft1, ft2, ft3"),
            ("182081c7", "fmsub.s ft3, ft1, ft2, ft3"),
            ("182081cb", "fnmsub.s ft3, ft1, ft2, ft3"),
            ("182081cf", "fnmadd.s ft3, ft1, ft2, ft3"),
            ("002081d3", "fadd.s ft3, ft1, ft2"),
            ("082081d3", "fsub.s ft3, ft1, ft2"),
            ("102081d3", "fmul.s ft3, ft1, ft2"),
            ("182081d3", "fdiv.s ft3, ft1, ft2"),
            ("580081d3", "fsqrt.s ft3, ft1"),
            ("202081d3", "fsgnj.s ft3, ft1, ft2"),
            ("202091d3", "fsgnjn.s ft3, ft1, ft2"),
            ("2020a1d3", "fsgnjx.s ft3, ft1, ft2"),
            ("282081d3", "fmin.s ft3, ft1, ft2"),
            ("282091d3", "fmax.s ft3, ft1, ft2"),
            ("c0008553", "fcvt.w.s a0, ft1"),
            ("c0108553", "fcvt.wu.s a0, ft1"),
            ("e0008553", "fmv.x.w a0, ft1"),
            ("e0009553", "fclass.s a0, ft1"),
            ("a020a553", "feq.s a0, ft1, ft2"),
            ("a0209553", "flt.s a0, ft1, ft2"),
            ("a0208553", "fle.s a0, ft1, ft2"),
            ("d00500d3", "fcvt.s.w ft1, a0"),
            ("d01500d3", "fcvt.s.wu ft1, a0"),
            ("f00500d3", "fmv.w.x ft1, a0"),
            ("fe2081d3", "Unknownft3, ft1, ft2"),
            ("00053007", "Unknownft0, 0x0(a0)"),
        ];
        for (code, text) in names {
            assert_eq!(head(code), text, "{code}");
            // The older disassembler knows no floating point.
            let unknown = format!("unknown {}", code.trim_start_matches('0'));
            assert_eq!(old(code), unknown, "{code}");
        }
    }

    #[test]
    fn the_sign_injection_case_rsd_crashes_on_is_reported() {
        let mut out = String::new();
        assert_eq!(
            disassemble_into("2020b1d3", Syntax::Head, &mut out),
            Err(PythonCrash)
        );
        assert_eq!(out, "Unknownft3, ft1, ft2");
        // The older disassembler has no floating point, so no crash either.
        let mut out = String::new();
        assert_eq!(
            disassemble_into("2020b1d3", Syntax::Before2023, &mut out),
            Ok(())
        );
        assert_eq!(out, "unknown 2020b1d3");
    }
}
