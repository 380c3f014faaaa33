//! gem5's O3PipeView trace (and its dialects) converted to Kanata, drawn by Konata as Konata
//! draws the raw trace (`../shared/spec/gem5-o3pipeview.md`, section 2).

use std::io::Write;

use kanata_writer::{Finished, Writer, WriterBuilder};

use crate::convert::Converter;
use crate::diag::Diagnostics;
use crate::error::{Error, ErrorKind};

/// How a gem5 trace is read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gem5Options {
    /// How many instructions a record may come late (out of sequence-number order) and still
    /// be placed; at least Konata's 16,384.
    pub window: usize,
    /// Ticks per cycle; `None` detects it from the trace.
    pub ticks_per_cycle: Option<u64>,
    /// Draw dependency arrows from `Rename` debug lines.
    pub deps: bool,
}

impl Default for Gem5Options {
    fn default() -> Gem5Options {
        Gem5Options {
            window: 16_384,
            ticks_per_cycle: None,
            deps: false,
        }
    }
}

/// Reads a gem5 O3PipeView trace and writes it as Kanata.
pub(crate) struct Gem5Converter<W: Write + Send + 'static> {
    writer: Writer<W>,
    options: Gem5Options,
}

impl<W: Write + Send + 'static> Gem5Converter<W> {
    pub(crate) fn new(
        builder: WriterBuilder,
        output: W,
        options: Gem5Options,
    ) -> Result<Gem5Converter<W>, Error> {
        Ok(Gem5Converter {
            writer: builder.from_writer(output)?,
            options,
        })
    }
}

impl<W: Write + Send + 'static> Converter<W> for Gem5Converter<W> {
    fn line(&mut self, _line: &[u8], _lineno: u64, _diag: &mut Diagnostics) -> Result<(), Error> {
        let _ = (&mut self.writer, &self.options);
        Err(Error::new(
            ErrorKind::Input,
            "gem5 input is not supported yet",
        ))
    }

    fn finish(self: Box<Self>, _diag: &mut Diagnostics) -> Result<Finished<W>, Error> {
        Ok(self.writer.finish()?)
    }
}
