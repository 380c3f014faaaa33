//! The one error type of the crate: misuse of the API and I/O failures.

use std::{fmt, io};

/// A specialized `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while writing a trace.
///
/// Kept to one pointer so that the `Result` of the hot calls stays small; the detail lives in
/// [`ErrorKind`]. A misuse error ([`Error::is_misuse`]) rejects the call before anything is
/// written, so the output stays valid and the writer stays usable. An I/O error leaves the
/// writer unusable: every later call that would write returns [`ErrorKind::Poisoned`].
pub struct Error(Box<ErrorKind>);

/// What went wrong, in detail.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Writing to the output (or compressing into it) failed.
    Io(io::Error),
    /// An earlier I/O error made the writer unusable; nothing more is written.
    Poisoned,
    /// [`Writer::set_cycle`](crate::Writer::set_cycle) asked for a cycle before the current one.
    TimeWentBack {
        /// The current cycle.
        from: i64,
        /// The cycle asked for.
        to: u64,
    },
    /// Time would move past the largest cycle Kanata can hold (`i64::MAX`).
    CycleOverflow {
        /// The current cycle.
        from: i64,
        /// How far time was asked to move.
        by: u64,
    },
    /// The instruction was already retired or flushed.
    NotLive {
        /// The instruction's id in the file.
        insn: u64,
    },
    /// The instruction handle was not minted by this writer.
    UnknownInsn {
        /// The id the handle carries.
        insn: u64,
    },
    /// [`Writer::leave`](crate::Writer::leave) on a lane with no open stage.
    NoOpenStage {
        /// The instruction's id in the file.
        insn: u64,
        /// The lane.
        lane: u32,
    },
    /// A [`LabelKind::StageNote`](crate::LabelKind::StageNote) before the instruction entered
    /// any stage: there is no stage for the note to belong to.
    NoteBeforeStage {
        /// The instruction's id in the file.
        insn: u64,
    },
    /// A dependency whose producer is not older than its consumer.
    ProducerNotOlder {
        /// The consumer's id in the file.
        consumer: u64,
        /// The producer's id in the file.
        producer: u64,
    },
    /// A stage name Konata would not show as written.
    InvalidStageName {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The stage handle was not made by this writer's [`Writer::stage`](crate::Writer::stage).
    UnknownStage,
    /// A `Display` implementation inside a [`Writer::label_fmt`](crate::Writer::label_fmt)
    /// call returned an error; the label was not written.
    Format,
    /// A builder setting that cannot work (for example a compression level out of range).
    InvalidOption(String),
    /// A simulator id outside what readers of Kanata keep (`i64::MIN` to `u64::MAX`):
    /// kanata-pp's reader would drop the instruction (the spec's Q1).
    SimIdOutOfRange {
        /// The id as given.
        sim_id: i128,
    },
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error(Box::new(kind))
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// Unwraps the detail.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// True when the call was rejected because of how the API was used; nothing was written
    /// and the writer can go on.
    pub fn is_misuse(&self) -> bool {
        !matches!(*self.0, ErrorKind::Io(_) | ErrorKind::Poisoned)
    }
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Error {
        Error::new(ErrorKind::Io(err))
    }
}

impl fmt::Debug for Error {
    /// The message, as `Display` writes it: `fn main() -> Result<(), Box<dyn Error>>` prints
    /// errors with `Debug`, and users should read a sentence there, not a struct.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            ErrorKind::Io(err) => write!(f, "cannot write the trace: {err}"),
            ErrorKind::Poisoned => {
                f.write_str("the trace writer stopped after an earlier write error")
            }
            ErrorKind::TimeWentBack { from, to } => {
                write!(f, "time went back from cycle {from} to cycle {to}")
            }
            ErrorKind::CycleOverflow { from, by } => write!(
                f,
                "advancing {by} cycles from cycle {from} passes the largest cycle ({})",
                i64::MAX
            ),
            ErrorKind::NotLive { insn } => {
                write!(f, "instruction {insn} was already retired or flushed")
            }
            ErrorKind::UnknownInsn { insn } => {
                write!(f, "instruction id {insn} was not made by this writer")
            }
            ErrorKind::NoOpenStage { insn, lane } => {
                write!(f, "instruction {insn} has no open stage in lane {lane}")
            }
            ErrorKind::NoteBeforeStage { insn } => write!(
                f,
                "stage note for instruction {insn} before it entered any stage"
            ),
            ErrorKind::ProducerNotOlder { consumer, producer } => write!(
                f,
                "dependency producer {producer} is not older than its consumer {consumer}"
            ),
            ErrorKind::InvalidStageName { name, reason } => {
                write!(f, "invalid stage name {name:?}: {reason}")
            }
            ErrorKind::UnknownStage => f.write_str("stage handle was not made by this writer"),
            ErrorKind::Format => f.write_str("formatting a label failed"),
            ErrorKind::SimIdOutOfRange { sim_id } => write!(
                f,
                "simulator id {sim_id} is outside {} to {}, the ids readers of Kanata keep",
                i64::MIN,
                u64::MAX
            ),
            ErrorKind::InvalidOption(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.0 {
            ErrorKind::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        match err.into_kind() {
            ErrorKind::Io(err) => err,
            kind => io::Error::other(Error::new(kind)),
        }
    }
}
