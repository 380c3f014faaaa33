//! The error of a conversion: which file, which line, and what is wrong.

use std::fmt;
use std::io;

/// Why a conversion failed. Nothing is written when it does.
#[derive(Clone, Debug)]
pub struct Error {
    kind: ErrorKind,
    /// The reader of our output went away (`kanata-pp … -o - | head`): a normal end.
    broken_pipe: bool,
    /// The input (or output) the error is about, as the user named it.
    file: Option<String>,
    /// The 1-based input line, when the error is about one.
    line: Option<u64>,
    message: String,
}

/// The class of an [`Error`], which decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input cannot be converted (not a trace, time going back, truncated).
    Input,
    /// Reading or writing failed.
    Io,
    /// The command line or options do not make sense (exit code 2).
    Usage,
    /// `--strict` and the input needed a repair.
    Strict,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            broken_pipe: false,
            file: None,
            line: None,
            message: message.into(),
        }
    }

    /// An input error at `line`.
    pub fn at_line(line: u64, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Input, message).with_line(line)
    }

    /// Names the line the error is about.
    pub fn with_line(mut self, line: u64) -> Error {
        self.line = Some(line);
        self
    }

    /// Names the file the error is about, unless one is named already.
    pub fn with_file(mut self, file: &str) -> Error {
        self.file.get_or_insert_with(|| file.to_owned());
        self
    }

    /// The class of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file the error is about (the input, or the output that could not be written), as
    /// the user named it, if one is named.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The input line, if the error is about one.
    pub fn line(&self) -> Option<u64> {
        self.line
    }

    /// What is wrong, without file and line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the output was a pipe whose reader went away.
    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }

    /// The process exit code for this error: 2 for usage errors, else 1.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Usage => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, Some(line)) => write!(f, "line {line}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Error {
        let mut error = Error::new(ErrorKind::Io, err.to_string());
        error.broken_pipe = err.kind() == io::ErrorKind::BrokenPipe;
        error
    }
}

impl From<kanata_writer::Error> for Error {
    fn from(err: kanata_writer::Error) -> Error {
        if let kanata_writer::ErrorKind::InvalidOption(message) = err.kind() {
            return Error::new(ErrorKind::Usage, message.clone());
        }
        if err.is_misuse() {
            return Error::new(ErrorKind::Input, err.to_string());
        }
        let message = err.to_string();
        let broken_pipe = matches!(
            err.kind(),
            kanata_writer::ErrorKind::Io(io) if io.kind() == io::ErrorKind::BrokenPipe
        );
        let mut error = Error::new(ErrorKind::Io, message);
        error.broken_pipe = broken_pipe;
        error
    }
}
