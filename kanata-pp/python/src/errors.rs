//! The exceptions: `WriterError` for a misuse of the writer, `ConversionError` for an input
//! that does not convert; usage errors are `ValueError`, I/O errors of the writer `OSError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    kanata_trace,
    WriterError,
    PyValueError,
    "A call on a Writer that would make the trace invalid (time going back, a label after \
     retirement, a dependency on a younger instruction, a bad stage name...). Nothing was \
     written and the writer can go on."
);

create_exception!(
    kanata_trace,
    ConversionError,
    PyException,
    "A trace that cannot be converted or read: `.path` is the file it is about, `.line` the \
     1-based input line (or None), `.kind` one of \"input\", \"io\", \"strict\", and \
     `.message` the message without file and line. Nothing was written."
);

/// The Python exception of a writer error: a misuse is a `WriterError`, an I/O error an
/// `OSError`.
pub fn writer_error(err: kanata_writer::Error) -> PyErr {
    if err.is_misuse() {
        WriterError::new_err(err.to_string())
    } else {
        PyOSError::new_err(err.to_string())
    }
}

/// The Python exception of a conversion error: usage errors are `ValueError`, the rest
/// `ConversionError` with its path and line.
pub fn conversion_error(py: Python<'_>, err: &kanata_pp::Error) -> PyErr {
    let kind = match err.kind() {
        kanata_pp::ErrorKind::Usage => return PyValueError::new_err(err.to_string()),
        kanata_pp::ErrorKind::Input => "input",
        kanata_pp::ErrorKind::Io => "io",
        kanata_pp::ErrorKind::Strict => "strict",
        _ => "input",
    };
    let exc = ConversionError::new_err(err.to_string());
    let value = exc.value(py);
    let set = || -> PyResult<()> {
        value.setattr("path", err.file())?;
        value.setattr("line", err.line())?;
        value.setattr("kind", kind)?;
        value.setattr("message", err.message())?;
        Ok(())
    };
    match set() {
        Ok(()) => exc,
        Err(other) => other,
    }
}
