//! RSD's raw `RSD_Kanata` log converted to Kanata: what RSD's Python KanataConverter does
//! (`shared/spec/rsd-raw.md` §2, HEAD 7b65f6b), written through the typed writer so that the
//! output is canonical and Konata draws it as it draws the Python converter's output, with
//! zero warnings.
//!
//! # The raw log
//!
//! RSD's dumper writes a snapshot of the pipeline every cycle: after `C 1`, one `S` line per
//! valid pipeline-register slot (stage, stall and clear bits, the 10-bit op serial `sid` and
//! the micro-op index `mid`, a free comment) and one `L` line per valid decode slot (PC and
//! instruction word). Nothing says when an op *enters* a stage: that is read from the
//! difference between an op's line and its previous one.
//!
//! # The two halves, as in RSD's converter
//!
//! **Parser** (`stage_line`). Each `S` line is compared with the op's previous
//! state (`ops`, keyed by gid) and turned into *events*, queued by cycle: a stall that ends
//! restarts the stage (`E stl`, `E X`, `S X`), a stall that begins opens `stl` in lane 1, a
//! new stage closes the old one, entering `Cm` queues the stage end and the retirement for the
//! next cycle, and `clear` without `stall` flushes. The gid unwraps the 10-bit serial
//! around the youngest retired gid (`4 * sid + mid`, modulo 4096 moved to the window of the
//! largest gid retired so far). The first `L` of an op queues its type-0 label,
//! `<pc>: <disassembly>` ([`crate::rsd::disasm`]).
//!
//! **Hold-back.** After each `C` line, the cycles at least three behind the current one are
//! released in order. Holding them back lets a later line cancel them: an op flushed straight
//! from `Np` is deleted from `ops`, and an event is only written if its gid is still in `ops`
//! when its cycle is released, so wrong-path fetches never appear. A retirement deletes its
//! op, and one whose gid is a multiple of 64 also every older op (RSD's garbage collection),
//! silently dropping whatever those still had queued. The queue is a map of at most five
//! cycle buckets whose event text lives in one string per bucket; buckets are reused.
//!
//! **Generator** (`on_event`). Each released event becomes one writer call:
//! `I` (the gid as simulator id, the detail label `(g:<gid>,c0)\n`), `S`/`E` in lane 0
//! (stage comments become detail labels and stage notes), `stl` in lane 1, `R` with RSD's
//! serial retire ids, flushes with retire id 0. Time in the output is RSD's: its `C` lines
//! add up the jumps between the cycles it releases, and the file starts at `C=\t-1`.
//!
//! # Where the output differs from the Python converter's, and why
//!
//! * Labels that come after their op's `R` (an op flushed in decode in the cycle its `L`
//!   arrives) are moved right before that `R` by the writer's late-label window: Konata
//!   applied them there anyway, with a warning.
//! * Python's output sometimes tells Konata something it applies *after* an op's end, or
//!   closes a stage that closed cycles ago (logs that contradict themselves). The writer
//!   cannot write that, so it is dropped and reported (rule R4).
//! * Where the Python converter crashes or stops (rsd-raw.md §4), the line is reported (R1,
//!   R2) and conversion goes on; where it warns, the warning is reported (R3).
//! * Serials outside 0–1023 and micro-op indices outside 0–3 (the dumper's field widths) are
//!   refused (R1): that bound is what makes the memory bound below hold.
//!
//! `docs/rsd.md` lists every case.
//!
//! # Bounded memory
//!
//! A gid is always computed within 4096 of the largest gid retired, so an op more than 4096
//! behind it can never be named again: when the maps have doubled since the last sweep, such
//! ops are forgotten (unless a queued event still names them), which changes nothing in the
//! output. The flushed set keeps only gids younger than the largest retired, as RSD's does.
//! Memory therefore follows the ops in flight and the hold-back window, however long the
//! run.

pub mod disasm;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use bstr::ByteSlice;
use kanata_writer::{Finished, InsnId, LabelKind, Lane, Stage, Writer, WriterBuilder};

use crate::convert::converter::Converter;
use crate::diag::{Diagnostics, Rule};
use crate::error::{Error, ErrorKind};
use crate::kanata::ids::IdMap;
use crate::kanata::normalize::Repairs;
use crate::kanata::parse::parse_int;
use disasm::Syntax;

/// How an RSD raw log is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RsdOptions {
    /// Which version of RSD's disassembler the type-0 labels reproduce.
    pub disasm: Syntax,
}

/// Stage names by raw stage id (`KS_NP` … `KS_CM`), as RSD's converter names them.
const STAGE_NAMES: [&str; 15] = [
    "Np", "F", "Pd", "Dc", "Rn", "Ds", "Sc", "Is", "Rr", "X", "Ma", "Mt", "Rw", "Wc", "Cm",
];
/// The commit stage: entering it retires the op one cycle later.
const RETIRE_STAGE: u8 = 14;
/// The stall stage's bit in [`OutOp`]'s stage masks (lane 1).
const STALL_BIT: u32 = 15;
/// Cycles at least this far behind the current one are released.
const HOLD_BACK: i64 = 3;
/// The gid wraps at 2^10 serials × 4 micro-ops.
const GID_WRAP: i64 = 4096;
const GID_QUARTER: i64 = GID_WRAP / 4;
/// RSD's garbage collection runs at retirements of gids that are multiples of this.
const GC_EVERY: i64 = 64;
/// The maps are swept once they hold this many entries more than twice what the last sweep
/// left.
const SWEEP_MIN: usize = 4096;

/// A parser event (RSD's `RSD_Event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Init,
    StageBegin,
    StageEnd,
    StallBegin,
    StallEnd,
    Retire,
    Flush,
    Label,
}

/// An event queued for its cycle.
#[derive(Clone, Copy, Debug)]
struct Event {
    gid: i64,
    /// The raw line that queued it, for reports.
    line: u64,
    kind: Kind,
    stage: u8,
    /// The comment or label text: a range of the bucket's `text`.
    text: (usize, usize),
}

/// The events of one cycle, in the order they were queued.
#[derive(Debug, Default)]
struct Bucket {
    events: Vec<Event>,
    text: String,
}

/// What the parser remembers of an op: its last line.
#[derive(Clone, Copy, Debug)]
struct RawOp {
    stage: u8,
    stall: bool,
    label_done: bool,
}

/// What the generator knows of an op it wrote.
#[derive(Clone, Copy, Debug)]
struct OutOp {
    insn: InsnId,
    /// Stages (bit = stage id, [`STALL_BIT`] for `stl`) entered at least once.
    entered: u16,
    /// Stages closed at cycle `closed_at`.
    closed: u16,
    closed_at: i64,
}

impl OutOp {
    fn mark_closed(&mut self, bit: u32, time: i64) {
        if self.closed_at != time {
            self.closed = 0;
            self.closed_at = time;
        }
        self.closed |= 1 << bit;
    }
}

/// Reads an RSD raw log and writes it as Kanata.
pub(crate) struct RsdConverter<W: Write> {
    writer: Writer<W>,
    syntax: Syntax,
    /// Writer handles by raw stage id.
    stages: [Stage; 15],
    header_seen: bool,

    // ----- parser (RSD_Parser) -----
    /// The raw cycle: the sum of the `C` deltas, from -1.
    cycle: i64,
    ops: IdMap<i64, RawOp>,
    /// Flushed gids not older than `max_retired`.
    flushed: BTreeSet<i64>,
    /// The largest gid that entered `Cm`.
    max_retired: i64,
    pending: BTreeMap<i64, Bucket>,
    spare: Vec<Bucket>,

    // ----- generator (KanataGenerator) -----
    /// The last cycle released (the generator's `currentCycle_`).
    out_cycle: i64,
    /// The output's cycle: the sum of the forward jumps of `out_cycle`, from -1.
    time: i64,
    out_ops: IdMap<i64, OutOp>,
    next_retire_id: i64,

    /// The map size at which the next sweep runs.
    sweep_at: usize,
}

/// The fields of a raw line, split on TAB and CR as RSD splits them; at most eight are kept
/// (the eighth is the comment).
fn split_fields(line: &[u8]) -> ([&[u8]; 8], usize) {
    let mut fields: [&[u8]; 8] = [&[]; 8];
    let mut count = 0;
    let mut rest = line;
    loop {
        let end = memchr::memchr2(b'\t', b'\r', rest).unwrap_or(rest.len());
        fields[count] = &rest[..end];
        count += 1;
        if end == rest.len() || count == fields.len() {
            return (fields, count);
        }
        rest = &rest[end + 1..];
    }
}

/// An integer field as Python's `int()` reads the dumper's output.
fn int(field: &[u8]) -> Option<i64> {
    parse_int(field).map(|(value, _)| value)
}

impl<W: Write + Send + 'static> RsdConverter<W> {
    pub(crate) fn new(
        mut builder: WriterBuilder,
        output: W,
        options: RsdOptions,
        repairs: &Repairs,
    ) -> Result<RsdConverter<W>, Error> {
        // RSD's converter starts its output at `C=\t-1`; its first cycle, 0, is `C\t1`.
        builder
            .start_cycle(-1)
            .late_labels(repairs.late_window)
            .compact(repairs.compact);
        let mut writer = builder.from_writer(output)?;
        let mut stages = [Stage::STALL; 15];
        for (stage, name) in stages.iter_mut().zip(STAGE_NAMES) {
            *stage = writer.stage(name)?;
        }
        Ok(RsdConverter {
            writer,
            syntax: options.disasm,
            stages,
            header_seen: false,
            cycle: -1,
            ops: IdMap::default(),
            flushed: BTreeSet::new(),
            max_retired: 0,
            pending: BTreeMap::new(),
            spare: Vec::new(),
            out_cycle: -1,
            time: -1,
            out_ops: IdMap::default(),
            next_retire_id: 0,
            sweep_at: SWEEP_MIN,
        })
    }

    /// RSD's `CreateGID_`: the serial unwrapped around the largest gid retired.
    fn gid(&self, sid: i64, mid: i64) -> i64 {
        let g = mid + 4 * sid;
        let r = self.max_retired.rem_euclid(GID_WRAP);
        let mut n = self.max_retired - r;
        if r > 3 * GID_QUARTER && g < GID_QUARTER {
            n += GID_WRAP;
        }
        if g > 3 * GID_QUARTER && r < GID_QUARTER {
            n -= GID_WRAP;
        }
        n + g
    }

    /// The op of an `S` or `L` line, or a report (R1) of why the line is not read.
    fn op_fields(
        &self,
        sid: &[u8],
        mid: &[u8],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Option<i64> {
        let (Some(sid), Some(mid)) = (int(sid), int(mid)) else {
            diag.report(Rule::R1, lineno, || {
                "serial or micro-op index is not a number: line skipped".to_owned()
            });
            return None;
        };
        if !(0..4).contains(&mid) {
            diag.report(Rule::R1, lineno, || {
                let stops = if mid >= 4 {
                    " (RSD's converter stops here)"
                } else {
                    ""
                };
                format!("micro-op index {mid} beyond the dumper's 2 bits{stops}: line skipped")
            });
            return None;
        }
        if !(0..1024).contains(&sid) {
            diag.report(Rule::R1, lineno, || {
                format!("serial {sid} beyond the dumper's 10 bits: line skipped")
            });
            return None;
        }
        Some(self.gid(sid, mid))
    }

    fn push(&mut self, cycle: i64, gid: i64, kind: Kind, stage: u8, line: u64, text: &str) {
        let spare = &mut self.spare;
        let bucket = self
            .pending
            .entry(cycle)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        let start = bucket.text.len();
        bucket.text.push_str(text);
        bucket.events.push(Event {
            gid,
            line,
            kind,
            stage,
            text: (start, bucket.text.len()),
        });
    }

    /// RSD's `OnRSD_Stage_`: one pipeline-register slot.
    fn stage_line(
        &mut self,
        f: &[&[u8]],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let Some(&valid) = f.get(2) else {
            diag.report(Rule::R1, lineno, || {
                "`S` line without its valid field: skipped".to_owned()
            });
            return Ok(());
        };
        if valid == b"x" {
            return Ok(());
        }
        match int(valid) {
            Some(0) => return Ok(()),
            Some(_) => {}
            None => {
                diag.report(Rule::R1, lineno, || {
                    "`S` line whose valid field is not a number: skipped".to_owned()
                });
                return Ok(());
            }
        }
        if f.len() < 7 {
            diag.report(Rule::R1, lineno, || {
                format!("`S` line with {} fields, 7 needed: skipped", f.len())
            });
            return Ok(());
        }
        let (Some(stage), Some(stall), Some(clear)) = (int(f[1]), int(f[3]), int(f[4])) else {
            diag.report(Rule::R1, lineno, || {
                "`S` line whose stage, stall or clear field is not a number: skipped".to_owned()
            });
            return Ok(());
        };
        if !(0..=i64::from(RETIRE_STAGE)).contains(&stage) {
            diag.report(Rule::R1, lineno, || {
                format!("stage id {stage} is not one of RSD's 0-14: line skipped")
            });
            return Ok(());
        }
        let Some(gid) = self.op_fields(f[5], f[6], lineno, diag) else {
            return Ok(());
        };
        let stage = stage as u8;
        let (stall, clear) = (stall != 0, clear != 0);
        // Both bits set means "insert a bubble", not a flush.
        let flush = clear && !stall;
        if self.flushed.contains(&gid) {
            // Back-end ops are dumped as flushed both in their register and by the commit
            // stage's walk.
            if flush {
                return Ok(());
            }
            diag.report(Rule::R3, lineno, || {
                format!("op g:{gid} dumped again after its flush")
            });
        } else if gid < self.max_retired {
            diag.report(Rule::R3, lineno, || {
                format!(
                    "op g:{gid} dumped after a younger op (g:{}) retired",
                    self.max_retired
                )
            });
        }
        let comment = match f.get(7) {
            Some(comment) => text(comment, lineno, diag),
            None => {
                diag.report(Rule::R2, lineno, || {
                    "`S` line without its comment field (RSD's converter raises IndexError): \
                     read with an empty comment"
                        .to_owned()
                });
                Cow::Borrowed("")
            }
        };
        let cur = self.cycle;
        let mut label_done = false;
        match self.ops.get(&gid).copied() {
            Some(prev) => {
                label_done = prev.label_done;
                if prev.stall && !stall {
                    // The stage restarts, so that the comment of the new line is shown.
                    self.push(cur, gid, Kind::StallEnd, prev.stage, lineno, "");
                    self.push(cur, gid, Kind::StageEnd, prev.stage, lineno, "");
                    self.push(cur, gid, Kind::StageBegin, stage, lineno, &comment);
                }
                if !prev.stall && stall {
                    self.push(cur, gid, Kind::StallBegin, stage, lineno, "");
                }
                if prev.stage != stage {
                    self.push(cur, gid, Kind::StageEnd, prev.stage, lineno, "");
                    self.push(cur, gid, Kind::StageBegin, stage, lineno, &comment);
                    if stage == RETIRE_STAGE {
                        self.max_retired = self.max_retired.max(gid);
                        while self.flushed.first().is_some_and(|&g| g < self.max_retired) {
                            self.flushed.pop_first();
                        }
                        self.push(
                            cur.saturating_add(1),
                            gid,
                            Kind::StageEnd,
                            stage,
                            lineno,
                            "",
                        );
                        self.push(cur.saturating_add(1), gid, Kind::Retire, stage, lineno, "");
                    }
                }
            }
            None => {
                self.push(cur, gid, Kind::Init, stage, lineno, "");
                self.push(cur, gid, Kind::StageBegin, stage, lineno, &comment);
                if stall {
                    self.push(cur, gid, Kind::StallBegin, stage, lineno, "");
                }
            }
        }
        if flush {
            let prev_stage = match self.ops.get(&gid) {
                Some(prev) => prev.stage,
                None => {
                    diag.report(Rule::R2, lineno, || {
                        format!(
                            "flush of op g:{gid}, never seen before (RSD's converter raises \
                             KeyError): flushed in the stage it is first seen in"
                        )
                    });
                    stage
                }
            };
            if prev_stage == 0 {
                // A wrong-path fetch, flushed straight from Np: it and its queued events
                // disappear.
                self.ops.remove(&gid);
                return Ok(());
            }
            self.push(cur, gid, Kind::StageEnd, stage, lineno, "");
            self.push(cur, gid, Kind::Flush, stage, lineno, "");
            self.flushed.insert(gid);
        }
        self.ops.insert(
            gid,
            RawOp {
                stage,
                stall,
                label_done,
            },
        );
        Ok(())
    }

    /// RSD's `OnRSD_Label_`: the first `L` of an op queues its type-0 label.
    fn label_line(
        &mut self,
        f: &[&[u8]],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        if f.len() < 5 {
            diag.report(Rule::R1, lineno, || {
                format!("`L` line with {} fields, 5 needed: skipped", f.len())
            });
            return Ok(());
        }
        let Some(gid) = self.op_fields(f[1], f[2], lineno, diag) else {
            return Ok(());
        };
        let Some(op) = self.ops.get_mut(&gid) else {
            diag.report(Rule::R2, lineno, || {
                format!(
                    "`L` for op g:{gid}, which is not in flight (RSD's converter raises \
                     KeyError): skipped"
                )
            });
            return Ok(());
        };
        if op.label_done {
            return Ok(());
        }
        op.label_done = true;
        let mut label = text(f[3], lineno, diag).into_owned();
        label.push_str(": ");
        let code = text(f[4], lineno, diag);
        if disasm::disassemble_into(&code, self.syntax, &mut label).is_err() {
            diag.report(Rule::R2, lineno, || {
                format!(
                    "instruction word {code}: RSD's disassembler raises UnboundLocalError; \
                     written as `{label}`"
                )
            });
        }
        self.push(self.cycle, gid, Kind::Label, 0, lineno, &label);
        Ok(())
    }

    /// RSD's `OnRSD_Cycle_`: time moves, and the cycles out of the hold-back are written.
    fn cycle_line(
        &mut self,
        f: &[&[u8]],
        lineno: u64,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let Some(delta) = f.get(1).and_then(|d| int(d)) else {
            diag.report(Rule::R1, lineno, || {
                "`C` line without a number: skipped".to_owned()
            });
            return Ok(());
        };
        let Some(cycle) = self.cycle.checked_add(delta) else {
            diag.report(Rule::R1, lineno, || {
                "`C` line that takes the cycle beyond 64 bits: skipped".to_owned()
            });
            return Ok(());
        };
        self.cycle = cycle;
        self.release(false, diag)?;
        if self.ops.len() + self.out_ops.len() > self.sweep_at {
            self.sweep();
        }
        Ok(())
    }

    /// RSD's `ProcessEvents_`: writes the cycles at least [`HOLD_BACK`] behind (all of them
    /// at the end).
    fn release(&mut self, all: bool, diag: &mut Diagnostics) -> Result<(), Error> {
        let limit = self.cycle.saturating_sub(HOLD_BACK);
        while let Some(entry) = self.pending.first_entry() {
            if !all && *entry.key() > limit {
                break;
            }
            let (cycle, mut bucket) = entry.remove_entry();
            self.on_cycle(cycle)?;
            for event in &bucket.events {
                // An op deleted since its events were queued is not written.
                if self.ops.contains_key(&event.gid) {
                    let (start, end) = event.text;
                    self.on_event(event, &bucket.text[start..end], diag)?;
                }
                if event.kind == Kind::Retire {
                    if self.ops.remove(&event.gid).is_none() {
                        diag.report(Rule::R2, event.line, || {
                            format!(
                                "retirement of op g:{}, already dropped by RSD's garbage \
                                 collection (RSD's converter raises KeyError): not written",
                                event.gid
                            )
                        });
                    }
                    if event.gid % GC_EVERY == 0 {
                        let gid = event.gid;
                        self.ops.retain(|&g, _| g >= gid);
                    }
                }
            }
            bucket.events.clear();
            bucket.text.clear();
            self.spare.push(bucket);
        }
        Ok(())
    }

    /// Forgets the ops no line can name again (more than [`GID_WRAP`] behind the largest gid
    /// retired) and no queued event names: invisible in the output, it bounds memory.
    fn sweep(&mut self) {
        let floor = self.max_retired - GID_WRAP;
        let queued: IdMap<i64, ()> = self
            .pending
            .values()
            .flat_map(|bucket| bucket.events.iter().map(|e| (e.gid, ())))
            .collect();
        self.ops
            .retain(|gid, _| *gid >= floor || queued.contains_key(gid));
        let ops = &self.ops;
        // An event reaches the generator only while its gid is in `ops`.
        self.out_ops
            .retain(|gid, _| *gid >= floor || ops.contains_key(gid));
        self.sweep_at = SWEEP_MIN + 2 * (self.ops.len() + self.out_ops.len());
    }

    /// The generator's `OnCycle`: the output's time jumps as far as the released cycle did.
    fn on_cycle(&mut self, cycle: i64) -> Result<(), Error> {
        if cycle > self.out_cycle {
            self.time = cycle
                .checked_sub(self.out_cycle)
                .and_then(|jump| self.time.checked_add(jump))
                .ok_or_else(|| Error::new(ErrorKind::Input, "the cycle count overflows"))?;
            // `time` is at least 0 after a forward jump from -1.
            self.writer.set_cycle(self.time as u64)?;
        }
        self.out_cycle = cycle;
        Ok(())
    }

    /// The generator's `OnEvent`: one event becomes one writer call.
    fn on_event(&mut self, event: &Event, text: &str, diag: &mut Diagnostics) -> Result<(), Error> {
        let gid = event.gid;
        let Some(&op) = self.out_ops.get(&gid) else {
            if event.kind != Kind::Init {
                diag.report(Rule::R3, event.line, || {
                    format!("event for op g:{gid}, which RSD's generator already forgot: skipped")
                });
                return Ok(());
            }
            let insn = self.writer.begin_signed(i128::from(gid), 0)?;
            self.out_ops.insert(
                gid,
                OutOp {
                    insn,
                    entered: 0,
                    closed: 0,
                    closed_at: 0,
                },
            );
            let labelled =
                self.writer
                    .label_fmt(insn, LabelKind::Detail, format_args!("(g:{gid},c0)\\n"));
            return self.labelled(labelled, event, diag);
        };
        match event.kind {
            Kind::Init => {
                diag.report(Rule::R3, event.line, || {
                    format!(
                        "op g:{gid} defined twice: its detail label is repeated on the \
                         instruction it already has"
                    )
                });
                let labelled = self.writer.label_fmt(
                    op.insn,
                    LabelKind::Detail,
                    format_args!("(g:{gid},c0)\\n"),
                );
                self.labelled(labelled, event, diag)
            }
            Kind::StageBegin => {
                let stage = self.stages[usize::from(event.stage)];
                if self.enter(gid, Lane::MAIN, stage, u32::from(event.stage), event, diag)?
                    && !text.is_empty()
                {
                    let labelled = self.writer.label(op.insn, LabelKind::Detail, text);
                    self.labelled(labelled, event, diag)?;
                    let labelled = self.writer.label(op.insn, LabelKind::StageNote, text);
                    self.labelled(labelled, event, diag)?;
                }
                Ok(())
            }
            Kind::StageEnd => {
                let stage = self.stages[usize::from(event.stage)];
                self.leave(gid, Lane::MAIN, stage, u32::from(event.stage), event, diag)
            }
            Kind::StallBegin => self
                .enter(gid, Lane::STALL, Stage::STALL, STALL_BIT, event, diag)
                .map(drop),
            Kind::StallEnd => self.leave(gid, Lane::STALL, Stage::STALL, STALL_BIT, event, diag),
            Kind::Retire => {
                let retire_id = self.next_retire_id;
                self.next_retire_id += 1;
                self.out_ops.remove(&gid);
                if event.gid % GC_EVERY == 0 {
                    self.out_ops.retain(|&g, _| g >= gid);
                }
                if self.writer.is_live(op.insn) {
                    self.writer.retire_as(op.insn, retire_id)?;
                } else {
                    self.after_end(event, "a second `R`", diag);
                }
                Ok(())
            }
            Kind::Flush => {
                // The generator keeps the op: later events for it still reach it.
                if self.writer.is_live(op.insn) {
                    self.writer.flush(op.insn)?;
                } else {
                    self.after_end(event, "a second `R`", diag);
                }
                Ok(())
            }
            Kind::Label => {
                let labelled = self.writer.label(op.insn, LabelKind::Name, text);
                self.labelled(labelled, event, diag)
            }
        }
    }

    /// `S` in `lane`; false (and reported) after the instruction's end.
    fn enter(
        &mut self,
        gid: i64,
        lane: Lane,
        stage: Stage,
        bit: u32,
        event: &Event,
        diag: &mut Diagnostics,
    ) -> Result<bool, Error> {
        let Some(op) = self.out_ops.get_mut(&gid) else {
            return Ok(false);
        };
        if !self.writer.is_live(op.insn) {
            self.after_end(event, "a stage", diag);
            return Ok(false);
        }
        if let Some(previous) = self.writer.open_stage(op.insn, lane) {
            let previous = match lane {
                Lane::STALL => STALL_BIT,
                _ => self.stages.iter().position(|&s| s == previous).unwrap_or(0) as u32,
            };
            op.mark_closed(previous, self.time);
        }
        op.entered |= 1 << bit;
        self.writer.enter(op.insn, lane, stage)?;
        Ok(true)
    }

    /// `E` in `lane`. Konata closes the most recent stage of that name: the open one, or one
    /// already closed, whose end it then moves. Moving it within the same cycle (or having
    /// none to move) changes nothing drawn; moving an older one cannot be written.
    fn leave(
        &mut self,
        gid: i64,
        lane: Lane,
        stage: Stage,
        bit: u32,
        event: &Event,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        let Some(op) = self.out_ops.get_mut(&gid) else {
            return Ok(());
        };
        if !self.writer.is_live(op.insn) {
            self.after_end(event, "an `E`", diag);
            return Ok(());
        }
        if self.writer.leave_if_open(op.insn, lane, stage)? {
            op.mark_closed(bit, self.time);
        } else {
            let closed_now = op.closed_at == self.time && op.closed & (1 << bit) != 0;
            if op.entered & (1 << bit) != 0 && !closed_now {
                let name = self.writer.stage_name(stage).unwrap_or_default().to_owned();
                diag.report(Rule::R4, event.line, || {
                    format!(
                        "`E` of stage {name} of op g:{gid}, closed in an earlier cycle (Konata \
                         would stretch it): dropped"
                    )
                });
            }
        }
        Ok(())
    }

    /// The result of a label call: one that comes too long after its instruction's `R` is
    /// reported and dropped.
    fn labelled(
        &self,
        result: kanata_writer::Result<()>,
        event: &Event,
        diag: &mut Diagnostics,
    ) -> Result<(), Error> {
        match result {
            Err(err) if matches!(err.kind(), kanata_writer::ErrorKind::NotLive { .. }) => {
                self.after_end(event, "a label more than --late-window cycles", diag);
                Ok(())
            }
            result => Ok(result?),
        }
    }

    fn after_end(&self, event: &Event, what: &str, diag: &mut Diagnostics) {
        diag.report(Rule::R4, event.line, || {
            format!(
                "{what} after the `R` of op g:{} (Konata would apply it with a warning): \
                 dropped",
                event.gid
            )
        });
    }
}

/// A text field; invalid UTF-8 (on which RSD's converter stops) is replaced and reported.
fn text<'a>(field: &'a [u8], lineno: u64, diag: &mut Diagnostics) -> Cow<'a, str> {
    match std::str::from_utf8(field) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => {
            diag.report(Rule::R2, lineno, || {
                "invalid UTF-8 (RSD's converter raises UnicodeDecodeError): replaced with \
                 U+FFFD"
                    .to_owned()
            });
            field.to_str_lossy()
        }
    }
}

impl<W: Write + Send + 'static> Converter<W> for RsdConverter<W> {
    fn line(&mut self, line: &[u8], lineno: u64, diag: &mut Diagnostics) -> Result<(), Error> {
        let (fields, count) = split_fields(line);
        let fields = &fields[..count];
        let mut command = fields[0];
        if !self.header_seen {
            command = command.strip_prefix(b"\xef\xbb\xbf").unwrap_or(command);
            if command == b"RSD_Kanata" {
                self.header_seen = true;
                if fields.get(1).and_then(|v| int(v)) != Some(0) {
                    diag.report(Rule::R1, lineno, || {
                        "RSD_Kanata header of a version other than 0000: read as 0000".to_owned()
                    });
                }
                return Ok(());
            }
            if !command.is_empty() && command != b"#" {
                diag.report(Rule::R1, lineno, || {
                    "no `RSD_Kanata` header before the first command".to_owned()
                });
                self.header_seen = true;
            }
        }
        match command {
            b"S" => self.stage_line(fields, lineno, diag),
            b"L" => self.label_line(fields, lineno, diag),
            b"C" => self.cycle_line(fields, lineno, diag),
            b"#" | b"" => Ok(()),
            other => {
                diag.report(Rule::R1, lineno, || {
                    format!(
                        "unknown command `{}` (RSD's converter stops here): skipped",
                        other.as_bstr()
                    )
                });
                Ok(())
            }
        }
    }

    fn finish(mut self: Box<Self>, diag: &mut Diagnostics) -> Result<Finished<W>, Error> {
        self.release(true, diag)?;
        Ok(self.writer.finish()?)
    }
}

#[cfg(test)]
mod tests;
