//! `kanata_trace.read`: any input kanata-pp reads, as the instructions of a window, through
//! `kanata_pp::trace::open` (the conversion on a thread of its own, its canonical text read
//! back by the one reader of canonical Kanata on another; a canonical file read by that
//! reader directly). Streaming: instructions are handed over in small batches, with the GIL
//! released while a batch is waited for.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use kanata_pp::output::canonical;
use kanata_pp::trace::TraceReader;
use kanata_pp::Destination;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::convert::report_object;
use crate::errors::conversion_error;

/// Label text as Konata shows it: the file's `\n` escape (how the writer writes a line
/// break) is a line break again, as Konata's `unescapeLabels_` makes it.
pub fn shown(text: &str) -> Cow<'_, str> {
    if text.contains("\\n") {
        Cow::Owned(text.replace("\\n", "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Instructions taken from the conversion at a time.
const BATCH: usize = 512;

/// Opens `path` (a path, or `"-"` for stdin) for reading: the window's instructions, in op-id
/// order, come out of the returned `Reader`.
pub fn open(path: PathBuf, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<TraceReader> {
    let options = crate::options::options(&path, kwargs)?.with_destination(Destination::Check);
    let reader = kanata_pp::trace::open(&path, &options)
        .map_err(|err| Python::attach(|py| conversion_error(py, &err)))?;
    Ok(reader)
}

/// ``read(path, *, cycles=None, sim_cycles=None, insns=None, threads=None, **options)``
///
/// Reads any trace kanata-pp reads (sloppy Kanata, gem5 O3PipeView, RSD; plain, gzip, zstd,
/// seekable) and yields the ``Instruction`` objects of the window, in op-id order, as Konata
/// shows them. Streaming: memory stays what the conversion and the instructions in flight
/// need. A seekable ``.kanata.zst`` window is read through its index. The options are
/// kanata-pp's (``kanata_trace.OPTIONS``). Raises ``ConversionError`` (with ``.path`` and
/// ``.line``) while iterating if the input does not convert.
#[pyfunction]
#[pyo3(signature = (path, **kwargs))]
pub fn read(path: &Bound<'_, PyAny>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Reader> {
    let reader = open(crate::options::path(path)?, kwargs)?;
    Ok(Reader {
        state: Mutex::new(ReadState {
            reader: Some(reader),
            batch: VecDeque::with_capacity(BATCH),
            report: None,
            error: None,
        }),
    })
}

struct ReadState {
    reader: Option<TraceReader>,
    batch: VecDeque<canonical::Instruction>,
    report: Option<Py<PyAny>>,
    /// The error that ended the reading, raised once the instructions before it are out.
    error: Option<kanata_pp::Error>,
}

/// The instructions of a window (``read()``): an iterator, and a context manager that stops
/// the reading at its end. After the last instruction, ``report`` holds the conversion's
/// report (repairs, window summary).
#[pyclass(module = "kanata_trace", frozen)]
pub struct Reader {
    state: Mutex<ReadState>,
}

/// What one batch gave.
enum Pulled {
    More(VecDeque<canonical::Instruction>),
    Failed(VecDeque<canonical::Instruction>, kanata_pp::Error),
    End(VecDeque<canonical::Instruction>),
}

/// The instructions of `Instruction` objects Python has dropped, on their way back to a
/// reading thread ([`TraceReader::recycle`]): a later instruction is made in their memory
/// there, and this thread frees nothing of it. Freeing here, memory that the reading thread
/// allocated, takes the allocator's lock of that thread's memory on every string and vector,
/// against the reading thread's own allocations (perf: the reading thread woke waiters on
/// that lock for a tenth of its time, and `read()` ran at 1.1 M/s against 1.5–1.8 M/s
/// with this). Only Python's threads (which drop the objects and pull the batches) take this lock;
/// at most `canonical::SPARES` wait here, whatever reads them next.
static SPARES: Mutex<Vec<canonical::Instruction>> = Mutex::new(Vec::new());

fn pull(reader: &mut TraceReader, mut batch: VecDeque<canonical::Instruction>) -> Pulled {
    let spares = std::mem::take(&mut *SPARES.lock().unwrap_or_else(|e| e.into_inner()));
    if !spares.is_empty() {
        reader.recycle(spares);
    }
    while batch.len() < BATCH {
        match reader.next() {
            Some(Ok(insn)) => batch.push_back(insn),
            Some(Err(err)) => return Pulled::Failed(batch, err),
            None => return Pulled::End(batch),
        }
    }
    Pulled::More(batch)
}

impl Reader {
    fn lock(&self) -> std::sync::MutexGuard<'_, ReadState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Reader {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Instruction>> {
        let mut state = self.lock();
        if let Some(insn) = state.batch.pop_front() {
            return Ok(Some(Instruction { insn }));
        }
        if let Some(err) = state.error.take() {
            return Err(conversion_error(py, &err));
        }
        let Some(mut reader) = state.reader.take() else {
            return Ok(None);
        };
        let batch = std::mem::take(&mut state.batch);
        let (pulled, reader) = py.detach(move || {
            let pulled = pull(&mut reader, batch);
            (pulled, reader)
        });
        match pulled {
            Pulled::More(batch) => {
                state.batch = batch;
                state.reader = Some(reader);
            }
            Pulled::End(batch) => {
                state.batch = batch;
                let finished = py.detach(move || reader.finish());
                match finished {
                    Ok(report) => state.report = Some(report_object(py, &report)?),
                    Err(err) => return Err(conversion_error(py, &err)),
                }
            }
            Pulled::Failed(batch, err) => {
                drop(reader);
                state.batch = batch;
                state.error = Some(err);
            }
        }
        if let Some(insn) = state.batch.pop_front() {
            return Ok(Some(Instruction { insn }));
        }
        match state.error.take() {
            Some(err) => Err(conversion_error(py, &err)),
            None => Ok(None),
        }
    }

    /// The conversion's ``Report`` once every instruction has been read, else ``None``.
    #[getter]
    fn report(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.lock().report.as_ref().map(|r| r.clone_ref(py))
    }

    /// Stops reading: the conversion thread stops at its next chunk of text.
    fn close(&self) {
        let mut state = self.lock();
        state.reader = None;
        state.batch.clear();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }
}

/// One instruction of a trace, as Konata shows it (``read()``).
///
/// ``id`` (Konata's op id), ``sim_id``, ``thread``, ``name`` (left pane label), ``detail``
/// (mouse-over label; in both, and in stage notes, the file's ``\n`` escape is a line break
/// again, as Konata shows it), ``begin`` and ``end`` (Konata's cycles of ``I`` and ``R``; ``end`` is
/// ``None`` for one still in flight at the end), ``retired``, ``flushed``, ``retire_id``
/// (``None`` without ``R``), ``stages`` (a list of ``Stage`` in the order they began) and
/// ``deps`` (a list of ``(producer_id, kind)``). ``stages`` and ``deps`` are built on each
/// access: bind them to a name in a loop.
#[pyclass(module = "kanata_trace", frozen)]
pub struct Instruction {
    insn: canonical::Instruction,
}

impl Drop for Instruction {
    fn drop(&mut self) {
        // What is left in its place holds no memory.
        let insn = std::mem::take(&mut self.insn);
        // Never waits: with the lock taken elsewhere, the instruction is freed here.
        if let Ok(mut spares) = SPARES.try_lock() {
            if spares.len() < canonical::SPARES {
                spares.push(insn);
            }
        }
    }
}

#[pymethods]
impl Instruction {
    /// Konata's op id: dense from 0 in the whole trace's canonical form (renumbered from 0
    /// within a window).
    #[getter]
    fn id(&self) -> u64 {
        self.insn.id
    }
    /// The simulator's own id (the ``I`` line's second field).
    #[getter]
    fn sim_id(&self) -> i128 {
        self.insn.sim_id
    }
    /// The thread id.
    #[getter]
    fn thread(&self) -> i64 {
        self.insn.thread
    }
    /// The type-0 label: Konata's left pane (PC and disassembly, typically).
    #[getter]
    fn name(&self) -> Cow<'_, str> {
        shown(&self.insn.name)
    }
    /// The type-1 label: Konata's mouse-over detail.
    #[getter]
    fn detail(&self) -> Cow<'_, str> {
        shown(&self.insn.detail)
    }
    /// Konata's cycle of the ``I``.
    #[getter]
    fn begin(&self) -> u64 {
        self.insn.begin
    }
    /// Konata's cycle of the ``R``; ``None`` if still in flight at the end of the trace.
    #[getter]
    fn end(&self) -> Option<u64> {
        self.insn.end
    }
    /// Whether it retired (``R … 0``).
    #[getter]
    fn retired(&self) -> bool {
        self.insn.retire.is_some_and(|r| !r.flushed)
    }
    /// Whether it was flushed (``R … 1``).
    #[getter]
    fn flushed(&self) -> bool {
        self.insn.retire.is_some_and(|r| r.flushed)
    }
    /// The retire id of its ``R`` (retired or flushed), ``None`` without one.
    #[getter]
    fn retire_id(&self) -> Option<i64> {
        self.insn.retire.map(|r| r.retire_id)
    }
    /// The stage segments, in the order of their ``S``.
    #[getter]
    fn stages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(
            py,
            self.insn.stages.iter().map(|s| Stage {
                lane: s.lane,
                name: s.name.to_string(),
                start: s.start,
                end: s.end,
                notes: shown(&s.notes).into_owned(),
            }),
        )
    }
    /// The dependency arrows into it: ``(producer_id, kind)``, in the order of their ``W``.
    #[getter]
    fn deps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.insn.deps.iter().map(|d| (d.producer, d.kind)))
    }

    /// The instruction as a dict of its fields (stages as tuples).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", self.insn.id)?;
        d.set_item("sim_id", self.insn.sim_id)?;
        d.set_item("thread", self.insn.thread)?;
        d.set_item("name", self.name())?;
        d.set_item("detail", self.detail())?;
        d.set_item("begin", self.insn.begin)?;
        d.set_item("end", self.insn.end)?;
        d.set_item("retired", self.retired())?;
        d.set_item("flushed", self.flushed())?;
        d.set_item("retire_id", self.retire_id())?;
        let stages = PyList::new(
            py,
            self.insn
                .stages
                .iter()
                .map(|s| (s.lane, s.name.as_str(), s.start, s.end, shown(&s.notes))),
        )?;
        d.set_item("stages", stages)?;
        d.set_item("deps", self.deps(py)?)?;
        Ok(d)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Instruction>()
            .is_ok_and(|o| o.get().insn == self.insn)
    }

    fn __repr__(&self) -> String {
        format!(
            "Instruction(id={}, sim_id={}, thread={}, name={:?}, begin={}, end={:?}, {}, stages={})",
            self.insn.id,
            self.insn.sim_id,
            self.insn.thread,
            self.insn.name,
            self.insn.begin,
            self.insn.end,
            match self.insn.retire {
                Some(r) if r.flushed => format!("flushed, retire_id={}", r.retire_id),
                Some(r) => format!("retired, retire_id={}", r.retire_id),
                None => "in flight".to_owned(),
            },
            self.insn.stages.len()
        )
    }
}

/// One stay of an instruction in a stage of a lane: ``Stage(lane, name, start, end,
/// notes)``. ``start`` and ``end`` are Konata's cycles (``end`` is ``None`` if the stage is
/// still open at the end of the trace); ``notes`` are the type-2 labels written while it was
/// the stage entered last. Unpacks and compares like the tuple of its fields.
#[pyclass(module = "kanata_trace", frozen, get_all)]
#[derive(Clone, PartialEq, Eq)]
pub struct Stage {
    /// The lane: 0 for the pipeline stages, 1 for stalls (``stl``).
    pub lane: u64,
    /// The stage name.
    pub name: String,
    /// Konata's cycle of the ``S``.
    pub start: u64,
    /// Konata's cycle of the end; ``None`` if still open at the end.
    pub end: Option<u64>,
    /// The notes (type-2 labels) of this stage.
    pub notes: String,
}

impl Stage {
    fn tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (
            self.lane,
            self.name.as_str(),
            self.start,
            self.end,
            self.notes.as_str(),
        )
            .into_pyobject(py)
    }
}

#[pymethods]
impl Stage {
    #[new]
    #[pyo3(signature = (lane, name, start, end=None, notes=String::new()))]
    fn new(lane: u64, name: String, start: u64, end: Option<u64>, notes: String) -> Stage {
        Stage {
            lane,
            name,
            start,
            end,
            notes,
        }
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.tuple(py)?.as_any().try_iter()?.into_any())
    }

    fn __len__(&self) -> usize {
        5
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        self.tuple(py)?.as_any().get_item(index)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        if let Ok(other) = other.cast::<Stage>() {
            return Ok(*other.get() == *self);
        }
        if other.is_instance_of::<PyTuple>() {
            return self.tuple(py)?.as_any().eq(other);
        }
        Ok(false)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.tuple(py)?.as_any().hash()
    }

    fn __repr__(&self) -> String {
        format!(
            "Stage(lane={}, name={:?}, start={}, end={}, notes={:?})",
            self.lane,
            self.name,
            self.start,
            self.end.map_or("None".to_owned(), |e| e.to_string()),
            self.notes
        )
    }
}
