//! The columns of `kanata_trace.table` and `kanata_trace.columns`: a trace read through
//! `kanata_pp::trace::open`, one row per stage segment, instruction or dependency, built with
//! the GIL released into plain buffers (a whole canonical file straight from
//! `kanata_pp::trace::segment_columns`). `table()` hands the buffers to pyarrow without a copy
//! (Arrow's own layout: little-endian values, validity bitmaps, offsets, each vector handed
//! over where it is, `pyarrow.foreign_buffer` over it keeping its owner alive);
//! `columns()` makes Python lists of them, with no dependency at all.

use std::collections::HashMap;

use kanata_pp::output::canonical::Instruction;
use kanata_pp::output::segments::SegmentColumns;
use kanata_pp::Destination;
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::errors::conversion_error;
use crate::read::shown;

/// One row per what.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Per {
    Segment,
    Instruction,
    Dependency,
}

/// A column being built.
enum Column {
    /// 64-bit integers; `valid` is Arrow's validity bitmap once a null was seen.
    Int {
        data: Vec<i64>,
        valid: Option<Vec<u8>>,
        nulls: usize,
    },
    /// Booleans, bit-packed as Arrow packs them.
    Bool { bits: Vec<u8>, len: usize },
    /// UTF-8 text with 64-bit offsets (Arrow's `large_string`).
    Text { offsets: Vec<i64>, data: Vec<u8> },
    /// A few distinct strings (stage names): codes into `names`.
    Dict {
        codes: Vec<i32>,
        names: Vec<String>,
        index: HashMap<String, i32>,
    },
    /// 64-bit integers made by the reader of segments as `u64`: handed over as they are,
    /// since an `i64` column holds the same bytes (`x as i64`); `valid` as in `Int`.
    Words {
        data: Vec<u64>,
        valid: Option<Vec<u8>>,
        nulls: usize,
    },
    /// Dictionary codes made by the reader of segments as `u32` (fewer than 2^31 names).
    Codes { codes: Vec<u32>, names: Vec<String> },
}

fn set_bit(bits: &mut Vec<u8>, at: usize, value: bool) {
    if at / 8 >= bits.len() {
        bits.push(0);
    }
    if value {
        bits[at / 8] |= 1 << (at % 8);
    }
}

impl Column {
    fn int() -> Column {
        Column::Int {
            data: Vec::new(),
            valid: None,
            nulls: 0,
        }
    }
    fn text() -> Column {
        Column::Text {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
    fn dict() -> Column {
        Column::Dict {
            codes: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
        }
    }

    #[inline]
    fn push_int(&mut self, value: Option<i64>) {
        let Column::Int { data, valid, nulls } = self else {
            unreachable!("an int column")
        };
        let at = data.len();
        data.push(value.unwrap_or(0));
        if value.is_none() && valid.is_none() {
            // Every value before this one was valid.
            let mut bits = vec![0xffu8; at.div_ceil(8)];
            if at % 8 != 0 {
                bits[at / 8] = (1u8 << (at % 8)) - 1;
            }
            *valid = Some(bits);
        }
        if let Some(bits) = valid {
            set_bit(bits, at, value.is_some());
        }
        if value.is_none() {
            *nulls += 1;
        }
    }

    #[inline]
    fn push_bool(&mut self, value: bool) {
        let Column::Bool { bits, len } = self else {
            unreachable!("a bool column")
        };
        set_bit(bits, *len, value);
        *len += 1;
    }

    #[inline]
    fn push_text(&mut self, text: &str) {
        let Column::Text { offsets, data } = self else {
            unreachable!("a text column")
        };
        data.extend_from_slice(text.as_bytes());
        offsets.push(data.len() as i64);
    }

    #[inline]
    fn push_name(&mut self, name: &str) {
        let Column::Dict {
            codes,
            names,
            index,
        } = self
        else {
            unreachable!("a dictionary column")
        };
        // Stage names are few: a look through them beats hashing each one.
        let known = match names.len() {
            0..=32 => names.iter().position(|n| n == name).map(|at| at as i32),
            _ => index.get(name).copied(),
        };
        let code = match known {
            Some(code) => code,
            None => {
                let code = names.len() as i32;
                names.push(name.to_owned());
                index.insert(name.to_owned(), code);
                code
            }
        };
        codes.push(code);
    }

    fn len(&self) -> usize {
        match self {
            Column::Int { data, .. } => data.len(),
            Column::Bool { len, .. } => *len,
            Column::Text { offsets, .. } => offsets.len() - 1,
            Column::Dict { codes, .. } => codes.len(),
            Column::Words { data, .. } => data.len(),
            Column::Codes { codes, .. } => codes.len(),
        }
    }

    /// The column for pyarrow: `(type, length, buffers...)`, each buffer an
    /// `(address, size, owner)` for `pyarrow.foreign_buffer`: the values are handed over
    /// where they are, not copied.
    fn arrow(self, py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
        let n = self.len();
        match self {
            Column::Int { data, valid, nulls } => (
                "int64",
                n,
                hand(py, Held::Ints(data))?,
                valid.map(|v| hand(py, Held::Bytes(v))).transpose()?,
                nulls,
            )
                .into_pyobject(py),
            Column::Bool { bits, .. } => {
                ("bool", n, hand(py, Held::Bytes(bits))?, py.None(), 0usize).into_pyobject(py)
            }
            Column::Text { offsets, data } => (
                "large_string",
                n,
                hand(py, Held::Ints(offsets))?,
                hand(py, Held::Bytes(data))?,
                0usize,
            )
                .into_pyobject(py),
            Column::Dict { codes, names, .. } => (
                "dictionary",
                n,
                hand(py, Held::Codes(codes))?,
                PyList::new(py, names)?,
                0usize,
            )
                .into_pyobject(py),
            Column::Words { data, valid, nulls } => (
                "int64",
                n,
                hand(py, Held::Words(data))?,
                valid.map(|v| hand(py, Held::Bytes(v))).transpose()?,
                nulls,
            )
                .into_pyobject(py),
            Column::Codes { codes, names } => (
                "dictionary",
                n,
                hand(py, Held::Unsigned(codes))?,
                PyList::new(py, names)?,
                0usize,
            )
                .into_pyobject(py),
        }
    }

    /// The column as a Python list (`None` for nulls).
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match self {
            Column::Int { data, valid, .. } => match valid {
                None => PyList::new(py, data),
                Some(bits) => PyList::new(
                    py,
                    data.iter()
                        .enumerate()
                        .map(|(i, v)| (bits[i / 8] >> (i % 8) & 1 == 1).then_some(*v)),
                ),
            },
            Column::Bool { bits, len } => {
                PyList::new(py, (0..*len).map(|i| bits[i / 8] >> (i % 8) & 1 == 1))
            }
            Column::Text { offsets, data } => {
                let mut items = Vec::with_capacity(offsets.len() - 1);
                for w in offsets.windows(2) {
                    let text = std::str::from_utf8(&data[w[0] as usize..w[1] as usize])
                        .map_err(|e| PyValueError::new_err(e.to_string()))?;
                    items.push(PyString::new(py, text));
                }
                PyList::new(py, items)
            }
            Column::Dict { codes, names, .. } => {
                let names: Vec<Bound<'py, PyString>> =
                    names.iter().map(|n| PyString::new(py, n)).collect();
                PyList::new(py, codes.iter().map(|&c| names[c as usize].clone()))
            }
            Column::Words { data, valid, .. } => match valid {
                None => PyList::new(py, data.iter().map(|&v| v as i64)),
                Some(bits) => PyList::new(
                    py,
                    data.iter()
                        .enumerate()
                        .map(|(i, &v)| (bits[i / 8] >> (i % 8) & 1 == 1).then_some(v as i64)),
                ),
            },
            Column::Codes { codes, names } => {
                let names: Vec<Bound<'py, PyString>> =
                    names.iter().map(|n| PyString::new(py, n)).collect();
                PyList::new(py, codes.iter().map(|&c| names[c as usize].clone()))
            }
        }
    }
}

/// Values handed to pyarrow: they stay where they are for as long as this object lives,
/// which the `pyarrow.foreign_buffer` made over them keeps alive. (The buffer protocol would
/// do the same, but is not in the stable ABI before Python 3.11.)
#[pyclass(module = "kanata_trace._native", frozen)]
pub struct Memory(#[allow(dead_code)] Held);

/// What a [`Memory`] holds.
enum Held {
    Bytes(Vec<u8>),
    Ints(Vec<i64>),
    Codes(Vec<i32>),
    Words(Vec<u64>),
    Unsigned(Vec<u32>),
}

/// `(address, size, owner)` of `held`, in Arrow's little-endian layout.
fn hand(py: Python<'_>, mut held: Held) -> PyResult<Bound<'_, PyTuple>> {
    if cfg!(target_endian = "big") {
        match &mut held {
            Held::Bytes(_) => {}
            Held::Ints(v) => v.iter_mut().for_each(|x| *x = x.to_le()),
            Held::Codes(v) => v.iter_mut().for_each(|x| *x = x.to_le()),
            Held::Words(v) => v.iter_mut().for_each(|x| *x = x.to_le()),
            Held::Unsigned(v) => v.iter_mut().for_each(|x| *x = x.to_le()),
        }
    }
    let (address, size) = match &held {
        Held::Bytes(v) => (v.as_ptr() as usize, v.len()),
        Held::Ints(v) => (v.as_ptr() as usize, v.len() * 8),
        Held::Codes(v) => (v.as_ptr() as usize, v.len() * 4),
        Held::Words(v) => (v.as_ptr() as usize, v.len() * 8),
        Held::Unsigned(v) => (v.as_ptr() as usize, v.len() * 4),
    };
    // Moving the vector into the object moves its handle, not its values: the address holds.
    let owner = Bound::new(py, Memory(held))?;
    (address, size, owner).into_pyobject(py)
}

/// The columns of one kind of row, in order.
struct Columns {
    names: &'static [&'static str],
    columns: Vec<Column>,
}

impl Columns {
    fn new(per: Per) -> Columns {
        let (names, columns): (&'static [&'static str], Vec<Column>) = match per {
            Per::Segment => (
                &["id", "thread", "lane", "stage", "start", "end", "notes"],
                vec![
                    Column::int(),
                    Column::int(),
                    Column::int(),
                    Column::dict(),
                    Column::int(),
                    Column::int(),
                    Column::text(),
                ],
            ),
            Per::Instruction => (
                &[
                    "id",
                    "sim_id",
                    "thread",
                    "name",
                    "detail",
                    "begin",
                    "end",
                    "retired",
                    "flushed",
                    "retire_id",
                    "stages",
                ],
                vec![
                    Column::int(),
                    Column::int(),
                    Column::int(),
                    Column::text(),
                    Column::text(),
                    Column::int(),
                    Column::int(),
                    Column::Bool {
                        bits: Vec::new(),
                        len: 0,
                    },
                    Column::Bool {
                        bits: Vec::new(),
                        len: 0,
                    },
                    Column::int(),
                    Column::int(),
                ],
            ),
            Per::Dependency => (
                &["consumer", "producer", "kind"],
                vec![Column::int(), Column::int(), Column::int()],
            ),
        };
        Columns { names, columns }
    }

    /// The segment columns of [`kanata_pp::trace::segment_columns`], the rows `push` makes,
    /// taken as they are: only the validity of `end` (when a stage is open at the end) and
    /// the offsets of `notes` are made here.
    fn of_segments(c: SegmentColumns) -> Columns {
        let words = |data: Vec<u64>| Column::Words {
            data,
            valid: None,
            nulls: 0,
        };
        let rows = c.len();
        let valid = (!c.open.is_empty()).then(|| {
            let mut bits = vec![0xffu8; rows.div_ceil(8)];
            for &at in &c.open {
                bits[at / 8] &= !(1 << (at % 8));
            }
            bits
        });
        let end = Column::Words {
            data: c.end,
            valid,
            nulls: c.open.len(),
        };
        // Without notes, the offsets are zeros: memory the allocator gives zeroed, not
        // written here.
        let mut offsets = vec![0i64; rows + 1];
        let mut data = Vec::new();
        if !c.notes.is_empty() {
            let mut notes = c.notes.iter().peekable();
            for row in 0..rows {
                if let Some((_, text)) = notes.next_if(|(at, _)| *at == row) {
                    data.extend_from_slice(shown(text).as_bytes());
                }
                offsets[row + 1] = data.len() as i64;
            }
        }
        let mut columns = Columns::new(Per::Segment);
        columns.columns = vec![
            words(c.id),
            Column::Int {
                data: c.thread,
                valid: None,
                nulls: 0,
            },
            words(c.lane),
            Column::Codes {
                codes: c.stage,
                names: c.stage_names,
            },
            words(c.start),
            end,
            Column::Text { offsets, data },
        ];
        columns
    }

    /// The columns by name: pyarrow's buffers (`arrow`) or Python lists.
    fn into_dict(self, py: Python<'_>, arrow: bool) -> PyResult<Bound<'_, PyDict>> {
        let out = PyDict::new(py);
        for (name, column) in self.names.iter().zip(self.columns) {
            if arrow {
                out.set_item(name, column.arrow(py)?)?;
            } else {
                out.set_item(name, column.list(py)?)?;
            }
        }
        Ok(out)
    }

    fn push(&mut self, per: Per, insn: &Instruction) -> Result<(), String> {
        let c = &mut self.columns;
        let id = insn.id as i64;
        match per {
            Per::Segment => {
                for s in &insn.stages {
                    c[0].push_int(Some(id));
                    c[1].push_int(Some(insn.thread));
                    c[2].push_int(Some(s.lane as i64));
                    c[3].push_name(&s.name);
                    c[4].push_int(Some(s.start as i64));
                    c[5].push_int(s.end.map(|e| e as i64));
                    c[6].push_text(&shown(&s.notes));
                }
            }
            Per::Instruction => {
                let sim_id = i64::try_from(insn.sim_id).map_err(|_| {
                    format!(
                        "instruction {}: simulator id {} does not fit a 64-bit column",
                        insn.id, insn.sim_id
                    )
                })?;
                c[0].push_int(Some(id));
                c[1].push_int(Some(sim_id));
                c[2].push_int(Some(insn.thread));
                c[3].push_text(&shown(&insn.name));
                c[4].push_text(&shown(&insn.detail));
                c[5].push_int(Some(insn.begin as i64));
                c[6].push_int(insn.end.map(|e| e as i64));
                c[7].push_bool(insn.retire.is_some_and(|r| !r.flushed));
                c[8].push_bool(insn.retire.is_some_and(|r| r.flushed));
                c[9].push_int(insn.retire.map(|r| r.retire_id));
                c[10].push_int(Some(insn.stages.len() as i64));
            }
            Per::Dependency => {
                for d in &insn.deps {
                    c[0].push_int(Some(id));
                    c[1].push_int(Some(d.producer as i64));
                    c[2].push_int(Some(d.kind as i64));
                }
            }
        }
        Ok(())
    }
}

/// What reading gave: the columns, or an error of the conversion or of a value.
enum Outcome {
    Done(Columns),
    Conversion(kanata_pp::Error),
    Value(String),
}

/// ``_native.columns(src, per, arrow, **options)``: the columns of ``table()`` (``arrow``
/// true: buffers for pyarrow) or ``columns()`` (lists). Use those two.
#[pyfunction]
#[pyo3(signature = (src, per="segment", arrow=false, **kwargs))]
pub fn columns<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    per: &str,
    arrow: bool,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let per = match per {
        "segment" => Per::Segment,
        "instruction" => Per::Instruction,
        "dependency" => Per::Dependency,
        other => {
            return Err(PyValueError::new_err(format!(
                "per={other:?}: give \"segment\", \"instruction\" or \"dependency\""
            )))
        }
    };
    let path = crate::options::path(src)?;
    if per == Per::Segment {
        // A whole canonical file: straight into the columns, no instruction made.
        let options = crate::options::options(&path, kwargs)?.with_destination(Destination::Check);
        let direct = py.detach(|| {
            kanata_pp::trace::segment_columns(&path, &options).map(Columns::of_segments)
        });
        if let Some(columns) = direct {
            return columns.into_dict(py, arrow);
        }
    }
    let reader = crate::read::open(path, kwargs)?;
    let outcome = py.detach(move || {
        let mut reader = reader;
        let mut columns = Columns::new(per);
        for insn in reader.by_ref() {
            match insn {
                Ok(insn) => {
                    if let Err(message) = columns.push(per, &insn) {
                        return Outcome::Value(message);
                    }
                }
                Err(err) => return Outcome::Conversion(err),
            }
        }
        match reader.finish() {
            Ok(_) => Outcome::Done(columns),
            Err(err) => Outcome::Conversion(err),
        }
    });
    let columns = match outcome {
        Outcome::Done(columns) => columns,
        Outcome::Conversion(err) => return Err(conversion_error(py, &err)),
        Outcome::Value(message) => return Err(PyOverflowError::new_err(message)),
    };
    columns.into_dict(py, arrow)
}
