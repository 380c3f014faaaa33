//! `kanata_trace.convert` and `kanata_trace.stats`: `kanata_pp::convert` with the options of
//! the command line as keywords, its report as a Python object whose `to_dict()` is the
//! object `kanata-pp --report json` prints.

use std::path::{Path, PathBuf};

use kanata_pp::Destination;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::conversion_error;

/// ``json.loads(text)``.
fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// What a conversion did (``convert()``, ``Reader.report``). The fields are those of the
/// object ``kanata-pp --report json`` prints for the input (``to_dict()`` is that object), and
/// ``examples``: the first examples of each rule (all of them with ``verbose=True``) as
/// ``(line, message)`` pairs.
#[pyclass(module = "kanata_trace", frozen)]
pub struct Report {
    /// The `--report json` object.
    json: String,
    inner: kanata_pp::Report,
}

/// The Python `Report` of `report`.
pub fn report_object(py: Python<'_>, report: &kanata_pp::Report) -> PyResult<Py<PyAny>> {
    let json = kanata_pp::cli::report::file_json(Path::new(&report.input), &Ok(report.clone()));
    Ok(Py::new(
        py,
        Report {
            json,
            inner: report.clone(),
        },
    )?
    .into_any())
}

#[pymethods]
impl Report {
    /// The input, as named.
    #[getter]
    fn input(&self) -> &str {
        &self.inner.input
    }
    /// The output path, or ``None`` when nothing was written (``check=True``, ``read()``).
    #[getter]
    fn output(&self) -> Option<PathBuf> {
        self.inner.output.clone()
    }
    /// The input format: ``"kanata"``, ``"gem5"`` or ``"rsd"``.
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.format.name()
    }
    /// The input's compression: ``"none"``, ``"gzip"`` or ``"zstd"``.
    #[getter]
    fn input_compression(&self) -> &'static str {
        self.inner.input_compression.name()
    }
    /// The output's compression.
    #[getter]
    fn output_compression(&self) -> &'static str {
        kanata_pp::convert::compression_name(self.inner.output_compression)
    }
    /// Instructions written (with a window: of the window).
    #[getter]
    fn instructions(&self) -> u64 {
        self.inner.summary.instructions
    }
    /// Of those, retired.
    #[getter]
    fn retired(&self) -> u64 {
        self.inner.summary.retired
    }
    /// Of those, flushed.
    #[getter]
    fn flushed(&self) -> u64 {
        self.inner.summary.flushed
    }
    /// Of those, left without ``R``.
    #[getter]
    fn open(&self) -> u64 {
        self.inner.summary.left_open
    }
    /// The trace's ``C=`` cycle.
    #[getter]
    fn first_cycle(&self) -> i64 {
        self.inner.summary.first_cycle
    }
    /// The cycle of the last line written.
    #[getter]
    fn last_cycle(&self) -> i64 {
        self.inner.summary.last_cycle
    }
    /// Repairs by rule id, in rule order: ``{"Q1": 3, ...}``.
    #[getter]
    fn repairs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (rule, report) in self.inner.diagnostics.rules() {
            d.set_item(rule.id(), report.count)?;
        }
        Ok(d)
    }
    /// The number of repairs of every rule.
    #[getter]
    fn repairs_total(&self) -> u64 {
        self.inner.diagnostics.total()
    }
    /// The examples of each rule: ``{"Q1": [(line, message), ...]}``; line 0 is the end of
    /// the input.
    #[getter]
    fn examples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (rule, report) in self.inner.diagnostics.rules() {
            let list = PyList::new(
                py,
                report.examples.iter().map(|e| (e.line, e.message.as_str())),
            )?;
            d.set_item(rule.id(), list)?;
        }
        Ok(d)
    }
    /// Bytes of input read, as stored (compressed).
    #[getter]
    fn bytes_in(&self) -> u64 {
        self.inner.bytes_in
    }
    /// Bytes written (compressed); 0 when nothing was written.
    #[getter]
    fn bytes_out(&self) -> u64 {
        self.inner.bytes_out
    }
    /// Lines of input text.
    #[getter]
    fn lines_in(&self) -> u64 {
        self.inner.lines_in
    }
    /// Lines of Kanata text written.
    #[getter]
    fn lines_out(&self) -> u64 {
        self.inner.summary.lines
    }
    /// Wall time in seconds.
    #[getter]
    fn seconds(&self) -> f64 {
        self.inner.seconds
    }
    /// What cutting the window did (``instructions_read``, ``stopped_early``, ``indexed``),
    /// ``None`` without a window.
    #[getter]
    fn window<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner
            .window
            .map(|w| {
                let d = PyDict::new(py);
                d.set_item("instructions_read", w.instructions_read)?;
                d.set_item("stopped_early", w.stopped_early)?;
                d.set_item("indexed", w.indexed)?;
                Ok(d)
            })
            .transpose()
    }
    /// The statistics (``stats=True``), as ``stats()`` gives them, else ``None``.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .stats
            .as_ref()
            .map(|s| json_loads(py, &s.to_json()))
            .transpose()
    }
    /// The object ``kanata-pp --report json`` prints for this input.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_loads(py, &self.json)
    }
    /// That object as one line of JSON, as ``kanata-pp --report json`` prints it.
    fn to_json(&self) -> &str {
        &self.json
    }
    fn __repr__(&self) -> String {
        format!(
            "<kanata_trace.Report {} ({}): {} instructions, {} repairs>",
            self.inner.input,
            self.inner.format.name(),
            self.inner.summary.instructions,
            self.inner.diagnostics.total()
        )
    }
}

/// ``convert(src, dst=None, *, check=False, **options)``
///
/// Converts ``src`` (any input kanata-pp reads; ``"-"`` is stdin) into the canonical Kanata
/// file ``dst``, compressed as its extension says (``.gz``, ``.zst``) unless ``compress=``
/// says; ``dst=None`` writes ``<name>.kanata`` beside the input, ``check=True`` writes
/// nothing. The output is written to a temporary file and renamed at the end, so a failure
/// leaves nothing behind. The options are kanata-pp's command-line options as keywords
/// (``kanata_trace.OPTIONS``): ``strict=True``, ``cycles=(a, b)``, ``close_open="flush"``...
/// Returns the ``Report``; raises ``ConversionError`` (``.path``, ``.line``) when the input
/// does not convert, ``ValueError`` for options that do not make sense. The GIL is released
/// while it runs.
#[pyfunction]
#[pyo3(signature = (src, dst=None, *, check=false, **kwargs))]
pub fn convert(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dst: Option<&Bound<'_, PyAny>>,
    check: bool,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let input = crate::options::path(src)?;
    let asked = crate::options::options(&input, kwargs)?;
    let destination = match (dst, check) {
        (Some(_), true) => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "check=True writes nothing: give no dst",
            ))
        }
        (None, true) => Destination::Check,
        (Some(dst), false) => {
            let dst = crate::options::path(dst)?;
            if dst.as_os_str() == "-" {
                Destination::Stdout
            } else {
                Destination::Path(dst)
            }
        }
        (None, false) => Destination::Path(
            kanata_pp::convert::default_output(
                &input,
                asked.options.compression.unwrap_or_default(),
            )
            .map_err(|err| conversion_error(py, &err))?,
        ),
    };
    let options = asked.with_destination(destination);
    let result = py.detach(|| kanata_pp::convert(&input, &options));
    match result {
        Ok(report) => report_object(py, &report),
        Err(err) => Err(conversion_error(py, &err)),
    }
}

/// ``stats(src, **options)``
///
/// The statistics of a trace (of a window, with ``cycles=``, ``insns=``, ``threads=``...):
/// a dict with the fields of the ``stats`` object of ``kanata-pp --stats --report json``
/// (``instructions``, ``retired``, ``flushed``, ``flush_rate``, ``cycles``, ``ipc``,
/// ``threads``, ``stages`` with mean, median and percentiles of each stage's residency...).
/// Streaming; nothing is written.
#[pyfunction]
#[pyo3(signature = (src, **kwargs))]
pub fn stats<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let input = crate::options::path(src)?;
    let mut options = crate::options::options(&input, kwargs)?.with_destination(Destination::Check);
    options.stats = true;
    let result = py.detach(|| kanata_pp::convert(&input, &options));
    match result {
        Ok(report) => match &report.stats {
            Some(stats) => json_loads(py, &stats.to_json()),
            None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the conversion gave no statistics",
            )),
        },
        Err(err) => Err(conversion_error(py, &err)),
    }
}
