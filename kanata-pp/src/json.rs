//! The text form of the JSON reports: serde_json's compact output, one object per line, with
//! two choices of this project's that tools already read (`docs/in-ci.md`):
//!
//! - a float is written as Rust's `Display` writes it (`0`, `1.5`, never `1.0` or `1e-7`), and
//!   one JSON cannot hold (NaN, infinite) is `null`;
//! - every control character of a string is `\uXXXX` but for `\n`, `\r` and `\t` (serde_json
//!   alone writes `\b` and `\f`).
//!
//! The reports themselves are `#[derive(Serialize)]` structs beside the code that fills them,
//! so that a new field is one line and the order of the fields is the order of the struct.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// `value` as one line of JSON (without the line end).
pub(crate) fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, ReportFormatter);
    // Serializing the report structs cannot fail: their maps have string keys and writing to
    // a Vec does not fail.
    if value.serialize(&mut serializer).is_err() {
        return String::from("null");
    }
    // serde_json writes valid UTF-8 only.
    String::from_utf8(out).unwrap_or_default()
}

/// serde_json's compact form with this project's floats and string escapes.
struct ReportFormatter;

impl Formatter for ReportFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        // serde_json writes `null` for a value that is not finite before it gets here.
        write!(writer, "{value}")
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        write!(writer, "{value}")
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        match char_escape {
            CharEscape::Backspace => writer.write_all(b"\\u0008"),
            CharEscape::FormFeed => writer.write_all(b"\\u000c"),
            other => CompactFormatter.write_char_escape(writer, other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Sample<'a> {
        text: &'a str,
        count: u64,
        none: Option<u64>,
        whole: f64,
        half: f64,
        tiny: f64,
        nan: f64,
        map: BTreeMap<&'a str, u64>,
        list: Vec<i64>,
    }

    #[test]
    fn reports_keep_the_text_form_tools_read() {
        let sample = Sample {
            text: "a\"b\\c\n\r\t\u{1}\u{8}\u{c}\u{7f}\u{e9}",
            count: 12,
            none: None,
            whole: 1.0,
            half: 0.5,
            tiny: 1e-7,
            nan: f64::NAN,
            map: BTreeMap::from([("Q1", 2), ("Q11", 3)]),
            list: vec![-1, 0],
        };
        assert_eq!(
            to_line(&sample),
            "{\"text\":\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u0008\\u000c\u{7f}\u{e9}\",\"count\":12,\
             \"none\":null,\"whole\":1,\"half\":0.5,\"tiny\":0.0000001,\"nan\":null,\
             \"map\":{\"Q1\":2,\"Q11\":3},\"list\":[-1,0]}"
        );
        assert_eq!(to_line(&f64::INFINITY), "null");
    }
}
