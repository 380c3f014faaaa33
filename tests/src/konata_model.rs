//! A model of what the Konata viewer draws for a Kanata log.
//!
//! Ground truth is Konata's own source (repository `shioyadan/Konata`), read for this model:
//!
//! * `src/core/onikiri_parser.ts`, class `OnikiriParser` (the current Kanata parser, the
//!   version whose `parseLine_` turns a `TraceCommandError` into a warning and carries on);
//! * `src/core/file_line_reader.ts`, `FileLineReader.lines` (UTF-8 decoding, line split);
//! * `src/core/op_store.ts`, `ArrayOpStore` (which file ids become rows);
//! * `src/core/model.ts` (`Op`, `Lane`, `Stage`, `StageLevelMap`: defaults and colour levels);
//! * `src/core/konata_renderer.ts`, `KonataRenderer.drawOp_`, `drawLane_` and
//!   `drawDependency_` (what is drawn from the parsed data).
//!
//! Konata's tests `test/onikiri_parser.test.js` and `test/web_onikiri_parser.test.ts`
//! (fixture `test/fixtures/kanata-basic.txt`) are mirrored by this module's unit tests.
//!
//! Konata holds every number as a JavaScript double. The model does too while parsing, so
//! comparisons such as "flush only when the type is exactly 1" behave as in Konata; the
//! [`View`] then reports integers. A number that is not an integer (`1.5`) or lies beyond
//! ±2^53 cannot be represented faithfully: the lines holding one are listed in
//! [`View::inexact_lines`] and the values are truncated toward zero.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{self, Read};
use std::path::Path;

// ---------------------------------------------------------------------------------------
// Public data model
// ---------------------------------------------------------------------------------------

/// A warning Konata prints while it parses (it keeps loading).
///
/// Konata prints only the first nine to the console; the model keeps all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line number (line 1 is the header), as Konata's `currentLine_`.
    pub line: usize,
    /// Konata's message text, e.g. `Unknown command: #` (`OnikiriParser.warning_`).
    pub message: String,
}

/// How an instruction left the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetireKind {
    /// `R` whose type is anything but exactly 1 (`parseRetireCommand_`: `=== 1`).
    Retired,
    /// `R` whose type is exactly 1 (after trimming and JS `Number()`: `1`, ` 1`, `1.0`, `0x1`).
    Flushed,
}

/// The effect of the last `R` Konata applied to an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RetireState {
    /// Retired or flushed.
    pub kind: RetireKind,
    /// Field 2 of `R` (Konata's `rid`).
    pub retire_id: i64,
    /// The cycle of the `R` (Konata's `retiredCycle`).
    pub cycle: i64,
}

/// One stage of one lane of one instruction, as Konata draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageBox {
    /// Stage name, trimmed (`parseName_`).
    pub name: String,
    /// First cycle of the box.
    pub start: i64,
    /// Cycle where the box ends as drawn (exclusive). Konata's `endCycle` 0 means "still
    /// open", and `drawLane_` draws such a stage up to the instruction's
    /// [`Insn::retired_cycle`]; this field has that substitution applied.
    pub end: i64,
    /// Konata's raw `endCycle` (0 = never closed, or closed at cycle 0).
    pub raw_end: i64,
    /// Type-2 labels attached to this stage, joined with a line break between two `L`
    /// commands (`parseLabelCommand_`), with the `\n` escape unescaped when Konata did.
    pub notes: String,
}

impl StageBox {
    /// Whether the box covers at least one cycle. `drawLane_` skips a stage whose end equals
    /// its start. (A box whose end lies before its start, possible only with a negative `C`
    /// or an `E` in an earlier cycle, is drawn by Konata as a 1-pixel sliver; this returns
    /// `false` for it.)
    pub fn visible(&self) -> bool {
        self.end > self.start
    }

    /// Length in cycles as drawn (`end - start`, may be zero or negative).
    pub fn len(&self) -> i64 {
        self.end - self.start
    }

    /// Whether the box is empty (zero or negative length).
    pub fn is_empty(&self) -> bool {
        !self.visible()
    }

    /// Whether Konata regards the stage as still open (`endCycle === 0`).
    pub fn open_marker(&self) -> bool {
        self.raw_end == 0
    }
}

/// One `W` relation as Konata recorded it (`Dependency` in `model.ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dependency {
    /// File id of the other instruction (the producer in [`Insn::producers`]).
    pub other: i64,
    /// Field 3 of `W`.
    pub kind: i64,
    /// Cycle of the `W` command (recorded by Konata, not used for drawing).
    pub cycle: i64,
}

/// A dependency arrow that `drawDependency_` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arrow {
    /// File id (= row) of the consumer.
    pub consumer: i64,
    /// File id (= row) of the producer.
    pub producer: i64,
    /// The `W` type (Konata draws every type alike).
    pub kind: i64,
    /// Cycle where the arrow starts: the producer's `prodCycle`, i.e. one less than the
    /// cycle where its last `X`-named stage was closed.
    pub from_cycle: i64,
    /// Cycle where the arrow ends: the consumer's `consCycle`, the start of its last
    /// `X`-named stage.
    pub to_cycle: i64,
}

/// One instruction Konata draws (one row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    /// File id from `I`; Konata draws the instruction in row `file_id`.
    pub file_id: i64,
    /// Simulator id (field 2 of `I`, Konata's `gid`), parsed as a number.
    pub sim_id: i64,
    /// Thread id (field 3 of `I`, Konata's `tid`).
    pub thread: i64,
    /// Line of the `I` command.
    pub line: usize,
    /// Cycle of the `I` command (`fetchedCycle`).
    pub fetched_cycle: i64,
    /// Where the instruction's drawing ends (`retiredCycle`): the cycle of its last `R`, or
    /// the last cycle + 1 for an instruction that never got an `R` (`finish_`).
    pub retired_cycle: i64,
    /// The last `R` applied, or `None` if the instruction reached the end of file alive.
    pub retired: Option<RetireState>,
    /// Type-0 label (left pane), fragments concatenated.
    pub label_name: String,
    /// Type-1 label (mouse-over detail), fragments concatenated.
    pub label_detail: String,
    /// Stage boxes per lane, keyed by the lane's trimmed TEXT (`"0"` and `"00"` differ).
    /// Konata draws lanes in sorted name order.
    pub lanes: BTreeMap<String, Vec<StageBox>>,
    /// Colour depth per lane (Konata's `Lane.level`): the number of stage closes, by `S` or
    /// `E`, that left the stage longer than zero cycles. `R` never raises it.
    pub lane_levels: BTreeMap<String, u32>,
    /// `W` relations where this instruction is the consumer (`prods`).
    pub producers: Vec<Dependency>,
    /// `W` relations where this instruction is the producer (`cons`).
    pub consumers: Vec<Dependency>,
    /// Start cycle of the last `X`-named stage started (`consCycle`), if any.
    pub cons_cycle: Option<i64>,
    /// Last `X` close cycle minus one (`prodCycle`), if any.
    pub prod_cycle: Option<i64>,
}

impl Insn {
    /// Whether the instruction reached the end of file without an `R` (Konata's `eof`).
    pub fn eof(&self) -> bool {
        self.retired.is_none()
    }

    /// Whether Konata draws anything for the instruction: `drawOp_` returns early when
    /// `retiredCycle === fetchedCycle`.
    pub fn has_body(&self) -> bool {
        self.retired_cycle != self.fetched_cycle
    }

    /// The stage boxes of one lane (empty if the lane does not exist).
    pub fn lane(&self, lane: &str) -> &[StageBox] {
        self.lanes.get(lane).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The boxes of one lane that Konata actually paints (see [`StageBox::visible`] and
    /// [`Insn::has_body`]).
    pub fn visible_boxes(&self, lane: &str) -> Vec<&StageBox> {
        if !self.has_body() {
            return Vec::new();
        }
        self.lane(lane).iter().filter(|s| s.visible()).collect()
    }
}

/// Colour level of a stage name in a lane (`StageLevelMap` in `model.ts`). With the default
/// "Auto" colour scheme the hue of a stage depends on `appearance` and the lane's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLevel {
    /// Stage name.
    pub name: String,
    /// Smallest lane level seen when a stage of this name started.
    pub appearance: u32,
    /// Index of first appearance of this name in the lane ("Unique" colour scheme).
    pub unique: u32,
}

/// An instruction Konata parsed but never draws.
#[derive(Debug, Clone, PartialEq)]
pub struct UndrawnOp {
    /// The file id as Konata holds it (a double).
    pub id: f64,
    /// Line of its `I` command.
    pub line: usize,
    /// Why it is not drawn.
    pub reason: &'static str,
}

/// Everything Konata would draw for a log, plus its warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Drawn instructions, in row order. Konata's row is the file id itself
    /// (`ArrayOpStore` indexes ops by id and the renderer draws row `y` from `getOp(y)`), so
    /// this is ascending file id, which is the order of `I` only when ids are given in
    /// increasing order; ids that were skipped leave empty rows.
    pub insns: Vec<Insn>,
    /// Warnings, in line order.
    pub warnings: Vec<Warning>,
    /// Konata's last cycle (`lastCycle`): the sum of all `C` deltas (time starts at 0).
    pub last_cycle: i64,
    /// Dependency arrows Konata draws, consumers in row order.
    pub arrows: Vec<Arrow>,
    /// Lane names in the order they first appeared (`laneNames_`).
    pub lane_names: Vec<String>,
    /// Colour levels per lane, stage names in order of first appearance.
    pub stage_levels: BTreeMap<String, Vec<StageLevel>>,
    /// Konata's `lastID` (largest stored file id, -1 if none).
    pub last_id: i64,
    /// Konata's `lastRID` (largest retire id of a retired, not flushed, instruction).
    pub last_rid: i64,
    /// Konata's `opCount` (instructions stored, drawn or not).
    pub op_count: usize,
    /// Instructions Konata parsed but never draws (negative or non-integer file ids).
    pub undrawn: Vec<UndrawnOp>,
    /// Lines with a number the model could not represent exactly (see the module docs).
    pub inexact_lines: Vec<usize>,
}

impl View {
    /// The drawn instruction with this file id.
    pub fn insn(&self, file_id: i64) -> Option<&Insn> {
        self.insns
            .binary_search_by_key(&file_id, |i| i.file_id)
            .ok()
            .map(|i| &self.insns[i])
    }

    /// Warnings whose message contains `needle`.
    pub fn warnings_containing(&self, needle: &str) -> Vec<&Warning> {
        self.warnings
            .iter()
            .filter(|w| w.message.contains(needle))
            .collect()
    }
}

/// Why Konata refuses a file outright.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No line at all ("The selected file is empty.").
    Empty,
    /// Line 1 does not start with `Kanata` ("The selected file is not a Kanata trace.").
    NotKanata,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Empty => f.write_str("The selected file is empty."),
            LoadError::NotKanata => f.write_str("The selected file is not a Kanata trace."),
        }
    }
}

impl std::error::Error for LoadError {}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

/// Parses an uncompressed Kanata log as Konata does.
///
/// # Panics
///
/// If Konata would refuse the file (see [`try_load`]).
pub fn load(text: &[u8]) -> View {
    match try_load(text) {
        Ok(view) => view,
        Err(e) => panic!("Konata refuses this file: {e}"),
    }
}

/// Parses an uncompressed Kanata log as Konata does, or says why Konata refuses it.
pub fn try_load(text: &[u8]) -> Result<View, LoadError> {
    let text = decode(text);
    let mut parser = Parser::new();
    let mut any = false;
    for line in lines(&text) {
        any = true;
        parser.parse_line(line)?;
    }
    if !any {
        return Err(LoadError::Empty);
    }
    parser.finish();
    Ok(parser.into_view())
}

/// Reads a file, decompresses it if it starts with the gzip or zstd magic bytes, and
/// parses it with [`try_load`]. A file Konata refuses is an `InvalidData` error.
///
/// (Konata itself picks gzip by the `.gz` extension; magic bytes are used here so that
/// tests need not care about file names.)
pub fn load_file(path: impl AsRef<Path>) -> io::Result<View> {
    let raw = std::fs::read(path)?;
    let text = decompress(&raw)?;
    try_load(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Decompresses gzip (every member) or zstd (every frame) data recognized by its magic
/// bytes; anything else is returned unchanged.
pub fn decompress(raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(raw).read_to_end(&mut out)?;
    } else if raw.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::stream::read::Decoder::new(raw)?.read_to_end(&mut out)?;
    } else {
        out.extend_from_slice(raw);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Text decoding and JavaScript string/number semantics
// ---------------------------------------------------------------------------------------

/// `FileLineReader.lines`: `TextDecoder("utf-8")` drops a leading BOM and turns invalid
/// bytes into U+FFFD (Rust's lossy decoding follows the same WHATWG substitution rule).
fn decode(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    match s.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => s.into_owned(),
    }
}

/// `FileLineReader.lines`: split on LF, strip one trailing CR from each line; the text after
/// the last LF is a line only if it is not empty (a lone final CR yields an empty line).
fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find('\n') {
        let line = &rest[..pos];
        out.push(line.strip_suffix('\r').unwrap_or(line));
        rest = &rest[pos + 1..];
    }
    if !rest.is_empty() {
        out.push(rest.strip_suffix('\r').unwrap_or(rest));
    }
    out
}

/// ECMAScript WhiteSpace or LineTerminator, the set `String.prototype.trim` removes.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JavaScript `Number(s)` for an already trimmed, non-empty string: decimal literals with
/// optional sign, fraction and exponent, `Infinity`, and unsigned `0x`/`0o`/`0b` integers.
/// Anything else is NaN.
fn js_number(s: &str) -> f64 {
    let radix = match s.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 0,
    };
    if radix != 0 {
        let digits = &s[2..];
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return f64::NAN;
        }
        return match u128::from_str_radix(digits, radix) {
            Ok(v) => v as f64,
            Err(_) => digits.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            }),
        };
    }
    let (negative, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if body == "Infinity" {
        return if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    if !is_decimal_literal(body) {
        return f64::NAN;
    }
    let v: f64 = body.parse().unwrap_or(f64::NAN);
    if negative {
        -v
    } else {
        v
    }
}

/// `StrUnsignedDecimalLiteral` without `Infinity`: `1`, `1.`, `.5`, `1.5e-3`.
fn is_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// `String(number)` for the numbers that appear in messages (exact for integers below
/// 1e21, which is all a Kanata log normally holds).
fn js_fmt(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e21 {
        format!("{}", v as i128)
    } else {
        format!("{v}")
    }
}

/// Map key with JavaScript `SameValueZero` semantics (`-0` and `0` are one key).
fn key(v: f64) -> u64 {
    if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

const MAX_SAFE: f64 = 9_007_199_254_740_992.0;

fn exact_integer(v: f64) -> bool {
    v.fract() == 0.0 && v.abs() <= MAX_SAFE
}

// ---------------------------------------------------------------------------------------
// The parser (a line-by-line replica of OnikiriParser in src/core/onikiri_parser.ts)
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct StageState {
    name: String,
    labels: String,
    start: f64,
    end: f64,
}

#[derive(Debug, Clone, Default)]
struct LaneState {
    level: u32,
    stages: Vec<StageState>,
}

#[derive(Debug, Clone, Copy)]
struct DepState {
    op_id: f64,
    kind: f64,
    cycle: f64,
}

/// Konata's `Op` (`model.ts`), with the same defaults.
#[derive(Debug, Clone)]
struct OpState {
    id: f64,
    gid: f64,
    tid: f64,
    rid: f64,
    retired: bool,
    flush: bool,
    /// Insertion-ordered `Map<string, Lane>`.
    lanes: Vec<(String, LaneState)>,
    fetched_cycle: f64,
    retired_cycle: f64,
    line: usize,
    label_name: String,
    label_detail: String,
    /// `lastParsedStage`: (lane index, stage index).
    last_stage: Option<(usize, usize)>,
    prods: Vec<DepState>,
    cons: Vec<DepState>,
    prod_cycle: f64,
    cons_cycle: f64,
}

impl OpState {
    fn lane_index(&self, name: &str) -> Option<usize> {
        self.lanes.iter().position(|(n, _)| n == name)
    }
}

/// One `StageLevelMap` entry: (stage name, appearance, unique).
type LevelEntry = (String, u32, u32);

/// A command error: `OnikiriParser.fail_` throws `TraceCommandError`, which `parseLine_`
/// turns into a warning for the line (the rest of the command is not applied).
type CmdResult = Result<(), String>;

struct Parser {
    ops: Vec<OpState>,
    /// `activeOps_`: ops without `R` yet.
    active: HashMap<u64, usize>,
    /// `ArrayOpStore.ops_`: ops that got an `R` (and, at EOF, the rest). Negative ids are
    /// never stored (`setOp` ignores them).
    store: HashMap<u64, usize>,
    last_id: f64,
    last_rid: f64,
    op_count: usize,
    lane_names: Vec<String>,
    /// `StageLevelMap.levels_`: lane -> insertion-ordered (stage name, appearance, unique).
    stage_levels: Vec<(String, Vec<LevelEntry>)>,
    current_line: usize,
    current_cycle: f64,
    warnings: Vec<Warning>,
    inexact_lines: Vec<usize>,
}

impl Parser {
    fn new() -> Self {
        Parser {
            ops: Vec::new(),
            active: HashMap::new(),
            store: HashMap::new(),
            last_id: -1.0,
            last_rid: -1.0,
            op_count: 0,
            lane_names: Vec::new(),
            stage_levels: Vec::new(),
            current_line: 1,
            current_cycle: 0.0,
            warnings: Vec::new(),
            inexact_lines: Vec::new(),
        }
    }

    fn warning(&mut self, message: String) {
        self.warnings.push(Warning {
            line: self.current_line,
            message,
        });
    }

    /// `parseLine_`: header check on line 1, split on TAB only, command errors become
    /// warnings.
    fn parse_line(&mut self, line: &str) -> Result<(), LoadError> {
        if self.current_line == 1 && !line.starts_with("Kanata") {
            return Err(LoadError::NotKanata);
        }
        let args: Vec<&str> = line.split('\t').collect();
        if let Err(message) = self.parse_command(&args) {
            self.warning(message);
        }
        self.current_line += 1;
        Ok(())
    }

    /// `parseCommand_`.
    fn parse_command(&mut self, args: &[&str]) -> CmdResult {
        let command = args[0];
        if command == "Kanata" || command == "C=" {
            // The header and every `C=` are ignored: time always starts at 0.
            return Ok(());
        }
        if command == "C" {
            require_arguments(args, 2, command)?;
            let delta = self.parse_integer(args.get(1).copied(), command)?;
            self.current_cycle += delta;
            return Ok(());
        }
        if !matches!(command, "I" | "L" | "S" | "E" | "R" | "W") {
            // `command.length !== 1 || !"ILSERW".includes(command)`.
            self.warning(format!("Unknown command: {command}"));
            return Ok(());
        }

        require_arguments(args, 2, command)?;
        let id = self.parse_integer(args.get(1).copied(), command)?;
        let active = self.active.get(&key(id)).copied();
        let stored = if active.is_none() {
            self.store_get(id)
        } else {
            None
        };
        let op = active.or(stored);
        if stored.is_some() && command != "I" {
            self.warning(format!(
                "Command appears after op {} was retired or flushed.",
                js_fmt(id)
            ));
        }

        match command {
            "I" => self.parse_initial(id, op, args),
            "L" => self.parse_label(id, op, args),
            "S" => self.parse_start(id, op, args),
            "E" => self.parse_end(id, op, args),
            "R" => self.parse_retire(id, op, args),
            _ => self.parse_dependency(id, op, args),
        }
    }

    /// `parseInitialCommand_`: a used id (alive, or stored after its `R`) is an error, so the
    /// second `I` is ignored and later commands land on the old op.
    fn parse_initial(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "I")?;
        if op.is_some() {
            return Err(format!("{} is redefined by an I command.", js_fmt(id)));
        }
        let gid = self.parse_integer(args.get(2).copied(), "I")?;
        let tid = self.parse_integer(args.get(3).copied(), "I")?;
        self.ops.push(OpState {
            id,
            gid,
            tid,
            rid: -1.0,
            retired: false,
            flush: false,
            lanes: Vec::new(),
            fetched_cycle: self.current_cycle,
            retired_cycle: -1.0,
            line: self.current_line,
            label_name: String::new(),
            label_detail: String::new(),
            last_stage: None,
            prods: Vec::new(),
            cons: Vec::new(),
            prod_cycle: -1.0,
            cons_cycle: -1.0,
        });
        self.active.insert(key(id), self.ops.len() - 1);
        Ok(())
    }

    /// `parseLabelCommand_`: only field 3 is used, untrimmed; types other than 0, 1, 2 are
    /// silently ignored; type-2 fragments are joined with a line break.
    fn parse_label(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "L")?;
        let target = require_op(id, op, "L")?;
        let kind = self.parse_integer(args.get(2).copied(), "L")?;
        let label = args[3];
        let op = &mut self.ops[target];
        if kind == 0.0 {
            op.label_name.push_str(label);
        } else if kind == 1.0 {
            op.label_detail.push_str(label);
        } else if kind == 2.0 {
            let Some((lane, stage)) = op.last_stage else {
                return Err(format!(
                    "The L command for op {} has no current stage.",
                    js_fmt(id)
                ));
            };
            let stage = &mut op.lanes[lane].1.stages[stage];
            if !stage.labels.is_empty() {
                stage.labels.push('\n');
            }
            stage.labels.push_str(label);
        }
        Ok(())
    }

    /// `parseStartCommand_`: closes the lane's last stage if it is still open (end 0), then
    /// opens a new one; an `X` in the name sets `consCycle`.
    fn parse_start(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "S")?;
        let target = require_op(id, op, "S")?;
        let lane_name = js_trim(args[2]).to_owned();
        let stage_name = js_trim(args[3]).to_owned();
        let cycle = self.current_cycle;
        let op = &mut self.ops[target];
        let lane_idx = match op.lane_index(&lane_name) {
            Some(i) => i,
            None => {
                op.lanes.push((lane_name.clone(), LaneState::default()));
                op.lanes.len() - 1
            }
        };
        let previous = op.lanes[lane_idx]
            .1
            .stages
            .last()
            .filter(|s| s.end == 0.0)
            .map(|s| s.name.clone());
        if let Some(previous) = previous {
            close_stage(op, lane_idx, &previous, cycle);
        }
        let lane = &mut op.lanes[lane_idx].1;
        lane.stages.push(StageState {
            name: stage_name.clone(),
            labels: String::new(),
            start: cycle,
            end: 0.0,
        });
        op.last_stage = Some((lane_idx, lane.stages.len() - 1));
        if stage_name.contains('X') {
            op.cons_cycle = cycle;
        }
        let level = lane.level;
        if !self.lane_names.contains(&lane_name) {
            self.lane_names.push(lane_name.clone());
        }
        self.update_stage_level(lane_name, stage_name, level);
        Ok(())
    }

    /// `StageLevelMap.update`.
    fn update_stage_level(&mut self, lane: String, stage: String, level: u32) {
        let idx = match self.stage_levels.iter().position(|(l, _)| *l == lane) {
            Some(i) => i,
            None => {
                self.stage_levels.push((lane, Vec::new()));
                self.stage_levels.len() - 1
            }
        };
        let levels = &mut self.stage_levels[idx].1;
        if let Some(entry) = levels.iter_mut().find(|(n, _, _)| *n == stage) {
            entry.1 = entry.1.min(level);
        } else {
            let unique = levels.len() as u32;
            levels.push((stage, level, unique));
        }
    }

    /// `parseEndCommand_` -> `closeStage_`.
    fn parse_end(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "E")?;
        let target = require_op(id, op, "E")?;
        let lane_name = js_trim(args[2]);
        let stage_name = js_trim(args[3]);
        let cycle = self.current_cycle;
        let op = &mut self.ops[target];
        let Some(lane_idx) = op.lane_index(lane_name) else {
            return Err(format!(
                "Lane {lane_name} is not defined for op {}.",
                js_fmt(id)
            ));
        };
        close_stage(op, lane_idx, stage_name, cycle);
        Ok(())
    }

    /// `parseRetireCommand_`: every field is checked before anything is changed (an `R`
    /// with an empty type is dropped whole); closes the last stage of each lane if it is
    /// open (without raising the lane level), sets `prodCycle` if that stage's name has an
    /// `X` (open or not), unescapes the labels and moves the op to the store.
    fn parse_retire(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "R")?;
        let target = require_op(id, op, "R")?;
        let rid = self.parse_integer(args.get(2).copied(), "R")?;
        let flush = self.parse_integer(args.get(3).copied(), "R")? == 1.0;
        let cycle = self.current_cycle;
        let op = &mut self.ops[target];
        op.rid = rid;
        op.retired_cycle = cycle;
        op.flush = flush;
        op.retired = !flush;
        for (_, lane) in &mut op.lanes {
            let Some(stage) = lane.stages.last_mut() else {
                continue;
            };
            if stage.end == 0.0 {
                stage.end = cycle;
            }
            if stage.name.contains('X') {
                op.prod_cycle = cycle - 1.0;
            }
        }
        unescape_labels(op);
        self.active.remove(&key(id));
        self.store_set(id, target);
        if !flush && rid >= 0.0 {
            // ArrayOpStore.setRetiredOp ignores a negative rid.
            self.last_rid = self.last_rid.max(rid);
        }
        Ok(())
    }

    /// `parseDependencyCommand_`: the producer must exist (alive or stored) when the `W` is
    /// read, so a `W` naming a later instruction is a warning and dropped.
    fn parse_dependency(&mut self, id: f64, op: Option<usize>, args: &[&str]) -> CmdResult {
        require_arguments(args, 4, "W")?;
        let consumer = require_op(id, op, "W")?;
        let producer_id = self.parse_integer(args.get(2).copied(), "W")?;
        let producer = self
            .active
            .get(&key(producer_id))
            .copied()
            .or_else(|| self.store_get(producer_id));
        let Some(producer) = producer else {
            return Err(format!(
                "The W command refers to undefined producer {}.",
                js_fmt(producer_id)
            ));
        };
        let kind = self.parse_integer(args.get(3).copied(), "W")?;
        let cycle = self.current_cycle;
        let (producer_op_id, consumer_op_id) = (self.ops[producer].id, self.ops[consumer].id);
        self.ops[consumer].prods.push(DepState {
            op_id: producer_op_id,
            kind,
            cycle,
        });
        self.ops[producer].cons.push(DepState {
            op_id: consumer_op_id,
            kind,
            cycle,
        });
        Ok(())
    }

    /// `finish_`: ops without `R` are kept, drawn up to the last cycle + 1.
    fn finish(&mut self) {
        let mut remaining: Vec<usize> = self.active.values().copied().collect();
        remaining.sort_unstable();
        for idx in remaining {
            let op = &mut self.ops[idx];
            op.retired_cycle = self.current_cycle + 1.0;
            unescape_labels(op);
            let id = op.id;
            self.store_set(id, idx);
        }
        self.active.clear();
    }

    /// `ArrayOpStore.getOp(id)`.
    fn store_get(&self, id: f64) -> Option<usize> {
        if id < 0.0 || id > self.last_id {
            return None;
        }
        self.store.get(&key(id)).copied()
    }

    /// `ArrayOpStore.setOp(id, op)`.
    fn store_set(&mut self, id: f64, idx: usize) {
        if id < 0.0 {
            return;
        }
        if self.store.insert(key(id), idx).is_none() {
            self.op_count += 1;
        }
        self.last_id = self.last_id.max(id);
    }

    /// `parseInteger_`: trim, empty is invalid, then JS `Number()`; non-finite is invalid.
    fn parse_integer(&mut self, text: Option<&str>, command: &str) -> Result<f64, String> {
        let value = match text.map(js_trim) {
            None | Some("") => f64::NAN,
            Some(t) => js_number(t),
        };
        if !value.is_finite() {
            return Err(format!(
                "{command} contains an invalid number: {}",
                text.unwrap_or("undefined")
            ));
        }
        if !exact_integer(value) && self.inexact_lines.last() != Some(&self.current_line) {
            self.inexact_lines.push(self.current_line);
        }
        Ok(value)
    }

    fn into_view(self) -> View {
        let mut drawn: Vec<usize> = Vec::new();
        let mut undrawn: Vec<UndrawnOp> = Vec::new();
        let mut stored_flags = vec![false; self.ops.len()];
        for &idx in self.store.values() {
            stored_flags[idx] = true;
            if self.ops[idx].id.fract() == 0.0 {
                drawn.push(idx);
            } else {
                undrawn.push(UndrawnOp {
                    id: self.ops[idx].id,
                    line: self.ops[idx].line,
                    reason: "non-integer file id: stored, but no row is ever drawn for it",
                });
            }
        }
        for (idx, op) in self.ops.iter().enumerate() {
            if !stored_flags[idx] {
                undrawn.push(UndrawnOp {
                    id: op.id,
                    line: op.line,
                    reason: "negative file id: never stored",
                });
            }
        }
        undrawn.sort_by_key(|u| u.line);
        drawn.sort_by(|&a, &b| self.ops[a].id.total_cmp(&self.ops[b].id));

        let insns: Vec<Insn> = drawn.iter().map(|&idx| to_insn(&self.ops[idx])).collect();

        // drawDependency_: for every drawn consumer whose consCycle is not -1, one arrow per
        // recorded producer that is in the store and whose prodCycle is not -1.
        let mut arrows = Vec::new();
        for &idx in &drawn {
            let consumer = &self.ops[idx];
            if consumer.cons_cycle == -1.0 {
                continue;
            }
            for dep in &consumer.prods {
                let Some(p) = self.store_get(dep.op_id) else {
                    continue;
                };
                let producer = &self.ops[p];
                if producer.prod_cycle == -1.0 {
                    continue;
                }
                arrows.push(Arrow {
                    consumer: consumer.id as i64,
                    producer: producer.id as i64,
                    kind: dep.kind as i64,
                    from_cycle: producer.prod_cycle as i64,
                    to_cycle: consumer.cons_cycle as i64,
                });
            }
        }

        let stage_levels = self
            .stage_levels
            .into_iter()
            .map(|(lane, levels)| {
                let levels = levels
                    .into_iter()
                    .map(|(name, appearance, unique)| StageLevel {
                        name,
                        appearance,
                        unique,
                    })
                    .collect();
                (lane, levels)
            })
            .collect();

        View {
            insns,
            warnings: self.warnings,
            last_cycle: self.current_cycle as i64,
            arrows,
            lane_names: self.lane_names,
            stage_levels,
            last_id: self.last_id as i64,
            last_rid: self.last_rid as i64,
            op_count: self.op_count,
            undrawn,
            inexact_lines: self.inexact_lines,
        }
    }
}

/// `requireArguments_`.
fn require_arguments(args: &[&str], count: usize, command: &str) -> CmdResult {
    if args.len() < count {
        return Err(format!(
            "{command} requires {count} fields, but {} were provided.",
            args.len()
        ));
    }
    Ok(())
}

/// `requireOp_`.
fn require_op(id: f64, op: Option<usize>, command: &str) -> Result<usize, String> {
    op.ok_or_else(|| format!("{command} refers to undefined op {}.", js_fmt(id)))
}

/// `closeStage_`: the most recent stage of that name in the lane gets the current cycle as
/// its end, even if it was closed before (silently nothing if there is none); the lane level
/// rises if the stage is now longer than zero; an `X` in the name sets `prodCycle`.
fn close_stage(op: &mut OpState, lane_idx: usize, stage_name: &str, cycle: f64) {
    let lane = &mut op.lanes[lane_idx].1;
    let Some(stage) = lane.stages.iter_mut().rev().find(|s| s.name == stage_name) else {
        return;
    };
    stage.end = cycle;
    if stage.start != stage.end {
        lane.level += 1;
    }
    if stage_name.contains('X') {
        op.prod_cycle = cycle - 1.0;
    }
}

/// `unescapeLabels_`: the two characters `\n` become a line break in the type-0 and type-1
/// labels and every stage's notes. Konata runs this at `R` and at end of file only, so text
/// appended after an instruction's `R` keeps its escapes.
fn unescape_labels(op: &mut OpState) {
    op.label_name = op.label_name.replace("\\n", "\n");
    op.label_detail = op.label_detail.replace("\\n", "\n");
    for (_, lane) in &mut op.lanes {
        for stage in &mut lane.stages {
            stage.labels = stage.labels.replace("\\n", "\n");
        }
    }
}

fn opt_cycle(v: f64) -> Option<i64> {
    (v != -1.0).then_some(v as i64)
}

fn to_insn(op: &OpState) -> Insn {
    let retired_cycle = op.retired_cycle as i64;
    let retired = (op.retired || op.flush).then_some(RetireState {
        kind: if op.flush {
            RetireKind::Flushed
        } else {
            RetireKind::Retired
        },
        retire_id: op.rid as i64,
        cycle: retired_cycle,
    });
    let mut lanes = BTreeMap::new();
    let mut lane_levels = BTreeMap::new();
    for (name, lane) in &op.lanes {
        let boxes = lane
            .stages
            .iter()
            .map(|s| StageBox {
                name: s.name.clone(),
                start: s.start as i64,
                // drawLane_: `stage.endCycle === 0 ? op.retiredCycle : stage.endCycle`.
                end: if s.end == 0.0 {
                    retired_cycle
                } else {
                    s.end as i64
                },
                raw_end: s.end as i64,
                notes: s.labels.clone(),
            })
            .collect();
        lanes.insert(name.clone(), boxes);
        lane_levels.insert(name.clone(), lane.level);
    }
    let deps = |v: &[DepState]| {
        v.iter()
            .map(|d| Dependency {
                other: d.op_id as i64,
                kind: d.kind as i64,
                cycle: d.cycle as i64,
            })
            .collect()
    };
    Insn {
        file_id: op.id as i64,
        sim_id: op.gid as i64,
        thread: op.tid as i64,
        line: op.line,
        fetched_cycle: op.fetched_cycle as i64,
        retired_cycle,
        retired,
        label_name: op.label_name.clone(),
        label_detail: op.label_detail.clone(),
        lanes,
        lane_levels,
        producers: deps(&op.prods),
        consumers: deps(&op.cons),
        cons_cycle: opt_cycle(op.cons_cycle),
        prod_cycle: opt_cycle(op.prod_cycle),
    }
}

// ---------------------------------------------------------------------------------------
// Comparing two views
// ---------------------------------------------------------------------------------------

/// What [`diff_views`] compares. `Compare::default()` compares everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compare {
    /// Pair instructions by position in row order instead of by file id, and compare
    /// arrows and `W` relations through those positions (the converter renumbers ids).
    pub ignore_file_ids: bool,
    /// Do not compare retire ids.
    pub ignore_retire_ids: bool,
    /// Do not compare simulator ids.
    pub ignore_sim_ids: bool,
    /// Leave out boxes Konata does not paint (zero length, or an instruction without a body)
    /// and lanes left empty by that.
    pub ignore_invisible_stages: bool,
    /// Do not compare stage colours (the `appearance` level of each compared lane and stage
    /// name, see [`StageLevel`]); Konata's colours can differ when a stage is re-closed.
    pub ignore_colors: bool,
    /// Do not compare the recorded `W` relations (the drawn arrows are still compared).
    pub ignore_dependencies: bool,
    /// Do not compare the drawn arrows.
    pub ignore_arrows: bool,
    /// Do not compare the last cycle.
    pub ignore_last_cycle: bool,
    /// Do not compare warnings.
    pub ignore_warnings: bool,
    /// Do not compare the line numbers of `I` commands (they always differ after
    /// conversion; compared only when this is false).
    pub ignore_lines: bool,
    /// Stop after this many differences (a last line says how many more there were).
    pub max_reports: usize,
}

impl Default for Compare {
    fn default() -> Self {
        Compare {
            ignore_file_ids: false,
            ignore_retire_ids: false,
            ignore_sim_ids: false,
            ignore_invisible_stages: false,
            ignore_colors: false,
            ignore_dependencies: false,
            ignore_arrows: false,
            ignore_last_cycle: false,
            ignore_warnings: false,
            ignore_lines: false,
            max_reports: 50,
        }
    }
}

impl Compare {
    /// For comparing a raw input with a normalized output: file ids, line numbers and
    /// warnings are not compared; everything drawn is.
    pub fn drawn() -> Self {
        Compare {
            ignore_file_ids: true,
            ignore_warnings: true,
            ignore_lines: true,
            ..Compare::default()
        }
    }
}

/// The boxes of an instruction that [`diff_views`] compares, per lane.
fn compared_boxes<'a>(i: &'a Insn, cmp: &Compare) -> BTreeMap<&'a str, Vec<&'a StageBox>> {
    i.lanes
        .iter()
        .map(|(lane, stages)| {
            let list: Vec<&StageBox> = stages
                .iter()
                .filter(|s| !cmp.ignore_invisible_stages || (i.has_body() && s.visible()))
                .collect();
            (lane.as_str(), list)
        })
        .filter(|(_, list)| !cmp.ignore_invisible_stages || !list.is_empty())
        .collect()
}

/// What decides a stage's colour under Konata's default "Auto" scheme (`getStageColor_`):
/// the lane and the stage name's `appearance` level, for every (lane, stage name) that has a
/// compared box. `unique` (the "Unique" scheme) is not compared, and neither is
/// [`Insn::lane_levels`], which only matters through the `appearance` it leads to.
fn colour_levels(v: &View, cmp: &Compare) -> BTreeMap<(String, String), Option<u32>> {
    let mut out = BTreeMap::new();
    for insn in &v.insns {
        for (lane, list) in compared_boxes(insn, cmp) {
            for s in list {
                out.entry((lane.to_owned(), s.name.clone()))
                    .or_insert_with(|| {
                        v.stage_levels
                            .get(lane)
                            .and_then(|l| l.iter().find(|x| x.name == s.name))
                            .map(|x| x.appearance)
                    });
            }
        }
    }
    out
}

struct Report {
    lines: Vec<String>,
    max: usize,
    dropped: usize,
}

impl Report {
    fn push(&mut self, line: String) {
        if self.lines.len() < self.max {
            self.lines.push(line);
        } else {
            self.dropped += 1;
        }
    }

    fn check<T: PartialEq + fmt::Debug>(&mut self, what: &str, a: &T, b: &T) {
        if a != b {
            self.push(format!("{what}: {a:?} vs {b:?}"));
        }
    }
}

/// Lists the differences between what Konata draws for `a` and for `b`, one
/// human-readable line each (empty when Konata draws both alike under `cmp`).
pub fn diff_views(a: &View, b: &View, cmp: &Compare) -> Vec<String> {
    let mut r = Report {
        lines: Vec::new(),
        max: cmp.max_reports.max(1),
        dropped: 0,
    };

    r.check("instruction count", &a.insns.len(), &b.insns.len());
    if !cmp.ignore_last_cycle {
        r.check("last cycle", &a.last_cycle, &b.last_cycle);
    }
    if !cmp.ignore_warnings {
        r.check("warnings", &a.warnings, &b.warnings);
    }
    r.check("undrawn instructions", &a.undrawn.len(), &b.undrawn.len());
    let sorted = |v: &View| {
        let mut names = v.lane_names.clone();
        names.sort();
        names
    };
    r.check("lane names", &sorted(a), &sorted(b));
    if !cmp.ignore_colors {
        r.check(
            "stage colours",
            &colour_levels(a, cmp),
            &colour_levels(b, cmp),
        );
    }

    // How a file id is named for comparison: itself, or its position in row order.
    let namer = |v: &View| -> HashMap<i64, usize> {
        v.insns
            .iter()
            .enumerate()
            .map(|(pos, i)| (i.file_id, pos))
            .collect()
    };
    let (pos_a, pos_b) = (namer(a), namer(b));
    let name = |pos: &HashMap<i64, usize>, id: i64| -> String {
        if cmp.ignore_file_ids {
            match pos.get(&id) {
                Some(p) => format!("#{p}"),
                None => format!("undrawn id {id}"),
            }
        } else {
            format!("id {id}")
        }
    };

    let pairs: Vec<(&Insn, &Insn)> = if cmp.ignore_file_ids {
        a.insns.iter().zip(b.insns.iter()).collect()
    } else {
        let mut pairs = Vec::new();
        for ia in &a.insns {
            match b.insn(ia.file_id) {
                Some(ib) => pairs.push((ia, ib)),
                None => r.push(format!("insn id {}: only in the first view", ia.file_id)),
            }
        }
        for ib in &b.insns {
            if a.insn(ib.file_id).is_none() {
                r.push(format!("insn id {}: only in the second view", ib.file_id));
            }
        }
        pairs
    };

    for (pos, (ia, ib)) in pairs.into_iter().enumerate() {
        let who = if cmp.ignore_file_ids {
            format!("insn #{pos} (file ids {} / {})", ia.file_id, ib.file_id)
        } else {
            format!("insn id {}", ia.file_id)
        };
        if !cmp.ignore_sim_ids {
            r.check(&format!("{who}: sim id"), &ia.sim_id, &ib.sim_id);
        }
        r.check(&format!("{who}: thread"), &ia.thread, &ib.thread);
        if !cmp.ignore_lines {
            r.check(&format!("{who}: line of I"), &ia.line, &ib.line);
        }
        r.check(&format!("{who}: label"), &ia.label_name, &ib.label_name);
        r.check(
            &format!("{who}: detail label"),
            &ia.label_detail,
            &ib.label_detail,
        );
        r.check(
            &format!("{who}: fetched cycle"),
            &ia.fetched_cycle,
            &ib.fetched_cycle,
        );
        r.check(
            &format!("{who}: drawn up to cycle"),
            &ia.retired_cycle,
            &ib.retired_cycle,
        );
        let retire = |i: &Insn| {
            i.retired.map(|s| {
                (
                    s.kind,
                    s.cycle,
                    if cmp.ignore_retire_ids {
                        None
                    } else {
                        Some(s.retire_id)
                    },
                )
            })
        };
        r.check(
            &format!("{who}: retire (kind, cycle, retire id)"),
            &retire(ia),
            &retire(ib),
        );

        let boxes = |i: &Insn| -> BTreeMap<String, Vec<(String, i64, i64, String)>> {
            compared_boxes(i, cmp)
                .into_iter()
                .map(|(lane, list)| {
                    let list = list
                        .into_iter()
                        .map(|s| (s.name.clone(), s.start, s.end, s.notes.clone()))
                        .collect();
                    (lane.to_owned(), list)
                })
                .collect()
        };
        let (ba, bb) = (boxes(ia), boxes(ib));
        let lanes: std::collections::BTreeSet<&String> = ba.keys().chain(bb.keys()).collect();
        for lane in lanes {
            match (ba.get(lane), bb.get(lane)) {
                (Some(x), Some(y)) if x != y => r.push(format!(
                    "{who}: lane {lane:?} stages (name, start, end, notes): {x:?} vs {y:?}"
                )),
                (Some(_), None) => r.push(format!("{who}: lane {lane:?} only in the first view")),
                (None, Some(_)) => r.push(format!("{who}: lane {lane:?} only in the second view")),
                _ => {}
            }
        }
        if !cmp.ignore_dependencies {
            let deps = |i: &Insn, pos: &HashMap<i64, usize>| {
                i.producers
                    .iter()
                    .map(|d| (name(pos, d.other), d.kind, d.cycle))
                    .collect::<Vec<_>>()
            };
            r.check(
                &format!("{who}: W producers (producer, type, cycle)"),
                &deps(ia, &pos_a),
                &deps(ib, &pos_b),
            );
        }
    }

    if !cmp.ignore_arrows {
        let arrows = |v: &View, pos: &HashMap<i64, usize>| {
            let mut list: Vec<_> = v
                .arrows
                .iter()
                .map(|x| {
                    (
                        name(pos, x.consumer),
                        name(pos, x.producer),
                        x.kind,
                        x.from_cycle,
                        x.to_cycle,
                    )
                })
                .collect();
            list.sort();
            list
        };
        let (xa, xb) = (arrows(a, &pos_a), arrows(b, &pos_b));
        if xa != xb {
            let only_a: Vec<_> = xa.iter().filter(|x| !xb.contains(x)).collect();
            let only_b: Vec<_> = xb.iter().filter(|x| !xa.contains(x)).collect();
            r.push(format!(
                "arrows (consumer, producer, type, from, to) differ ({} vs {}): only in first {:?}; only in second {:?}",
                xa.len(),
                xb.len(),
                only_a,
                only_b
            ));
        }
    }

    if r.dropped > 0 {
        let dropped = r.dropped;
        r.lines.push(format!("... and {dropped} more differences"));
    }
    r.lines
}

// ---------------------------------------------------------------------------------------
// Restricting a view to some of its instructions
// ---------------------------------------------------------------------------------------

/// A view restricted to some of its instructions ([`restrict`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Restricted {
    /// What Konata should draw for a trace holding only the kept instructions.
    pub view: View,
    /// The `W` relations of kept consumers whose producer was not kept (dropped).
    pub dropped_dependencies: u64,
    /// The file ids of the kept instructions in the whole view, in row order: the kept
    /// instruction `n` of [`Restricted::view`] was `kept_ids[n]`.
    pub kept_ids: Vec<i64>,
}

/// What Konata draws for the part of a trace that holds only the instructions `keep`
/// selects, computed from the view of the whole trace alone, the way a window of the trace
/// (issue 13) must look: the kept instructions renumbered densely from 0 in row order, each
/// unchanged otherwise (labels, stage boxes per lane with their cycles, thread, simulator
/// id, retire or flush with its cycle and retire id); the `W` relations and arrows between
/// kept instructions, the others dropped and counted.
///
/// The last cycle is the whole view's when a kept instruction never retires (it is drawn up
/// to the last cycle + 1, so the window must reach it), else the cycle of the last `R` of a
/// kept instruction (0 when nothing is kept). Lane names are those the kept instructions
/// use, in the whole view's order (`diff_views` compares them sorted).
///
/// Stage colours cannot be derived from the whole view: Konata's `appearance` level of a
/// stage is the smallest lane level seen among *all* instructions, so it may differ on a
/// part. `stage_levels` holds the whole view's entries for the lanes and stage names kept;
/// compare restricted views with `ignore_colors`. Line numbers are the whole view's
/// (compare with `ignore_lines`). Warnings, undrawn instructions and inexact lines are not
/// carried over (a canonical trace has none).
pub fn restrict(view: &View, keep: impl Fn(&Insn) -> bool) -> Restricted {
    let kept_ids: Vec<i64> = view
        .insns
        .iter()
        .filter(|i| keep(i))
        .map(|i| i.file_id)
        .collect();
    let new_id: HashMap<i64, i64> = kept_ids
        .iter()
        .enumerate()
        .map(|(n, &id)| (id, n as i64))
        .collect();
    let remap = |deps: &[Dependency]| -> (Vec<Dependency>, u64) {
        let mut out = Vec::new();
        let mut dropped = 0;
        for d in deps {
            match new_id.get(&d.other) {
                Some(&other) => out.push(Dependency { other, ..*d }),
                None => dropped += 1,
            }
        }
        (out, dropped)
    };
    let mut dropped_dependencies = 0;
    let mut insns = Vec::with_capacity(kept_ids.len());
    for &id in &kept_ids {
        let mut insn = view.insn(id).expect("a kept id is drawn").clone();
        insn.file_id = new_id[&id];
        let (producers, dropped) = remap(&insn.producers);
        dropped_dependencies += dropped;
        insn.producers = producers;
        insn.consumers = remap(&insn.consumers).0;
        insns.push(insn);
    }
    let arrows = view
        .arrows
        .iter()
        .filter_map(|a| {
            Some(Arrow {
                consumer: *new_id.get(&a.consumer)?,
                producer: *new_id.get(&a.producer)?,
                ..*a
            })
        })
        .collect();
    let last_cycle = if insns.iter().any(Insn::eof) {
        view.last_cycle
    } else {
        insns
            .iter()
            .filter_map(|i| i.retired.map(|r| r.cycle))
            .max()
            .unwrap_or(0)
    };
    let used = |lane: &str| insns.iter().any(|i| i.lanes.contains_key(lane));
    let lane_names: Vec<String> = view
        .lane_names
        .iter()
        .filter(|l| used(l))
        .cloned()
        .collect();
    let stage_levels = view
        .stage_levels
        .iter()
        .filter(|(lane, _)| used(lane))
        .map(|(lane, levels)| {
            let levels = levels
                .iter()
                .filter(|s| {
                    insns
                        .iter()
                        .any(|i| i.lane(lane).iter().any(|b| b.name == s.name))
                })
                .cloned()
                .collect();
            (lane.clone(), levels)
        })
        .collect();
    let last_rid = insns
        .iter()
        .filter_map(|i| i.retired)
        .filter(|r| r.kind == RetireKind::Retired && r.retire_id >= 0)
        .map(|r| r.retire_id)
        .max()
        .unwrap_or(-1);
    let restricted = View {
        last_id: insns.len() as i64 - 1,
        op_count: insns.len(),
        insns,
        warnings: Vec::new(),
        last_cycle,
        arrows,
        lane_names,
        stage_levels,
        last_rid,
        undrawn: Vec::new(),
        inexact_lines: Vec::new(),
    };
    Restricted {
        view: restricted,
        dropped_dependencies,
        kept_ids,
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn corpus(name: &str) -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/kanata");
        let path = dir.join(name);
        if path.exists() {
            Some(path)
        } else {
            eprintln!("skipping: {} not found", path.display());
            None
        }
    }

    /// Builds a log from lines (the header is added) and parses it.
    fn view(body: &[&str]) -> View {
        let mut text = String::from("Kanata\t0004\n");
        for line in body {
            text.push_str(line);
            text.push('\n');
        }
        load(text.as_bytes())
    }

    fn boxes(v: &View, id: i64, lane: &str) -> Vec<(String, i64, i64)> {
        v.insn(id)
            .unwrap_or_else(|| panic!("no insn {id}"))
            .lane(lane)
            .iter()
            .map(|s| (s.name.clone(), s.start, s.end))
            .collect()
    }

    fn b(name: &str, start: i64, end: i64) -> (String, i64, i64) {
        (name.to_owned(), start, end)
    }

    fn messages(v: &View) -> Vec<(usize, &str)> {
        v.warnings
            .iter()
            .map(|w| (w.line, w.message.as_str()))
            .collect()
    }

    // ---- Konata's own fixtures -------------------------------------------------------

    /// Mirrors `test/onikiri_parser.test.js` and `test/web_onikiri_parser.test.ts`
    /// ("records stages, labels, retire/flush, and dependencies").
    #[test]
    fn konata_fixture_kanata_basic() {
        let Some(path) = corpus("shioyadan__Konata__kanata-basic.txt") else {
            return;
        };
        let v = load_file(path).unwrap();
        assert_eq!(v.last_id, 1);
        assert_eq!(v.last_rid, 0);
        assert_eq!(v.last_cycle, 5);
        assert_eq!(v.op_count, 2);
        assert_eq!(v.insns.len(), 2);
        let mut lanes = v.lane_names.clone();
        lanes.sort();
        assert_eq!(lanes, ["0", "1"]);
        let names = |lane: &str| -> Vec<&str> {
            v.stage_levels[lane]
                .iter()
                .map(|s| s.name.as_str())
                .collect()
        };
        assert_eq!(names("0"), ["F", "X", "Rt"]);
        assert_eq!(names("1"), ["stl"]);

        let producer = v.insn(0).unwrap();
        assert_eq!(producer.sim_id, 100);
        assert_eq!(producer.thread, 0);
        assert_eq!(
            producer.retired,
            Some(RetireState {
                kind: RetireKind::Retired,
                retire_id: 0,
                cycle: 4
            })
        );
        assert_eq!(producer.fetched_cycle, 0);
        assert_eq!(producer.retired_cycle, 4);
        assert_eq!(producer.label_name, "producer\nname");
        assert_eq!(producer.label_detail, "producer detail; post-retire detail");
        assert_eq!(producer.cons_cycle, Some(1));
        assert_eq!(producer.prod_cycle, Some(2));
        let lane0: Vec<_> = producer
            .lane("0")
            .iter()
            .map(|s| (s.name.as_str(), s.notes.as_str(), s.start, s.end))
            .collect();
        assert_eq!(
            lane0,
            [
                ("F", "", 0, 1),
                ("X", "execute\nlabel", 1, 3),
                ("Rt", "", 3, 4)
            ]
        );
        assert_eq!(
            producer.consumers,
            [Dependency {
                other: 1,
                kind: 7,
                cycle: 3
            }]
        );

        let consumer = v.insn(1).unwrap();
        assert_eq!(
            consumer.producers,
            [Dependency {
                other: 0,
                kind: 7,
                cycle: 3
            }]
        );
        assert_eq!(
            consumer.retired,
            Some(RetireState {
                kind: RetireKind::Flushed,
                retire_id: 1,
                cycle: 5
            })
        );
        assert_eq!(consumer.fetched_cycle, 3);
        assert_eq!(boxes(&v, 1, "0"), [b("F", 3, 4)]);
        assert_eq!(boxes(&v, 1, "1"), [b("stl", 3, 5)]);
        // The consumer has no X stage, so Konata draws no arrow for the W.
        assert_eq!(consumer.cons_cycle, None);
        assert!(v.arrows.is_empty());
        // The post-retire L (line 22) is applied with a warning.
        assert_eq!(
            messages(&v),
            [(22, "Command appears after op 0 was retired or flushed.")]
        );
        // Colour depth: F closed after 1 cycle, X after 2; R does not count.
        assert_eq!(producer.lane_levels["0"], 2);
        let levels: Vec<_> = v.stage_levels["0"].iter().map(|s| s.appearance).collect();
        assert_eq!(levels, [0, 1, 2]);
    }

    /// The sample from Konata's format documentation: trailing TABs and spaces, a padded
    /// header, `C=` 216, no final newline.
    #[test]
    fn konata_sample_1() {
        let Some(path) = corpus("shioyadan__Konata__kanata-sample-1.log") else {
            return;
        };
        let v = load_file(path).unwrap();
        assert!(v.warnings.is_empty(), "{:?}", v.warnings);
        assert_eq!(v.last_cycle, 3);
        assert_eq!(v.insns.len(), 2);
        let i0 = v.insn(0).unwrap();
        assert_eq!(i0.label_name, "12000d918 iBC(r17)");
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 1), b("X", 1, 2)]);
        assert_eq!(i0.retired.unwrap().kind, RetireKind::Retired);
        assert_eq!(i0.retired_cycle, 2);
        let i1 = v.insn(1).unwrap();
        assert_eq!(i1.label_name, "12000d91c r4 = iALU(r3, r2)");
        assert_eq!(boxes(&v, 1, "0"), [b("F", 1, 2), b("X", 2, 3)]);
        assert_eq!(
            i1.retired,
            Some(RetireState {
                kind: RetireKind::Flushed,
                retire_id: 1,
                cycle: 3
            })
        );
    }

    /// Mirrors "Web Onikiri parser streams the bundled gzip sample".
    #[test]
    fn konata_sample_2_gz() {
        let Some(path) = corpus("shioyadan__Konata__kanata-sample-2.log.gz") else {
            return;
        };
        let v = load_file(path).unwrap();
        assert_eq!(v.last_id, 4040);
        assert_eq!(v.last_rid, 3625);
        assert_eq!(v.op_count, 4041);
        let mut lanes = v.lane_names.clone();
        lanes.sort();
        assert_eq!(lanes, ["0", "1"]);
        let first = &v.insns[0];
        assert_eq!(
            (first.file_id, first.sim_id, first.label_name.as_str()),
            (0, 4, "00001000: jal zero, 0x10")
        );
        let last = v.insns.last().unwrap();
        assert_eq!(last.file_id, 4040);
        assert!(last.eof());
        assert_eq!(last.retired_cycle, v.last_cycle + 1);
        // SOURCES.md: 4,041 I, 4,000 R, 34 L lines after their op's R.
        assert_eq!(v.insns.iter().filter(|i| i.eof()).count(), 41);
        assert_eq!(v.warnings.len(), 34);
        assert!(v
            .warnings
            .iter()
            .all(|w| w.message.ends_with("was retired or flushed.")));
    }

    // ---- §3 behaviours, one by one --------------------------------------------------

    #[test]
    fn header_must_start_with_kanata() {
        assert_eq!(try_load(b""), Err(LoadError::Empty));
        assert_eq!(try_load(b"\n"), Err(LoadError::NotKanata));
        assert_eq!(try_load(b"C=\t0\nI\t0\t0\t0\n"), Err(LoadError::NotKanata));
        // The version is not checked; a BOM is dropped by the decoder.
        assert!(try_load(b"Kanata\t0099\n").unwrap().warnings.is_empty());
        assert!(try_load(b"\xef\xbb\xbfKanata\t0004\n")
            .unwrap()
            .warnings
            .is_empty());
        // A header with a space passes the check but is then an unknown command.
        let v = load(b"Kanata 0004\n");
        assert_eq!(messages(&v), [(1, "Unknown command: Kanata 0004")]);
    }

    #[test]
    fn crlf_is_stripped_and_last_line_needs_no_newline() {
        let v =
            load(b"Kanata\t0004\r\nI\t0\t0\t0\r\nL\t0\t0\tabc\r\nS\t0\t0\tF\r\nC\t1\r\nR\t0\t0\t0");
        assert!(v.warnings.is_empty());
        assert_eq!(v.insn(0).unwrap().label_name, "abc");
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 1)]);
        assert!(!v.insn(0).unwrap().eof());
    }

    #[test]
    fn split_on_tab_only_and_numbers_trimmed() {
        let v = view(&[
            "I 0 0 0",
            "I\t  0 \t 0x10\t+2 ",
            "S\t 0\t 0 \t F ",
            "C\t 1e1 ",
        ]);
        assert_eq!(messages(&v), [(2, "Unknown command: I 0 0 0")]);
        let i = v.insn(0).unwrap();
        assert_eq!((i.sim_id, i.thread), (16, 2));
        assert_eq!(v.last_cycle, 10);
        // Lane and stage names are trimmed too.
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 11)]);
        // Invalid numbers are warnings and drop the command.
        let v = view(&[
            "I\t0\t0\t0",
            "C\t1x",
            "C\t0x",
            "C\t1_0",
            "C\tInfinity",
            "C\t-2",
        ]);
        assert_eq!(v.warnings.len(), 4);
        assert_eq!(v.warnings[0].message, "C contains an invalid number: 1x");
        assert_eq!(v.last_cycle, -2);
    }

    #[test]
    fn only_field_three_of_l_is_used() {
        let v = view(&["I\t0\t0\t0", "L\t0\t0\t a\tb", "L\t0\t0\t", "L\t0\t0"]);
        assert_eq!(v.insn(0).unwrap().label_name, " a");
        assert_eq!(
            messages(&v),
            [(5, "L requires 4 fields, but 3 were provided.")]
        );
        // Types other than 0, 1, 2 are ignored silently.
        let v = view(&["I\t0\t0\t0", "L\t0\t3\tx", "L\t0\t0.0\ty"]);
        assert!(v.warnings.is_empty());
        assert_eq!(v.insn(0).unwrap().label_name, "y");
    }

    #[test]
    fn c_equals_is_ignored() {
        let v = view(&[
            "C=\t100",
            "I\t0\t0\t0",
            "S\t0\t0\tF",
            "C=\t500",
            "C\t2",
            "R\t0\t0\t0",
        ]);
        assert!(v.warnings.is_empty());
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 2)]);
        assert_eq!(v.last_cycle, 2);
    }

    #[test]
    fn unknown_commands_warn_and_are_skipped() {
        let v = view(&["", "# comment", "X\t1", "// x", "II\t0", "I\t0\t0\t0"]);
        assert_eq!(
            messages(&v),
            [
                (2, "Unknown command: "),
                (3, "Unknown command: # comment"),
                (4, "Unknown command: X"),
                (5, "Unknown command: // x"),
                (6, "Unknown command: II"),
            ]
        );
        assert_eq!(v.insns.len(), 1);
    }

    #[test]
    fn duplicate_i_is_ignored_and_later_commands_hit_the_old_op() {
        let v = view(&[
            "I\t0\t10\t0",
            "I\t0\t11\t0",
            "L\t0\t0\told",
            "R\t0\t0\t0",
            "I\t0\t12\t0",
            "L\t0\t0\t+late",
        ]);
        assert_eq!(
            messages(&v),
            [
                (3, "0 is redefined by an I command."),
                (6, "0 is redefined by an I command."),
                (7, "Command appears after op 0 was retired or flushed."),
            ]
        );
        assert_eq!(v.insns.len(), 1);
        let i = v.insn(0).unwrap();
        assert_eq!(i.sim_id, 10);
        assert_eq!(i.label_name, "old+late");
    }

    #[test]
    fn s_closes_the_open_stage_of_its_lane_only() {
        let v = view(&[
            "I\t0\t0\t0",
            "C\t1",
            "S\t0\t0\tF",
            "S\t0\t1\tstl",
            "C\t2",
            "S\t0\t0\tD",
            "C\t1",
            "R\t0\t0\t0",
        ]);
        assert_eq!(boxes(&v, 0, "0"), [b("F", 1, 3), b("D", 3, 4)]);
        assert_eq!(boxes(&v, 0, "1"), [b("stl", 1, 4)]);
    }

    #[test]
    fn e_closes_most_recent_stage_of_that_name_even_if_closed() {
        let v = view(&[
            "I\t0\t0\t0",
            "C\t1",
            "S\t0\t0\tF",
            "C\t1",
            "S\t0\t0\tD",
            "C\t1",
            "S\t0\t0\tF",
            "C\t1",
            "E\t0\t0\tF",
            "E\t0\t0\tnope",
            "C\t1",
            "E\t0\t0\tD",
            "E\t0\t0\tD",
            "C\t1",
            "R\t0\t0\t0",
        ]);
        // D [2,3] re-closed at 5; the second F closed at 4; `E nope` is silent.
        assert_eq!(
            boxes(&v, 0, "0"),
            [b("F", 1, 2), b("D", 2, 5), b("F", 3, 4)]
        );
        assert!(v.warnings.is_empty());
        // Each close of a non-empty stage raises the level: F, D (by S), F, D, D.
        assert_eq!(v.insn(0).unwrap().lane_levels["0"], 5);
        // E on a lane the op never used is a warning.
        let v = view(&["I\t0\t0\t0", "E\t0\t0\tF"]);
        assert_eq!(messages(&v), [(3, "Lane 0 is not defined for op 0.")]);
    }

    #[test]
    fn r_closes_open_stages_of_every_lane_without_raising_levels() {
        let v = view(&[
            "I\t0\t0\t0",
            "C\t1",
            "S\t0\t0\tF",
            "S\t0\t1\tstl",
            "S\t0\t2\tq",
            "E\t0\t2\tq",
            "C\t3",
            "R\t0\t5\t0",
        ]);
        assert_eq!(boxes(&v, 0, "0"), [b("F", 1, 4)]);
        assert_eq!(boxes(&v, 0, "1"), [b("stl", 1, 4)]);
        let i = v.insn(0).unwrap();
        assert_eq!(i.lane("2")[0].len(), 0);
        assert!(!i.lane("2")[0].visible());
        assert_eq!(i.lane_levels["0"], 0);
        assert_eq!(v.last_rid, 5);
    }

    #[test]
    fn bare_c_warns_and_negative_c_goes_back() {
        let v = view(&[
            "I\t0\t0\t0",
            "C",
            "C\t",
            "C\t5",
            "S\t0\t0\tF",
            "C\t-2",
            "S\t0\t0\tD",
            "C\t4",
            "R\t0\t0\t0",
        ]);
        assert_eq!(
            messages(&v),
            [
                (3, "C requires 2 fields, but 1 were provided."),
                (4, "C contains an invalid number: "),
            ]
        );
        // F [5,3] runs backwards: Konata draws only a sliver.
        assert_eq!(boxes(&v, 0, "0"), [b("F", 5, 3), b("D", 3, 7)]);
        assert!(!v.insn(0).unwrap().lane("0")[0].visible());
        assert_eq!(v.last_cycle, 7);
    }

    #[test]
    fn flush_only_when_type_is_exactly_one() {
        let v = view(&[
            "I\t0\t0\t0",
            "I\t1\t0\t0",
            "I\t2\t0\t0",
            "I\t3\t0\t0",
            "I\t4\t0\t0",
            "R\t0\t0\t1",
            "R\t1\t1\t 1 ",
            "R\t2\t2\t2",
            "R\t3\t3\t48",
            "R\t4\t4\t1.0",
        ]);
        let kinds: Vec<_> = v.insns.iter().map(|i| i.retired.unwrap().kind).collect();
        use RetireKind::*;
        assert_eq!(kinds, [Flushed, Flushed, Retired, Retired, Flushed]);
        assert_eq!(v.last_rid, 3);
    }

    #[test]
    fn commands_after_r_are_applied_with_a_warning() {
        let v = view(&[
            "I\t0\t0\t0",
            "S\t0\t0\tF",
            "C\t1",
            "R\t0\t0\t0",
            "L\t0\t0\ta\\nb",
            "C\t1",
            "S\t0\t0\tZ",
            "C\t1",
        ]);
        assert_eq!(v.warnings.len(), 2);
        assert!(v.warnings.iter().all(|w| w.message.contains("was retired")));
        let i = v.insn(0).unwrap();
        // Not unescaped: Konata unescapes at R and at end of file only.
        assert_eq!(i.label_name, "a\\nb");
        // The late stage is open (end 0) and drawn to the retire cycle: start 2 > end 1.
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 1), b("Z", 2, 1)]);
        assert!(i.lane("0")[1].open_marker());
    }

    #[test]
    fn r_with_empty_type_is_dropped() {
        let v = view(&["I\t0\t0\t0", "S\t0\t0\tF", "C\t1", "R\t0\t0\t", "R\t0\t0"]);
        assert_eq!(
            messages(&v),
            [
                (5, "R contains an invalid number: "),
                (6, "R requires 4 fields, but 3 were provided."),
            ]
        );
        let i = v.insn(0).unwrap();
        assert!(i.eof());
        assert_eq!(i.retired_cycle, 2);
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 2)]);
    }

    #[test]
    fn w_and_arrows() {
        let v = view(&[
            "I\t0\t0\t0",
            "I\t1\t0\t0",
            "I\t2\t0\t0",
            "S\t0\t0\tEX",
            "S\t1\t0\tF",
            "W\t1\t0\t0",
            "W\t1\t2\t3",
            "W\t0\t5\t0",
            "W\t9\t0\t0",
            "C\t2",
            "S\t0\t0\tCm",
            "S\t1\t0\tXmiss",
            "S\t2\t0\tex",
            "W\t2\t0\t0",
            "C\t1",
            "R\t0\t0\t0",
            "R\t1\t1\t0",
            "R\t2\t2\t0",
        ]);
        assert_eq!(
            messages(&v),
            [
                (9, "The W command refers to undefined producer 5."),
                (10, "W refers to undefined op 9."),
            ]
        );
        // Producer 0 closed EX at 2 -> arrow starts at 1; consumer 1 started Xmiss at 2.
        // Consumer 2's stage is `ex` (lowercase): no arrow. Producer 2 never ran an X stage.
        assert_eq!(
            v.arrows,
            [Arrow {
                consumer: 1,
                producer: 0,
                kind: 0,
                from_cycle: 1,
                to_cycle: 2
            }]
        );
        assert_eq!(v.insn(1).unwrap().producers.len(), 2);
    }

    #[test]
    fn arrow_needs_a_closed_x_stage_and_r_moves_it() {
        // Producer's X open at EOF: no prodCycle, no arrow.
        let v = view(&[
            "I\t0\t0\t0",
            "I\t1\t0\t0",
            "S\t0\t0\tX",
            "S\t1\t0\tX",
            "W\t1\t0\t0",
            "C\t3",
        ]);
        assert!(v.arrows.is_empty());
        // R sets prodCycle from a last X stage even when it was closed long before.
        let v = view(&[
            "I\t0\t0\t0",
            "I\t1\t0\t0",
            "C\t1",
            "S\t0\t0\tX",
            "S\t1\t0\tX",
            "W\t1\t0\t0",
            "C\t1",
            "E\t0\t0\tX",
            "C\t5",
            "R\t0\t0\t0",
        ]);
        assert_eq!(v.arrows[0].from_cycle, 6);
        // An X closed at cycle 0 gives prodCycle -1, which Konata reads as "none".
        let v = view(&[
            "I\t0\t0\t0",
            "I\t1\t0\t0",
            "S\t0\t0\tX",
            "E\t0\t0\tX",
            "C\t1",
            "S\t1\t0\tX",
            "W\t1\t0\t0",
            "C\t1",
        ]);
        assert_eq!(v.insn(0).unwrap().prod_cycle, None);
        assert!(v.arrows.is_empty());
    }

    #[test]
    fn end_cycle_zero_means_still_open() {
        let v = view(&[
            "I\t0\t0\t0",
            "S\t0\t0\tF",
            "S\t0\t0\tD",
            "C\t3",
            "S\t0\t0\tX",
            "C\t2",
            "R\t0\t0\t0",
        ]);
        // F was closed at cycle 0, i.e. stays "open": drawn up to the retire cycle.
        let i = v.insn(0).unwrap();
        assert!(i.lane("0")[0].open_marker());
        assert_eq!(
            boxes(&v, 0, "0"),
            [b("F", 0, 5), b("D", 0, 3), b("X", 3, 5)]
        );
        // An E at cycle 0 leaves the stage open; R later closes it.
        let v = view(&[
            "I\t0\t0\t0",
            "S\t0\t0\tF",
            "E\t0\t0\tF",
            "C\t4",
            "R\t0\t0\t0",
        ]);
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 4)]);
        assert_eq!(v.insn(0).unwrap().lane("0")[0].raw_end, 4);
    }

    #[test]
    fn unretired_instructions_are_drawn_to_last_cycle_plus_one() {
        let v = view(&["I\t0\t42\t0", "S\t0\t0\tF", "C\t2"]);
        let i = v.insn(0).unwrap();
        assert!(i.eof());
        assert_eq!((i.fetched_cycle, i.retired_cycle), (0, 3));
        assert_eq!(boxes(&v, 0, "0"), [b("F", 0, 3)]);
        assert_eq!(v.last_rid, -1);
    }

    #[test]
    fn lanes_are_keyed_by_text() {
        let v = view(&[
            "I\t0\t0\t0",
            "C\t1",
            "S\t0\t0\tF",
            "S\t0\t00\tG",
            "S\t0\t 0 \tH",
            "C\t1",
            "R\t0\t0\t0",
        ]);
        let i = v.insn(0).unwrap();
        assert_eq!(i.lanes.keys().collect::<Vec<_>>(), ["0", "00"]);
        assert_eq!(boxes(&v, 0, "0"), [b("F", 1, 1), b("H", 1, 2)]);
        assert_eq!(boxes(&v, 0, "00"), [b("G", 1, 2)]);
        assert_eq!(v.lane_names, ["0", "00"]);
    }

    #[test]
    fn label_escapes_and_stage_notes() {
        let v = view(&[
            "I\t0\t0\t0",
            "L\t0\t2\tbefore any stage",
            "L\t0\t0\ta\\",
            "L\t0\t0\tnb\\\\n",
            "L\t0\t1\td\\n",
            "S\t0\t0\tF",
            "L\t0\t2\tn1\\n",
            "L\t0\t2\tn2",
            "S\t0\t1\tstl",
            "E\t0\t1\tstl",
            "L\t0\t2\t",
            "L\t0\t2\ton stl",
            "C\t1",
            "R\t0\t0\t0",
        ]);
        assert_eq!(
            messages(&v),
            [(3, "The L command for op 0 has no current stage.")]
        );
        let i = v.insn(0).unwrap();
        // The escape split over two fragments still becomes a line break.
        assert_eq!(i.label_name, "a\nb\\\n");
        assert_eq!(i.label_detail, "d\n");
        assert_eq!(i.lane("0")[0].notes, "n1\n\nn2");
        // An empty first note adds no separator.
        assert_eq!(i.lane("1")[0].notes, "on stl");
    }

    #[test]
    fn rows_are_file_ids() {
        let v = view(&[
            "I\t5\t0\t0",
            "I\t3\t0\t0",
            "I\t-1\t0\t0",
            "I\t1.5\t0\t0",
            "R\t-1\t0\t0",
            "L\t-1\t0\tx",
        ]);
        let ids: Vec<_> = v.insns.iter().map(|i| i.file_id).collect();
        assert_eq!(ids, [3, 5]);
        assert_eq!(v.last_id, 5);
        assert_eq!(v.op_count, 3);
        assert_eq!(v.undrawn.len(), 2);
        assert_eq!(v.inexact_lines, [5]);
        assert_eq!(messages(&v), [(7, "L refers to undefined op -1.")]);
    }

    #[test]
    fn decompression_by_magic() {
        let text = b"Kanata\t0004\nI\t0\t0\t0\nS\t0\t0\tF\nC\t1\nR\t0\t0\t0\n";
        let (a, b) = text.split_at(20);
        // Two zstd frames.
        let mut zst = zstd::encode_all(a, 3).unwrap();
        zst.extend(zstd::encode_all(b, 3).unwrap());
        assert_eq!(decompress(&zst).unwrap(), text);
        // Two gzip members.
        let gz = |part: &[u8]| {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(part).unwrap();
            e.finish().unwrap()
        };
        let mut gzipped = gz(a);
        gzipped.extend(gz(b));
        assert_eq!(decompress(&gzipped).unwrap(), text);
        assert_eq!(decompress(text).unwrap(), text);
    }

    #[test]
    fn invalid_utf8_becomes_replacement_character() {
        let v = load(b"Kanata\t0004\nI\t0\t0\t0\nL\t0\t0\ta\xffb\n");
        assert_eq!(v.insn(0).unwrap().label_name, "a\u{fffd}b");
    }

    // ---- diff_views -----------------------------------------------------------------

    #[test]
    fn diff_identical_and_renumbered() {
        let a = view(&[
            "I\t7\t100\t0",
            "L\t7\t0\tadd",
            "S\t7\t0\tX",
            "I\t9\t101\t0",
            "S\t9\t0\tX",
            "W\t9\t7\t0",
            "C\t1",
            "R\t7\t3\t0",
            "C\t1",
            "R\t9\t4\t1",
        ]);
        assert!(diff_views(&a, &a, &Compare::default()).is_empty());
        let b = view(&[
            "I\t0\t100\t0",
            "L\t0\t0\tadd",
            "S\t0\t0\tX",
            "I\t1\t101\t0",
            "S\t1\t0\tX",
            "W\t1\t0\t0",
            "C\t1",
            "E\t0\t0\tX",
            "R\t0\t0\t0",
            "C\t1",
            "E\t1\t0\tX",
            "R\t1\t1\t1",
        ]);
        let strict = diff_views(&a, &b, &Compare::default());
        assert!(!strict.is_empty());
        let cmp = Compare {
            ignore_retire_ids: true,
            ..Compare::drawn()
        };
        assert_eq!(diff_views(&a, &b, &cmp), Vec::<String>::new());
        // A different stage end is reported.
        let c = view(&[
            "I\t0\t100\t0",
            "L\t0\t0\tadd",
            "S\t0\t0\tX",
            "I\t1\t101\t0",
            "S\t1\t0\tX",
            "W\t1\t0\t0",
            "C\t2",
            "R\t0\t0\t0",
            "R\t1\t1\t1",
        ]);
        let d = diff_views(&a, &c, &cmp);
        assert!(d.iter().any(|l| l.contains("lane \"0\" stages")), "{d:?}");
        assert!(d.iter().any(|l| l.contains("arrows")), "{d:?}");
    }

    #[test]
    fn diff_ignores_invisible_stages_when_asked() {
        let a = view(&[
            "I\t0\t0\t0",
            "C\t1",
            "S\t0\t0\tF",
            "S\t0\t0\tD",
            "C\t1",
            "R\t0\t0\t0",
        ]);
        let b = view(&["I\t0\t0\t0", "C\t1", "S\t0\t0\tD", "C\t1", "R\t0\t0\t0"]);
        assert!(!diff_views(&a, &b, &Compare::default()).is_empty());
        let cmp = Compare {
            ignore_invisible_stages: true,
            ..Compare::default()
        };
        assert!(diff_views(&a, &b, &cmp).is_empty());
    }

    /// Facts from `shared/corpus/kanata/SOURCES.md` (counted there with an independent
    /// script): instructions, ops open at EOF, flushes; no warnings for the Bluespec logs.
    #[test]
    fn corpus_counts_match_sources_md() {
        let cases = [
            (
                "jasmine2000__6.1920-Final-Project__output.log",
                404,
                3,
                Some(90),
            ),
            ("anacambag__6192_Final_Project__pipelined.log", 63, 5, None),
            ("anacambag__6192_Final_Project__broken.log.gz", 59, 5, None),
            ("shioyadan__Konata__kanata-sample-2.log.gz", 4041, 41, None),
        ];
        for (name, insns, open, flushes) in cases {
            let Some(path) = corpus(name) else {
                continue;
            };
            let v = load_file(path).unwrap();
            assert_eq!(v.insns.len(), insns, "{name}");
            assert_eq!(v.insns.iter().filter(|i| i.eof()).count(), open, "{name}");
            if let Some(flushes) = flushes {
                let n = v
                    .insns
                    .iter()
                    .filter(|i| i.retired.map(|r| r.kind) == Some(RetireKind::Flushed))
                    .count();
                assert_eq!(n, flushes, "{name}");
            }
            if !name.contains("Konata") {
                assert!(v.warnings.is_empty(), "{name}: {:?}", &v.warnings[..1]);
            }
        }
        // The gem5 fixture is not Kanata.
        if let Some(path) = corpus("shioyadan__Konata__gem5-basic.txt") {
            let err = load_file(path).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        }
    }
}
