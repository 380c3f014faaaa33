//! `kanata_trace.Writer`: `kanata_writer::Writer` from Python.
//!
//! The output is a file the writer opens (a path), or a Python binary file object. A file
//! object is written only from the Python thread that calls the writer: the text (or the
//! compressed stream, compressed on a background thread with `background=True`) is queued in
//! memory and handed to the object's `write` once a megabyte has gathered, at `flush_output`
//! and at the end. So the compression thread never needs the GIL, and a writer call that
//! waits for it cannot deadlock with it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kanata_writer::{
    Compression, DepKind, InsnId, LabelKind, Lane, LiveAtEnd, Stage, Window, WriterBuilder,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::errors::{writer_error, WriterError};

/// Bytes queued for a file object before they are handed to its `write`.
const HAND_OVER: usize = 1 << 20;

/// Bytes on their way to a Python file object.
#[derive(Default)]
struct Queue {
    bytes: Mutex<Vec<u8>>,
    /// `bytes.len()`, read without the lock on every call.
    len: AtomicUsize,
}

impl Queue {
    fn take(&self) -> Vec<u8> {
        let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        self.len.store(0, Ordering::Relaxed);
        std::mem::take(&mut *bytes)
    }
}

/// Where the writer's bytes go.
enum Output {
    File(File),
    Queue(Arc<Queue>),
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::File(file) => file.write(buf),
            Output::Queue(queue) => {
                let mut bytes = queue.bytes.lock().unwrap_or_else(|e| e.into_inner());
                bytes.extend_from_slice(buf);
                queue.len.store(bytes.len(), Ordering::Relaxed);
                Ok(buf.len())
            }
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Output::File(file) => file.write_all(buf),
            Output::Queue(_) => self.write(buf).map(|_| ()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::File(file) => file.flush(),
            Output::Queue(_) => Ok(()),
        }
    }
}

/// What the writer holds behind its lock.
struct State {
    writer: Option<kanata_writer::Writer<Output>>,
    /// Stage handles by the number Python holds.
    stages: Vec<Stage>,
    numbers: HashMap<Stage, usize>,
    summary: Option<kanata_writer::Summary>,
}

/// The Python file object and the queue of its bytes.
struct FileObject {
    object: Py<PyAny>,
    queue: Arc<Queue>,
}

/// Writes one Kanata trace through the typed writer of kanata-writer, which checks every
/// call and cannot write an invalid trace.
///
/// ``Writer(output, background=False, *, compression=None, level=None, start_cycle=0,
/// compact=False, live_at_end="open", late_labels=None, skip_retired=None,
/// retired_limit=None, trace_cycles=None)``
///
/// ``output`` is a path (``str`` or ``os.PathLike``; ``.gz`` and ``.zst`` names are
/// compressed) or a binary file object with a ``write`` method (plain unless ``compression``
/// says otherwise). With ``background=True`` compression and writing run on a thread of
/// their own. Use it as a context manager, or call ``finish()``: the trace is complete only
/// then. A misuse raises ``WriterError`` before anything is written, and the writer goes on.
#[pyclass(module = "kanata_trace", frozen)]
pub struct Writer {
    state: Mutex<State>,
    file: Option<FileObject>,
}

/// What a finished trace holds (``Writer.summary``, ``Writer.finish()``).
#[pyclass(module = "kanata_trace", frozen, get_all)]
#[derive(Clone)]
pub struct Summary {
    /// Instructions written.
    pub instructions: u64,
    /// Of those, retired.
    pub retired: u64,
    /// Of those, flushed.
    pub flushed: u64,
    /// Instructions left without ``R`` at the end (``live_at_end="open"``).
    pub left_open: u64,
    /// Instructions that ``live_at_end="flush"`` or ``"retire"`` ended at the last cycle.
    pub ended_at_finish: u64,
    /// The cycle the trace starts at (its ``C=``).
    pub first_cycle: i64,
    /// The cycle of the last line.
    pub last_cycle: i64,
    /// Bytes of Kanata text written, before compression.
    pub text_bytes: u64,
    /// Lines of Kanata text written.
    pub lines: u64,
}

impl From<kanata_writer::Summary> for Summary {
    fn from(s: kanata_writer::Summary) -> Summary {
        Summary {
            instructions: s.instructions,
            retired: s.retired,
            flushed: s.flushed,
            left_open: s.left_open,
            ended_at_finish: s.ended_at_finish,
            first_cycle: s.first_cycle,
            last_cycle: s.last_cycle,
            text_bytes: s.text_bytes,
            lines: s.lines,
        }
    }
}

#[pymethods]
impl Summary {
    fn __repr__(&self) -> String {
        format!(
            "Summary(instructions={}, retired={}, flushed={}, left_open={}, ended_at_finish={}, \
             first_cycle={}, last_cycle={}, text_bytes={}, lines={})",
            self.instructions,
            self.retired,
            self.flushed,
            self.left_open,
            self.ended_at_finish,
            self.first_cycle,
            self.last_cycle,
            self.text_bytes,
            self.lines
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<Summary>().is_ok_and(|o| {
            (
                o.instructions,
                o.retired,
                o.flushed,
                o.left_open,
                o.ended_at_finish,
                o.first_cycle,
                o.last_cycle,
                o.text_bytes,
                o.lines,
            ) == (
                self.instructions,
                self.retired,
                self.flushed,
                self.left_open,
                self.ended_at_finish,
                self.first_cycle,
                self.last_cycle,
                self.text_bytes,
                self.lines,
            )
        })
    }
}

/// A handle from Python: an int the writer minted, or `None` for an untraced instruction.
#[inline]
fn insn(raw: Option<u64>) -> InsnId {
    match raw {
        Some(raw) => InsnId::from_raw(raw),
        None => InsnId::UNTRACED,
    }
}

#[inline]
fn label_kind(kind: &str) -> PyResult<LabelKind> {
    match kind {
        "name" => Ok(LabelKind::Name),
        "detail" => Ok(LabelKind::Detail),
        "note" => Ok(LabelKind::StageNote),
        other => Err(PyValueError::new_err(format!(
            "label kind {other:?}: give \"name\", \"detail\" or \"note\""
        ))),
    }
}

fn compression(name: &str) -> PyResult<Compression> {
    match name {
        "none" => Ok(Compression::None),
        "gzip" | "gz" => Ok(Compression::Gzip),
        "zstd" | "zst" => Ok(Compression::Zstd),
        other => Err(PyValueError::new_err(format!(
            "compression {other:?}: give \"none\", \"gzip\" or \"zstd\""
        ))),
    }
}

fn closed() -> PyErr {
    WriterError::new_err("the writer is finished")
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands what the queue holds to the file object, once enough has gathered.
    #[inline]
    fn hand_over(&self, py: Python<'_>) -> PyResult<()> {
        match &self.file {
            Some(file) if file.queue.len.load(Ordering::Relaxed) >= HAND_OVER => {
                self.write_queue(py, file)
            }
            _ => Ok(()),
        }
    }

    #[cold]
    fn write_queue(&self, py: Python<'_>, file: &FileObject) -> PyResult<()> {
        let bytes = file.queue.take();
        if !bytes.is_empty() {
            file.object
                .bind(py)
                .call_method1("write", (PyBytes::new(py, &bytes),))?;
        }
        Ok(())
    }

    fn stage_of(state: &mut State, stage: &Bound<'_, PyAny>) -> PyResult<Stage> {
        if let Ok(n) = stage.extract::<usize>() {
            return state
                .stages
                .get(n)
                .copied()
                .ok_or_else(|| WriterError::new_err("stage handle was not made by this writer"));
        }
        if let Ok(name) = stage.cast::<PyString>() {
            let name = name.to_cow()?;
            let writer = state.writer.as_mut().ok_or_else(closed)?;
            let handle = writer.stage(&name).map_err(writer_error)?;
            Self::number(state, handle);
            return Ok(handle);
        }
        Err(PyTypeError::new_err(
            "a stage is a handle from Writer.stage() or a stage name",
        ))
    }

    fn number(state: &mut State, handle: Stage) -> usize {
        match state.numbers.get(&handle) {
            Some(&n) => n,
            None => {
                let n = state.stages.len();
                state.stages.push(handle);
                state.numbers.insert(handle, n);
                n
            }
        }
    }

    /// Runs `call` on the live writer, then hands over queued bytes.
    #[inline]
    fn with<T>(
        &self,
        py: Python<'_>,
        call: impl FnOnce(&mut kanata_writer::Writer<Output>) -> kanata_writer::Result<T>,
    ) -> PyResult<T> {
        let result = {
            let mut state = self.lock();
            let writer = state.writer.as_mut().ok_or_else(closed)?;
            call(writer).map_err(writer_error)?
        };
        self.hand_over(py)?;
        Ok(result)
    }
}

#[pymethods]
impl Writer {
    #[new]
    #[pyo3(signature = (output, background=false, *, compression=None, level=None,
        start_cycle=0, compact=false, live_at_end="open", late_labels=None,
        skip_retired=None, retired_limit=None, trace_cycles=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        output: &Bound<'_, PyAny>,
        background: bool,
        compression: Option<&str>,
        level: Option<i32>,
        start_cycle: i64,
        compact: bool,
        live_at_end: &str,
        late_labels: Option<u64>,
        skip_retired: Option<u64>,
        retired_limit: Option<u64>,
        trace_cycles: Option<(u64, u64)>,
    ) -> PyResult<Writer> {
        let mut builder = WriterBuilder::new();
        builder
            .background(background)
            .start_cycle(start_cycle)
            .compact(compact)
            .live_at_end(match live_at_end {
                "open" => LiveAtEnd::LeaveOpen,
                "flush" => LiveAtEnd::Flush,
                "retire" => LiveAtEnd::Retire,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "live_at_end {other:?}: give \"open\", \"flush\" or \"retire\""
                    )))
                }
            });
        if let Some(level) = level {
            builder.level(level);
        }
        if let Some(cycles) = late_labels {
            builder.late_labels(cycles);
        }
        let mut window = Window::default();
        if let Some(n) = skip_retired {
            window = window.skip_retired(n);
        }
        if let Some(n) = retired_limit {
            window = window.retired_limit(n);
        }
        if let Some((start, end)) = trace_cycles {
            window = window.cycles(start..end);
        }
        builder.window(window);
        let asked = compression.map(self::compression).transpose()?;
        let (writer, file) = if output.hasattr("write")? && !output.is_instance_of::<PyString>() {
            builder.compression(asked.unwrap_or(Compression::None));
            let queue = Arc::new(Queue::default());
            let writer = builder
                .from_writer(Output::Queue(queue.clone()))
                .map_err(writer_error)?;
            let file = FileObject {
                object: output.clone().unbind(),
                queue,
            };
            (writer, Some(file))
        } else {
            let path = crate::options::path(output).map_err(|_| {
                PyTypeError::new_err("output is a path or a binary file object with write()")
            })?;
            let compression = asked.unwrap_or_else(|| Compression::from_path(&path));
            builder.compression(compression);
            compression
                .check_level(level.unwrap_or(compression.default_level()))
                .map_err(writer_error)?;
            let created = File::create(&path).map_err(|err| {
                pyo3::exceptions::PyOSError::new_err(format!(
                    "cannot create {}: {err}",
                    path.display()
                ))
            })?;
            let writer = builder
                .from_writer(Output::File(created))
                .map_err(writer_error)?;
            (writer, None)
        };
        let mut state = State {
            writer: Some(writer),
            stages: Vec::new(),
            numbers: HashMap::new(),
            summary: None,
        };
        // Handle 0 is `stl`, the stall stage every writer has.
        Writer::number(&mut state, Stage::STALL);
        Ok(Writer {
            state: Mutex::new(state),
            file,
        })
    }

    /// Checks and interns a stage name and returns its handle (an int) for ``enter``; the same
    /// name gives the same handle. Raises ``WriterError`` for a name Konata would not show as
    /// written (empty, with a TAB or line break, or white space at either end).
    fn stage(&self, name: &str) -> PyResult<usize> {
        let mut state = self.lock();
        let writer = state.writer.as_mut().ok_or_else(closed)?;
        let handle = writer.stage(name).map_err(writer_error)?;
        Ok(Writer::number(&mut state, handle))
    }

    /// The name of a stage handle of this writer.
    fn stage_name(&self, stage: usize) -> Option<String> {
        let state = self.lock();
        let handle = *state.stages.get(stage)?;
        state
            .writer
            .as_ref()
            .and_then(|w| w.stage_name(handle))
            .map(str::to_owned)
    }

    /// Begins an instruction (``I``) with the simulator's own id and a thread id, and returns
    /// its handle: its op id in the file, dense from 0. Returns ``None`` (and writes nothing)
    /// when the trace window (``skip_retired``, ``retired_limit``, ``trace_cycles``) is not
    /// open; every call accepts ``None`` and writes nothing for it.
    #[pyo3(signature = (sim_id, thread=None))]
    fn begin(
        &self,
        py: Python<'_>,
        sim_id: &Bound<'_, PyAny>,
        thread: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<u64>> {
        let small_thread = match thread {
            None => Ok(0),
            Some(t) => t.extract::<u32>(),
        };
        let id = match (sim_id.extract::<u64>(), small_thread) {
            (Ok(sim_id), Ok(thread)) => self.with(py, |w| w.begin(sim_id, thread))?,
            _ => {
                let sim_id: i128 = sim_id.extract()?;
                let thread: i64 = match thread {
                    None => 0,
                    Some(t) => t.extract()?,
                };
                self.with(py, |w| w.begin_signed(sim_id, thread))?
            }
        };
        Ok(id.file_id())
    }

    /// Appends ``text`` to a label of the instruction (``L``): ``kind="name"`` (Konata's left
    /// pane), ``"detail"`` (mouse-over) or ``"note"`` (on the stage it entered last). Line
    /// breaks become ``\n``, TABs spaces; empty text writes nothing.
    #[pyo3(signature = (insn, text, kind="name"))]
    fn label(&self, py: Python<'_>, insn: Option<u64>, text: &str, kind: &str) -> PyResult<()> {
        let kind = label_kind(kind)?;
        self.with(py, |w| w.label(self::insn(insn), kind, text))
    }

    /// The instruction enters ``stage`` (a handle from ``stage()``, or a name) in ``lane``
    /// (``S``), closing the stage it had open in that lane with an explicit ``E``.
    #[pyo3(signature = (insn, stage, lane=0))]
    fn enter(
        &self,
        py: Python<'_>,
        insn: Option<u64>,
        stage: &Bound<'_, PyAny>,
        lane: u32,
    ) -> PyResult<()> {
        {
            let mut state = self.lock();
            let stage = Writer::stage_of(&mut state, stage)?;
            let writer = state.writer.as_mut().ok_or_else(closed)?;
            writer
                .enter(self::insn(insn), Lane::new(lane), stage)
                .map_err(writer_error)?;
        }
        self.hand_over(py)
    }

    /// The instruction leaves the stage it has open in ``lane`` (``E``).
    #[pyo3(signature = (insn, lane=0))]
    fn leave(&self, py: Python<'_>, insn: Option<u64>, lane: u32) -> PyResult<()> {
        self.with(py, |w| w.leave(self::insn(insn), Lane::new(lane)))
    }

    /// The instruction starts stalling: it enters ``stl`` in lane 1.
    fn stall_begin(&self, py: Python<'_>, insn: Option<u64>) -> PyResult<()> {
        self.with(py, |w| w.stall_begin(self::insn(insn)))
    }

    /// The instruction stops stalling: it leaves the stage open in lane 1.
    fn stall_end(&self, py: Python<'_>, insn: Option<u64>) -> PyResult<()> {
        self.with(py, |w| w.stall_end(self::insn(insn)))
    }

    /// The instruction retires (``R … 0``) after every open stage is closed; returns its
    /// retire id (serial from 0 over retired instructions), ``None`` for an untraced one.
    fn retire(&self, py: Python<'_>, insn: Option<u64>) -> PyResult<Option<u64>> {
        self.with(py, |w| w.retire(self::insn(insn)))
    }

    /// The instruction is flushed (``R … 1``) after every open stage is closed.
    fn flush(&self, py: Python<'_>, insn: Option<u64>) -> PyResult<()> {
        self.with(py, |w| w.flush(self::insn(insn)))
    }

    /// Like ``retire`` with the retire id given (for converters that keep their input's
    /// ids); does not move the serial retire ids.
    fn retire_as(&self, py: Python<'_>, insn: Option<u64>, retire_id: i64) -> PyResult<()> {
        self.with(py, |w| w.retire_as(self::insn(insn), retire_id))
    }

    /// Like ``flush`` with the retire id given.
    fn flush_as(&self, py: Python<'_>, insn: Option<u64>, retire_id: i64) -> PyResult<()> {
        self.with(py, |w| w.flush_as(self::insn(insn), retire_id))
    }

    /// A dependency arrow from ``producer`` to ``consumer`` (``W``); ``kind`` 0 is wake-up,
    /// the kind Konata draws. The producer must be older than the consumer.
    #[pyo3(signature = (consumer, producer, kind=0))]
    fn depend(
        &self,
        py: Python<'_>,
        consumer: Option<u64>,
        producer: Option<u64>,
        kind: u32,
    ) -> PyResult<()> {
        self.with(py, |w| {
            w.depend(insn(consumer), insn(producer), DepKind::new(kind))
        })
    }

    /// Moves time forward by ``cycles`` (default 1). Nothing is written until a command
    /// follows.
    #[pyo3(signature = (cycles=1))]
    fn advance(&self, py: Python<'_>, cycles: u64) -> PyResult<()> {
        self.with(py, |w| w.advance(cycles))
    }

    /// Moves time to the absolute ``cycle``; raises ``WriterError`` if that is in the past.
    fn set_cycle(&self, py: Python<'_>, cycle: u64) -> PyResult<()> {
        self.with(py, |w| w.set_cycle(cycle))
    }

    /// The current cycle.
    #[getter]
    fn cycle(&self) -> PyResult<i64> {
        let state = self.lock();
        Ok(state.writer.as_ref().ok_or_else(closed)?.cycle())
    }

    /// Whether instructions that begin now are traced (the trace window is open).
    #[getter]
    fn is_tracing(&self) -> bool {
        self.lock().writer.as_ref().is_some_and(|w| w.is_tracing())
    }

    /// Whether the instruction is live: traced, begun, not yet retired or flushed.
    fn is_live(&self, insn: Option<u64>) -> bool {
        self.lock()
            .writer
            .as_ref()
            .is_some_and(|w| w.is_live(self::insn(insn)))
    }

    /// What has been written so far; after ``finish()``, what ``finish()`` returned.
    #[getter]
    fn summary(&self) -> Summary {
        let state = self.lock();
        match (&state.summary, &state.writer) {
            (Some(summary), _) => (*summary).into(),
            (None, Some(writer)) => writer.summary().into(),
            (None, None) => kanata_writer::Summary::default().into(),
        }
    }

    /// Whether ``finish()`` has been called.
    #[getter]
    fn finished(&self) -> bool {
        self.lock().writer.is_none()
    }

    /// Hands the bytes gathered so far to the file object (and calls its ``flush`` if it has
    /// one). The trace stays incomplete until ``finish()``.
    fn flush_output(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(file) = &self.file {
            self.write_queue(py, file)?;
            let object = file.object.bind(py);
            if object.hasattr("flush")? {
                object.call_method0("flush")?;
            }
        }
        Ok(())
    }

    /// Ends the trace: applies ``live_at_end`` to the instructions still live, writes the
    /// last cycle, ends the compressed stream, closes a file the writer opened (a file object
    /// is flushed, not closed) and returns the ``Summary``. Calling it again returns the same
    /// summary.
    fn finish(&self, py: Python<'_>) -> PyResult<Summary> {
        let writer = {
            let mut state = self.lock();
            if let Some(summary) = state.summary {
                return Ok(summary.into());
            }
            state.writer.take()
        };
        let Some(writer) = writer else {
            return Err(PyRuntimeError::new_err("the writer is being finished"));
        };
        // The compression thread never needs the GIL: let other Python threads run meanwhile.
        let finished = py.detach(move || writer.finish().map(|f| f.summary));
        let summary = finished.map_err(writer_error)?;
        self.lock().summary = Some(summary);
        self.flush_output(py)?;
        Ok(summary.into())
    }

    /// ``finish()``; for code that closes files.
    fn close(&self, py: Python<'_>) -> PyResult<Summary> {
        self.finish(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Finishes the trace, also when the block raised (the trace is then complete up to
    /// the exception, as Konata can draw it); the exception goes on.
    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.finish(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = self.lock();
        match &state.writer {
            Some(w) => format!("<kanata_trace.Writer at cycle {}>", w.cycle()),
            None => "<kanata_trace.Writer finished>".to_owned(),
        }
    }
}

impl Drop for Writer {
    /// A writer dropped without ``finish()`` still ends its trace, as in Rust, and hands the
    /// rest to its file object.
    fn drop(&mut self) {
        let writer = self.lock().writer.take();
        if let Some(writer) = writer {
            let _ = writer.finish();
            if let Some(file) = &self.file {
                Python::attach(|py| {
                    let _ = self.write_queue(py, file);
                });
            }
        }
    }
}
