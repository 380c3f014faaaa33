//! `kanata_trace._native`: the Python bindings of `kanata-writer` (the typed writer) and
//! `kanata-pp` (conversion, reading back, statistics, tables). The Python package
//! `kanata_trace` (python/kanata_trace) re-exports it and adds what is plain Python (the
//! pyarrow table, the dataclass of a report); nothing here implements the format a second
//! time.

mod convert;
mod errors;
mod options;
mod read;
mod replay;
mod table;
mod writer;

use pyo3::prelude::*;

/// The native half of `kanata_trace`; use `kanata_trace` itself.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("WriterError", py.get_type::<errors::WriterError>())?;
    m.add("ConversionError", py.get_type::<errors::ConversionError>())?;
    m.add_class::<writer::Writer>()?;
    m.add_class::<writer::Summary>()?;
    m.add_class::<read::Reader>()?;
    m.add_class::<read::Instruction>()?;
    m.add_class::<read::Stage>()?;
    m.add_class::<convert::Report>()?;
    m.add_function(wrap_pyfunction!(convert::convert, m)?)?;
    m.add_function(wrap_pyfunction!(convert::stats, m)?)?;
    m.add_function(wrap_pyfunction!(read::read, m)?)?;
    m.add_function(wrap_pyfunction!(table::columns, m)?)?;
    m.add_function(wrap_pyfunction!(replay::_replay, m)?)?;
    m.add("OPTIONS", options::keyword_names())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
