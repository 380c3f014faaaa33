//! Which format an input is, from its first bytes.

use bstr::ByteSlice;

use crate::error::{Error, ErrorKind};

/// An input format kanata-pp reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A Kanata log (any version, sloppy or canonical).
    Kanata,
    /// gem5's O3PipeView trace and its dialects.
    Gem5,
    /// RSD's raw `RSD_Kanata` snapshot log.
    Rsd,
}

impl Format {
    /// The name reports and `--from` use.
    pub fn name(self) -> &'static str {
        match self {
            Format::Kanata => "kanata",
            Format::Gem5 => "gem5",
            Format::Rsd => "rsd",
        }
    }

    /// The format named `name` (as `--from` takes it).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "kanata" => Some(Format::Kanata),
            "gem5" => Some(Format::Gem5),
            "rsd" => Some(Format::Rsd),
            _ => None,
        }
    }
}

/// Detects the format from the first bytes of the (decompressed) input: the first line that
/// is not blank or a comment decides.
pub fn detect(head: &[u8]) -> Result<Format, Error> {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if head.is_empty() {
        return Err(Error::new(ErrorKind::Input, "empty input: not a trace"));
    }
    if memchr::memmem::find(head, b"O3PipeView:").is_some() {
        return Ok(Format::Gem5);
    }
    // `lines` also drops a CR before the LF and a last empty line: `trim` and the blank
    // line skip would drop them anyway.
    for line in head.lines() {
        let line = crate::kanata::parse::trim(line);
        if line.is_empty() || line.starts_with(b"#") || line.starts_with(b"//") {
            continue;
        }
        if line.starts_with(b"RSD_Kanata") {
            return Ok(Format::Rsd);
        }
        if line.starts_with(b"Kanata") || line.starts_with(b"C=") {
            return Ok(Format::Kanata);
        }
        break;
    }
    if head.contains(&0) {
        return Err(Error::new(
            ErrorKind::Input,
            "binary data: not a Kanata log or gem5 trace",
        )
        .with_line(1));
    }
    Err(Error::new(
        ErrorKind::Input,
        "not a Kanata log (no `Kanata` header or `C=` line) nor a gem5 O3PipeView trace",
    )
    .with_line(1))
}

/// The lines of `head` that start with `prefix`, without it (Q18), for detection.
pub fn strip_prefix(head: &[u8], prefix: &[u8]) -> Vec<u8> {
    let mut kept = Vec::new();
    // Split on LF alone: `lines` would also drop a CR before it, which is kept here.
    for line in head.split_str("\n") {
        if let Some(rest) = line.strip_prefix(prefix) {
            kept.extend_from_slice(rest.trim_ascii_start());
            kept.push(b'\n');
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_recognised_from_the_first_real_line() {
        assert_eq!(detect(b"Kanata\t0004\n").unwrap(), Format::Kanata);
        assert_eq!(
            detect(b"\xef\xbb\xbf\n# c\nKanata 0004\n").unwrap(),
            Format::Kanata
        );
        assert_eq!(detect(b"C=\t0\nI\t0\t0\t0\n").unwrap(), Format::Kanata);
        assert_eq!(
            detect(b"O3PipeView:fetch:1000:0x00000000:0:1:nop\n").unwrap(),
            Format::Gem5
        );
        assert_eq!(detect(b"RSD_Kanata 0000\n").unwrap(), Format::Rsd);
        assert!(detect(b"hello world\n").is_err());
        assert!(detect(b"").is_err());
        assert!(detect(b"\x00\x01\x02").is_err());
    }
}
