//! Lanes, stage names and the table that checks and interns stage names.

use std::collections::HashMap;
use std::num::NonZeroU32;

use crate::encode::StageTail;
use crate::error::{Error, ErrorKind, Result};

/// A track of stages drawn over one instruction's row.
///
/// Konata overlays lanes: by convention lane 0 holds the pipeline stages and lane 1 the
/// stalls. Each lane has at most one open stage per instruction.
///
/// ```
/// use kanata_writer::Lane;
/// assert_eq!(Lane::MAIN.get(), 0);
/// assert_eq!(Lane::STALL.get(), 1);
/// assert_eq!(Lane::new(2).get(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lane(u32);

impl Lane {
    /// Lane 0: the normal pipeline stages.
    pub const MAIN: Lane = Lane(0);
    /// Lane 1: stalls (stage `stl`), drawn over the main lane.
    pub const STALL: Lane = Lane(1);

    /// Lane number `n`.
    pub const fn new(n: u32) -> Lane {
        Lane(n)
    }

    /// The lane number as written in the trace.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// A stage name that [`Writer::stage`](crate::Writer::stage) has checked and interned.
///
/// Cheap to copy and to pass: the writer keeps the text. A handle belongs to the writer that
/// made it. [`Stage::STALL`] (`stl`) exists in every writer.
///
/// ```
/// # fn main() -> kanata_writer::Result<()> {
/// let mut w = kanata_writer::Writer::new(Vec::new());
/// let fetch = w.stage("F")?;
/// assert_eq!(w.stage_name(fetch), Some("F"));
/// assert_eq!(w.stage("F")?, fetch);
/// assert_eq!(w.stage_name(kanata_writer::Stage::STALL), Some("stl"));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stage(NonZeroU32);

impl Stage {
    /// `stl`, the stall stage Konata users know from lane 1.
    pub const STALL: Stage = Stage(NonZeroU32::MIN);

    #[inline(always)]
    fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }
}

/// Interned stage names, with the check that makes each one safe to write.
#[derive(Debug)]
pub(crate) struct StageTable {
    names: Vec<Box<str>>,
    /// `tails[i]` is the end of a line of stage `i`, for the fast encoder; every stage has
    /// one, so that a lookup is also the check that the handle is this writer's.
    tails: Vec<StageTail>,
    /// Whether to render tails; a writer that formats nothing leaves them all empty, which
    /// sends its calls down the general path.
    render: bool,
    by_name: HashMap<Box<str>, Stage>,
}

impl StageTable {
    /// A table with `stl`; `render` says whether lines will be formatted with its tails.
    pub(crate) fn new(render: bool) -> StageTable {
        let mut table = StageTable {
            names: Vec::new(),
            tails: Vec::new(),
            render,
            by_name: HashMap::new(),
        };
        let stall = table.intern("stl").expect("`stl` is a valid stage name");
        debug_assert_eq!(stall, Stage::STALL);
        table
    }

    pub(crate) fn intern(&mut self, name: &str) -> Result<Stage> {
        if let Some(&stage) = self.by_name.get(name) {
            return Ok(stage);
        }
        check_stage_name(name)?;
        let number = u32::try_from(self.names.len() + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| Error::new(ErrorKind::InvalidOption("too many stage names".into())))?;
        let stage = Stage(number);
        self.names.push(name.into());
        self.tails.push(if self.render {
            StageTail::new(name.as_bytes())
        } else {
            StageTail::NONE
        });
        self.by_name.insert(name.into(), stage);
        Ok(stage)
    }

    /// The tail of `stage`'s lines, or `None` for a handle of another writer.
    #[inline(always)]
    pub(crate) fn tail(&self, stage: Stage) -> Option<&StageTail> {
        self.tails.get(stage.index())
    }

    /// The tails of the stages open in lanes 0 and 1 (`None` where none is), if each has a
    /// tail that [fits](StageTail::fits): what the fast end of a life writes its `E`s with.
    #[inline(always)]
    pub(crate) fn fitting_tails(
        &self,
        open: [Option<Stage>; 2],
    ) -> Option<[Option<&StageTail>; 2]> {
        let tail = |stage: Option<Stage>| match stage {
            None => Some(None),
            Some(stage) => self.tail(stage).filter(|t| t.fits()).map(Some),
        };
        Some([tail(open[0])?, tail(open[1])?])
    }

    /// The tail of a stage this writer made, or for no stage any tail that fits (to be
    /// formatted and dropped). One that does not [fit](StageTail::fits) means the stage's
    /// lines need the general encoder.
    #[inline(always)]
    pub(crate) fn tail_or_any(&self, stage: Option<Stage>) -> &StageTail {
        // `stl` is always there, and fits unless nothing is rendered.
        let index = stage.map_or(0, Stage::index);
        self.tails.get(index).unwrap_or(&StageTail::NONE)
    }

    #[inline]
    pub(crate) fn name(&self, stage: Stage) -> Option<&str> {
        self.names.get(stage.index()).map(|name| &**name)
    }

    /// Appends the general encoder's `S` or `E` line (`command`) of `stage` for `insn` in
    /// `lane` to `out`.
    pub(crate) fn encode_line(
        &self,
        out: &mut Vec<u8>,
        command: u8,
        insn: u64,
        lane: Lane,
        stage: Stage,
    ) {
        let name = self.name(stage).unwrap_or_default();
        crate::encode::stage(out, command, insn, lane.get(), name.as_bytes());
    }
}

/// Konata splits lines on TAB and trims stage names, so a name with a TAB, a line break or
/// white space at either end would not come back as written.
fn check_stage_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains(['\t', '\n', '\r']) {
        "it contains a TAB or a line break"
    } else if name.contains("//") {
        // Readers of sloppy logs (kanata-pp's Q3) take ` // …` after a command as a comment.
        "it contains `//`, which reads as a comment"
    } else if name.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}') != name {
        // JavaScript's `trim`, which Konata uses, also strips U+FEFF.
        "it starts or ends with white space"
    } else {
        return Ok(());
    };
    Err(Error::new(ErrorKind::InvalidStageName {
        name: name.to_owned(),
        reason,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_are_checked_and_interned_once() {
        let mut table = StageTable::new(true);
        let f = table.intern("F").unwrap();
        assert_eq!(table.intern("F").unwrap(), f);
        assert_ne!(table.intern("Issue Q").unwrap(), f, "inner spaces are fine");
        for bad in ["", " F", "F ", "a\tb", "a\nb", "a\rb"] {
            let err = table.intern(bad).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::InvalidStageName { .. }),
                "{bad:?}"
            );
        }
        assert_eq!(table.name(Stage::STALL), Some("stl"));
    }
}
