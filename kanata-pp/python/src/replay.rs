//! `_native._replay`: a list of writer calls run straight on `kanata_writer::Writer` in Rust,
//! with no Python in between; the tests compare its bytes with those of `kanata_trace.Writer`
//! on the same calls. Not part of the API.

use kanata_writer::{DepKind, InsnId, LabelKind, Lane, Writer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// Runs `events` (tuples: `("begin", sim_id, thread)`, `("label", insn, kind, text)`,
/// `("enter", insn, stage_name, lane)`, `("leave", insn, lane)`, `("stall_begin", insn)`,
/// `("stall_end", insn)`, `("retire", insn)`, `("flush", insn)`,
/// `("depend", consumer, producer, kind)`, `("advance", n)`) on a Rust writer; returns the
/// trace and, per event, `None` or the error's message.
#[pyfunction]
pub fn _replay<'py>(
    py: Python<'py>,
    events: Vec<Bound<'py, PyTuple>>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Option<String>>)> {
    let mut w = Writer::new(Vec::new());
    let mut outcomes = Vec::with_capacity(events.len());
    for event in &events {
        let op: String = event.get_item(0)?.extract()?;
        let arg = |i: usize| event.get_item(i);
        let insn =
            |i: usize| -> PyResult<InsnId> { Ok(InsnId::from_raw(arg(i)?.extract::<u64>()?)) };
        let result = match op.as_str() {
            "begin" => w.begin(arg(1)?.extract()?, arg(2)?.extract()?).map(|_| ()),
            "label" => {
                let kind = match arg(2)?.extract::<String>()?.as_str() {
                    "name" => LabelKind::Name,
                    "detail" => LabelKind::Detail,
                    _ => LabelKind::StageNote,
                };
                w.label(insn(1)?, kind, &arg(3)?.extract::<String>()?)
            }
            "enter" => {
                let stage = w.stage(&arg(2)?.extract::<String>()?);
                match stage {
                    Ok(stage) => w.enter(insn(1)?, Lane::new(arg(3)?.extract()?), stage),
                    Err(err) => Err(err),
                }
            }
            "leave" => w.leave(insn(1)?, Lane::new(arg(2)?.extract()?)),
            "stall_begin" => w.stall_begin(insn(1)?),
            "stall_end" => w.stall_end(insn(1)?),
            "retire" => w.retire(insn(1)?).map(|_| ()),
            "flush" => w.flush(insn(1)?),
            "depend" => w.depend(insn(1)?, insn(2)?, DepKind::new(arg(3)?.extract()?)),
            "advance" => w.advance(arg(1)?.extract()?),
            other => return Err(PyValueError::new_err(format!("unknown event {other:?}"))),
        };
        outcomes.push(result.err().map(|e| e.to_string()));
    }
    let text = w
        .finish()
        .map_err(|e| PyValueError::new_err(e.to_string()))?
        .output;
    Ok((PyBytes::new(py, &text), outcomes))
}
