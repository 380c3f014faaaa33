//! This project's reading of a left-pane label: the instruction's address and its mnemonic,
//! and the kind of instruction the mnemonic names (`docs/analysis.md`, "Classified").
//!
//! A label is read as `[PC] [:] MNEMONIC OPERANDS…`:
//!
//! - the address is a hexadecimal number at the start of the label (after white space and an
//!   optional `PC`): with `0x`, any number of digits; without, at least four digits of which
//!   one is a decimal digit (so that `add` or `beef` are not read as addresses). A gem5
//!   micro-op number (`.3`) after it is skipped; then `:` or white space must follow;
//! - the mnemonic is the first word after the address (and its colon), lower-cased, a
//!   compressed `c.` prefix removed. gem5 x86 labels (`MOV_M_R : st …`) give their macro-op
//!   name; the micro-op after the second colon is read when the macro-op name has an `_`.

use std::borrow::Cow;

use super::konata::{BRANCH, JUMP, STORE};

/// The longest label text kept as the key of a hot spot without an address.
pub const MAX_KEY_TEXT: usize = 64;

/// An instruction's address, when its label starts with one.
#[cfg(test)]
fn address(label: &str) -> Option<u64> {
    address_and_rest(label).map(|(pc, _)| pc)
}

/// The address and the text after it (and after its colon).
fn address_and_rest(label: &str) -> Option<(u64, &str)> {
    let mut text = label.trim_start();
    if let Some(rest) = text
        .strip_prefix("PC")
        .or_else(|| text.strip_prefix("pc"))
        .filter(|rest| rest.starts_with(char::is_whitespace))
    {
        text = rest.trim_start();
    }
    let (digits, prefixed) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let len = digits.bytes().take_while(u8::is_ascii_hexdigit).count();
    let hex = &digits[..len];
    if len == 0 || len > 16 {
        return None;
    }
    if !prefixed && (len < 4 || !hex.bytes().any(|b| b.is_ascii_digit())) {
        return None;
    }
    let mut rest = &digits[len..];
    // A gem5 micro-op number.
    if let Some(after) = rest.strip_prefix('.') {
        let n = after.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            rest = &after[n..];
        }
    }
    if !(rest.is_empty() || rest.starts_with(':') || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let pc = u64::from_str_radix(hex, 16).ok()?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    Some((pc, rest))
}

/// The hot-spot key and the kind bits of a label (see [`kinds`]), from one reading of its
/// address: for a gem5 x86 micro-op, a conditional jump macro-op (`J…` but `JMP…`) whose
/// micro-op writes the instruction pointer (`wrip`) is a branch, `JMP…`, `CALL…` and `RET…`
/// ones are jumps, and a micro-op `st…` is a store.
pub(crate) fn key_and_kinds(label: &str) -> (Key, u8) {
    let (key, rest) = match address_and_rest(label) {
        Some((pc, rest)) => (Key::Pc(pc), rest),
        None => (Key::text(label), label.trim_start()),
    };
    (key, rest_kinds(rest))
}

/// The kind bits of the text after a label's address.
fn rest_kinds(rest: &str) -> u8 {
    // Labels are read once per instruction: the words are lower-cased on the stack.
    let mut word_buf = [0; 32];
    let mut micro_buf = [0; 32];
    let word = rest.split_whitespace().next().unwrap_or("");
    let word = lower(word.trim_end_matches([',', ':']), &mut word_buf);
    // gem5 x86: `MACRO_OP : micro-op operands`.
    if word.contains('_') {
        let micro = rest
            .split_once(':')
            .and_then(|(_, micro)| micro.split_whitespace().next());
        return match micro {
            Some(micro) => micro_op_kinds(&word, &lower(micro, &mut micro_buf)),
            None => kinds(&word),
        };
    }
    kinds(word.strip_prefix("c.").unwrap_or(&word))
}

/// The kind bits of a gem5 x86 micro-op of macro-op `macro_op` (both lower-cased).
fn micro_op_kinds(macro_op: &str, micro: &str) -> u8 {
    let mut kinds = 0;
    if micro.starts_with("wrip") {
        if macro_op.starts_with("jmp")
            || macro_op.starts_with("call")
            || macro_op.starts_with("ret")
        {
            kinds |= JUMP;
        } else if macro_op.starts_with('j') || macro_op.starts_with("loop") {
            kinds |= BRANCH;
        }
    }
    if micro.starts_with("st") {
        kinds |= STORE;
    }
    kinds
}

/// `word` lower-cased (ASCII), in `buf` when it fits.
pub(crate) fn lower<'a>(word: &'a str, buf: &'a mut [u8; 32]) -> Cow<'a, str> {
    if !word.bytes().any(|b| b.is_ascii_uppercase()) {
        return Cow::Borrowed(word);
    }
    if let Some(bytes) = buf.get_mut(..word.len()) {
        bytes.copy_from_slice(word.as_bytes());
        bytes.make_ascii_lowercase();
        // Lower-casing ASCII keeps UTF-8 valid.
        if let Ok(lowered) = std::str::from_utf8(bytes) {
            return Cow::Borrowed(lowered);
        }
    }
    Cow::Owned(word.to_ascii_lowercase())
}

/// The kind bits of a mnemonic: conditional branch, jump (unconditional, call, return),
/// store. The sets are RISC-V's, AArch64's and ARM's, MIPS's and x86's (and gem5's x86
/// micro-ops), listed in `docs/analysis.md`.
pub(crate) fn kinds(mnemonic: &str) -> u8 {
    // Matches, not list scans: a label is classified once per instruction, and a `match`
    // on strings compiles to a switch on the length and a comparison or two.
    let m = mnemonic;
    let listed_jump = matches!(
        m,
        "j" | "jal"
            | "jalr"
            | "jr"
            | "ret"
            | "call"
            | "tail"
            | "b"
            | "bl"
            | "blx"
            | "bx"
            | "br"
            | "blr"
            | "jmp"
            | "jmpq"
            | "callq"
            | "retq"
            | "retn"
    );
    let branch = matches!(
        m,
        // RISC-V and pseudo-instructions; MIPS.
        "beq" | "bne" | "blt" | "bge" | "bltu" | "bgeu" | "beqz" | "bnez" | "blez" | "bgez"
            | "bltz" | "bgtz" | "bgt" | "ble" | "bgtu" | "bleu" | "bltzal" | "bgezal"
            // ARM (A32 condition codes).
            | "bcs" | "bcc" | "bmi" | "bpl" | "bvs" | "bvc" | "bhi" | "bls" | "bhs" | "blo"
            | "cbz" | "cbnz" | "tbz" | "tbnz"
            // x86 loops.
            | "loop" | "loope" | "loopne" | "loopz" | "loopnz" | "jcxz" | "jecxz" | "jrcxz"
    ) || m.starts_with("b.")
        || (m.starts_with('j') && m.len() > 1 && !m.starts_with("jmp") && !listed_jump);
    let mut kinds = 0;
    if branch {
        kinds |= BRANCH;
    } else if listed_jump {
        kinds |= JUMP;
    }
    let store = matches!(
        m,
        "sb" | "sh"
            | "sw"
            | "sd"
            | "sq"
            | "fsw"
            | "fsd"
            | "fsh"
            | "fsq"
            | "swsp"
            | "sdsp"
            | "fswsp"
            | "fsdsp"
            | "sbu"
            | "swl"
            | "swr"
            | "sdc1"
            | "swc1"
            | "sc"
    ) || m.starts_with("sc.")
        || m.starts_with("amo")
        || (m.starts_with("st") && !matches!(m, "sti" | "stc" | "std" | "stac"));
    if store {
        kinds |= STORE;
    }
    kinds
}

/// The key of a hot spot: the address, or the label text (trimmed, at most
/// [`MAX_KEY_TEXT`] bytes, cut at a character boundary).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    /// The label's address.
    Pc(u64),
    /// The label's text, for labels without one.
    Text(Box<str>),
}

impl Key {
    /// The key of a label without an address.
    fn text(label: &str) -> Key {
        Key::Text(cut(label.trim(), MAX_KEY_TEXT).into())
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first implementation (a `String` per word), which [`key_and_kinds`] must agree
    /// with.
    mod reference {
        use super::super::*;

        pub(super) fn mnemonic(label: &str) -> (String, Option<String>) {
            let rest = match address_and_rest(label) {
                Some((_, rest)) => rest,
                None => label.trim_start(),
            };
            let word: &str = rest.split_whitespace().next().unwrap_or("");
            let word = word.trim_end_matches([',', ':']).to_ascii_lowercase();
            if word.contains('_') {
                let micro = rest
                    .split_once(':')
                    .and_then(|(_, micro)| micro.split_whitespace().next())
                    .map(str::to_ascii_lowercase);
                return (word, micro);
            }
            match word.strip_prefix("c.") {
                Some(rest) => (rest.to_owned(), None),
                None => (word, None),
            }
        }

        // The list-based classification the matches replaced.
        pub(super) fn kinds(mnemonic: &str) -> u8 {
            const BRANCHES: &[&str] = &[
                // RISC-V and pseudo-instructions; MIPS.
                "beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz",
                "bgtz", "bgt", "ble", "bgtu", "bleu", "bltzal",
                "bgezal", // ARM (A32 condition codes).
                "bcs", "bcc", "bmi", "bpl", "bvs", "bvc", "bhi", "bls", "bhs", "blo", "cbz",
                "cbnz", "tbz", "tbnz", // x86 loops.
                "loop", "loope", "loopne", "loopz", "loopnz", "jcxz", "jecxz", "jrcxz",
            ];
            const JUMPS: &[&str] = &[
                "j", "jal", "jalr", "jr", "ret", "call", "tail", "b", "bl", "blx", "bx", "br",
                "blr", "jmp", "jmpq", "callq", "retq", "retn",
            ];
            const STORES: &[&str] = &[
                "sb", "sh", "sw", "sd", "sq", "fsw", "fsd", "fsh", "fsq", "swsp", "sdsp", "fswsp",
                "fsdsp", "sbu", "swl", "swr", "sdc1", "swc1", "sc",
            ];
            const NOT_STORES: &[&str] = &["sti", "stc", "std", "stac"];
            let m = mnemonic;
            let mut kinds = 0;
            if BRANCHES.contains(&m)
                || m.starts_with("b.")
                || (m.starts_with('j')
                    && m.len() > 1
                    && !m.starts_with("jmp")
                    && !JUMPS.contains(&m))
            {
                kinds |= BRANCH;
            } else if JUMPS.contains(&m) {
                kinds |= JUMP;
            }
            if STORES.contains(&m)
                || m.starts_with("sc.")
                || m.starts_with("amo")
                || (m.starts_with("st") && !NOT_STORES.contains(&m))
            {
                kinds |= STORE;
            }
            kinds
        }

        pub(super) fn label_kinds(label: &str) -> u8 {
            match mnemonic(label) {
                (macro_op, Some(micro)) => {
                    let writes_ip = micro.starts_with("wrip");
                    let mut kinds = 0;
                    if writes_ip {
                        if macro_op.starts_with("jmp")
                            || macro_op.starts_with("call")
                            || macro_op.starts_with("ret")
                        {
                            kinds |= JUMP;
                        } else if macro_op.starts_with('j') || macro_op.starts_with("loop") {
                            kinds |= BRANCH;
                        }
                    }
                    if micro.starts_with("st") {
                        kinds |= STORE;
                    }
                    kinds
                }
                (word, None) => kinds(&word),
            }
        }

        pub(super) fn key_of(label: &str) -> Key {
            match address(label) {
                Some(pc) => Key::Pc(pc),
                None => Key::Text(cut(label.trim(), MAX_KEY_TEXT).into()),
            }
        }
    }

    fn label_kinds(label: &str) -> u8 {
        key_and_kinds(label).1
    }

    #[test]
    fn kinds_agree_with_the_lists() {
        let listed = [
            "beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz",
            "bgtz", "bgt", "ble", "bgtu", "bleu", "bltzal", "bgezal", "bcs", "bcc", "bmi", "bpl",
            "bvs", "bvc", "bhi", "bls", "bhs", "blo", "cbz", "cbnz", "tbz", "tbnz", "loop",
            "loope", "loopne", "loopz", "loopnz", "jcxz", "jecxz", "jrcxz", "j", "jal", "jalr",
            "jr", "ret", "call", "tail", "b", "bl", "blx", "bx", "br", "blr", "jmp", "jmpq",
            "callq", "retq", "retn", "sb", "sh", "sw", "sd", "sq", "fsw", "fsd", "fsh", "fsq",
            "swsp", "sdsp", "fswsp", "fsdsp", "sbu", "swl", "swr", "sdc1", "swc1", "sc", "sti",
            "stc", "std", "stac", "b.ne", "sc.w", "amoadd.w", "st", "str", "jne", "jmpl", "",
            "add", "lw", "s", "a",
        ];
        for word in listed {
            // Each word, its prefixes and a few extensions.
            let mut variants: Vec<String> =
                (0..=word.len()).map(|n| word[..n].to_owned()).collect();
            for tail in ["", "x", "1", ".", "q", "z"] {
                variants.push(format!("{word}{tail}"));
            }
            for variant in variants {
                assert_eq!(kinds(&variant), reference::kinds(&variant), "{variant:?}");
            }
        }
    }

    #[test]
    fn agrees_with_the_reference() {
        let words = [
            "0x80001a2c:",
            "0x400078.3",
            ":",
            "PC",
            "pc",
            "12000d918",
            "BEQ",
            "beq",
            "c.j",
            "C.SDSP",
            "JNZ_I",
            "jnz_i",
            "CALL_NEAR_I",
            "RET_NEAR",
            "JMP_I",
            "LOOP_I",
            "MOV_M_R",
            "wrip",
            "WRIP",
            "st",
            "STUL",
            "limm",
            "jal",
            "Jal,",
            "amoadd.w",
            "sc.w",
            "b.ne",
            "str",
            "std",
            "a0,",
            "t1,",
            "SS:[rsp]",
            "é",
            "ÉST",
            "\\n",
            "\t",
            "  ",
            "x",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJ_K",
            "stabcdefghijklmnopqrstuvwxyzabcdefghi",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..100_000 {
            let mut label = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 6) as usize;
            for i in 0..n {
                let pick = (seed >> (8 + 8 * i)) as usize % words.len();
                label.push_str(words[pick]);
                label.push(if (seed >> (50 + i)) & 1 == 0 {
                    ' '
                } else {
                    ':'
                });
            }
            assert_eq!(
                key_and_kinds(&label),
                (reference::key_of(&label), reference::label_kinds(&label)),
                "{label:?}"
            );
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(address("0x80001a2c: addi a0, a0, 1"), Some(0x8000_1a2c));
        assert_eq!(address("12000d918 iBC(r17)"), Some(0x1_2000_d918));
        assert_eq!(address("PC 00000004"), Some(4));
        assert_eq!(address("0x00000008: "), Some(8));
        assert_eq!(
            address("0x400078.3 : MOV_R_I : limm rax, 0x3c"),
            Some(0x40_0078)
        );
        assert_eq!(address("add x1, x2"), None);
        assert_eq!(address("beef x1"), None, "hex letters only: a word");
        assert_eq!(address("0x12g: x"), None);
        assert_eq!(address("decoding"), None);
        assert_eq!(address(""), None);
    }

    #[test]
    fn mnemonics_and_kinds() {
        let k = label_kinds;
        assert_eq!(k("0x80000010: beq a0, a1, 8"), BRANCH);
        assert_eq!(k("0x80000010: bgeu a0, a1, 8"), BRANCH);
        assert_eq!(k("beq a0, a1, 8"), BRANCH);
        assert_eq!(k("0x1000: jal ra, begin"), JUMP);
        assert_eq!(k("0x1000: c.j 0x20"), JUMP);
        assert_eq!(k("0x1000: ret"), JUMP);
        assert_eq!(k("0x10: ecall"), 0);
        assert_eq!(k("0x10: sd a0, 8(sp)"), STORE);
        assert_eq!(k("0x10: c.sdsp ra, 8(sp)"), STORE);
        assert_eq!(k("0x10: sc.w t0, a1, (a0)"), STORE);
        assert_eq!(k("0x10: amoadd.w a0, a1, (a2)"), STORE);
        assert_eq!(k("0x10: srai a0, a0, 3"), 0);
        assert_eq!(k("0x10: sha256sum0 a0, a1"), 0);
        assert_eq!(k("str x0, [sp, #8]"), STORE);
        assert_eq!(k("b.ne 0x40"), BRANCH);
        assert_eq!(k("bl printf"), JUMP);
        assert_eq!(k("jne 0x40"), BRANCH);
        assert_eq!(k("jmp 0x40"), JUMP);
        assert_eq!(k("0x400078.0 : JNZ_I : wrip t1, t2"), BRANCH);
        assert_eq!(k("0x400078.0 : JNZ_I : limm t1, 0x4"), 0);
        assert_eq!(k("0x400078.2 : CALL_NEAR_I : wrip , t7, t1"), JUMP);
        assert_eq!(k("0x400078.2 : CALL_NEAR_I : st t1, SS:[rsp]"), STORE);
        assert_eq!(k("0x400078.1 : MOV_M_R : st rax, DS:[rsp]"), STORE);
        assert_eq!(k("0x400078.1 : MOV_R_R : mov rax, rax, rbx"), 0);
        assert_eq!(k("std"), 0);
        assert_eq!(
            reference::mnemonic("  0x10:  ADDI a0"),
            ("addi".to_owned(), None)
        );
        assert_eq!(k("  0x10:  SD a0"), STORE);
    }

    #[test]
    fn keys() {
        assert_eq!(key_and_kinds("0x10: add").0, Key::Pc(16));
        assert_eq!(
            key_and_kinds("  i-cache-miss  ").0,
            Key::Text("i-cache-miss".into())
        );
        let long = "é".repeat(100);
        match key_and_kinds(&long).0 {
            Key::Text(text) => assert_eq!(text.len(), 64),
            other => panic!("{other:?}"),
        }
    }
}
