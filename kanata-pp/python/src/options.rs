//! The keywords of `convert`, `read`, `stats` and `table`: kanata-pp's own command-line
//! options, given to its own parser (`kanata_pp::cli::args::Cli`), so that every keyword means
//! exactly what the option means on the command line and is checked the same way.

use std::path::{Path, PathBuf};

use clap::Parser;
use kanata_pp::cli::args::Cli;
use kanata_pp::{Destination, Options};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// How a keyword is given on the command line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--name` when true.
    Flag,
    /// `--name VALUE`: a number or a string.
    Value,
    /// `--name A..B`: a `(a, b)` tuple (either end `None`) or a string `"12M..12.01M"`.
    Range,
    /// `--threads 0,2`: an int, a list of ints or a string.
    List,
}

/// The keywords, each with its option: every kanata-pp option that is about one conversion
/// (not about batches, the terminal or pictures). `from_` is `--from`.
const KEYWORDS: &[(&str, &str, Kind)] = &[
    ("from_", "--from", Kind::Value),
    ("compress", "--compress", Kind::Value),
    ("level", "--level", Kind::Value),
    ("stats", "--stats", Kind::Flag),
    ("strict", "--strict", Kind::Flag),
    ("verbose", "--verbose", Kind::Flag),
    ("late_window", "--late-window", Kind::Value),
    ("renumber_retire", "--renumber-retire", Kind::Flag),
    ("close_open", "--close-open", Kind::Value),
    ("dedupe", "--dedupe", Kind::Flag),
    ("stretch_zero", "--stretch-zero", Kind::Flag),
    ("strip_prefix", "--strip-prefix", Kind::Value),
    ("window", "--window", Kind::Value),
    ("ticks_per_cycle", "--ticks-per-cycle", Kind::Value),
    ("deps", "--deps", Kind::Flag),
    ("rsd_disasm", "--rsd-disasm", Kind::Value),
    ("compact", "--compact", Kind::Flag),
    ("seekable", "--seekable", Kind::Flag),
    ("no_seekable", "--no-seekable", Kind::Flag),
    ("frame_size", "--frame-size", Kind::Value),
    ("no_index", "--no-index", Kind::Flag),
    ("cycles", "--cycles", Kind::Range),
    ("sim_cycles", "--sim-cycles", Kind::Range),
    ("insns", "--insns", Kind::Range),
    ("threads", "--threads", Kind::List),
];

/// The keyword names, for error messages and the tests.
pub fn keyword_names() -> Vec<&'static str> {
    KEYWORDS.iter().map(|(name, _, _)| *name).collect()
}

/// What a call asks for: the options, and whether it wanted a check only.
pub struct Asked {
    pub options: Options,
    /// `max_examples` given as a keyword overrides `verbose`.
    pub max_examples: Option<usize>,
}

/// The options of the command line `kanata-pp INPUT --check <keywords>`: the destination is
/// set by the caller.
pub fn options(input: &Path, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Asked> {
    let mut argv: Vec<String> = vec!["kanata-pp".into(), "--check".into(), "--no-progress".into()];
    let mut max_examples = None;
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            let key: String = key.extract()?;
            if key == "max_examples" {
                if !value.is_none() {
                    max_examples = Some(value.extract::<usize>()?);
                }
                continue;
            }
            let Some((_, option, kind)) = KEYWORDS.iter().find(|(name, _, _)| *name == key) else {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument {key:?}; the options are: {}, max_examples",
                    keyword_names().join(", ")
                )));
            };
            if value.is_none() {
                continue;
            }
            match kind {
                Kind::Flag => {
                    if value.is_truthy()? {
                        argv.push((*option).into());
                    }
                }
                Kind::Value => {
                    argv.push((*option).into());
                    argv.push(scalar(&value, &key)?);
                }
                Kind::Range => {
                    argv.push(format!("{option}={}", range(&value, &key)?));
                }
                Kind::List => {
                    argv.push(format!("{option}={}", list(&value, &key)?));
                }
            }
        }
    }
    argv.push("--".into());
    argv.push(input.to_string_lossy().into_owned());
    let cli = Cli::try_parse_from(&argv).map_err(|err| {
        // clap's message without its usage lines: `error: invalid value '5..1' for ...`.
        let text = err.render().to_string();
        let first = text.lines().next().unwrap_or("invalid options").to_owned();
        PyValueError::new_err(first.trim_start_matches("error: ").to_owned())
    })?;
    let options = cli
        .options()
        .map_err(|err| PyValueError::new_err(err.to_string()))?;
    Ok(Asked {
        options,
        max_examples,
    })
}

impl Asked {
    /// The options with `destination`.
    pub fn with_destination(mut self, destination: Destination) -> Options {
        self.options.destination = destination;
        if let Some(n) = self.max_examples {
            self.options.max_examples = n;
        }
        self.options
    }
}

/// A number or a string, as text.
fn scalar(value: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{key} takes a number or a string"
        )));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    if let Ok(n) = value.extract::<i64>() {
        return Ok(n.to_string());
    }
    if let Ok(n) = value.extract::<u64>() {
        return Ok(n.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "{key} takes a number or a string"
    )))
}

/// `(a, b)` (either `None`) or `"a..b"` as `a..b`.
fn range(value: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    let bad = || {
        PyTypeError::new_err(format!(
            "{key} takes (start, end) with either end None, or a string like \"12M..12.01M\""
        ))
    };
    let (start, end): (Option<Bound<'_, PyAny>>, Option<Bound<'_, PyAny>>) =
        if let Ok(tuple) = value.cast::<PyTuple>() {
            tuple.extract().map_err(|_| bad())?
        } else if let Ok(list) = value.cast::<PyList>() {
            list.as_sequence()
                .to_tuple()?
                .extract()
                .map_err(|_| bad())?
        } else if let Ok(r) = value.getattr("start") {
            // A `range(a, b)` with step 1.
            let step: i64 = value.getattr("step")?.extract()?;
            if step != 1 {
                return Err(bad());
            }
            (Some(r), Some(value.getattr("stop")?))
        } else {
            return Err(bad());
        };
    let end_text = |v: Option<Bound<'_, PyAny>>| -> PyResult<String> {
        match v {
            None => Ok(String::new()),
            Some(v) if v.is_instance_of::<PyString>() => Ok(v.extract::<String>()?),
            Some(v) => Ok(v.extract::<i128>().map_err(|_| bad())?.to_string()),
        }
    };
    Ok(format!("{}..{}", end_text(start)?, end_text(end)?))
}

/// An int, a sequence of ints or a string, as `0,2`.
fn list(value: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_cow()?.into_owned());
    }
    if let Ok(n) = value.extract::<i64>() {
        return Ok(n.to_string());
    }
    let ids: Vec<i64> = value.extract().map_err(|_| {
        PyTypeError::new_err(format!("{key} takes thread ids: 0, [0, 2] or \"0,2\""))
    })?;
    if ids.is_empty() {
        return Err(PyValueError::new_err(format!("{key}: no thread ids")));
    }
    Ok(ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

/// A path argument: `str` or `os.PathLike`.
pub fn path(value: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    value.extract::<PathBuf>()
}
