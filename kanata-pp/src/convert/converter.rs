//! The interface between an input format's reader and the conversion.

use kanata_writer::Finished;

use crate::diag::Diagnostics;
use crate::error::Error;

/// One input format's reader: takes the input line by line and writes the trace.
pub(crate) trait Converter<W> {
    /// Reads one line (without its line end); `lineno` is 1-based.
    fn line(&mut self, line: &[u8], lineno: u64, diag: &mut Diagnostics) -> Result<(), Error>;

    /// Ends the input: writes what is left and finishes the output.
    fn finish(self: Box<Self>, diag: &mut Diagnostics) -> Result<Finished<W>, Error>;
}
