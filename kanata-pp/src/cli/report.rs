//! A small JSON writer for the machine-readable reports: one object per line, keys in a fixed
//! order, strings escaped as RFC 8259 requires.

use std::fmt::Write as _;

/// Builds one JSON object as text.
pub struct JsonObject {
    text: String,
    empty: bool,
}

impl Default for JsonObject {
    fn default() -> JsonObject {
        JsonObject::new()
    }
}

impl JsonObject {
    /// An empty object.
    pub fn new() -> JsonObject {
        JsonObject {
            text: String::from("{"),
            empty: true,
        }
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.text.push(',');
        }
        self.empty = false;
        push_string(&mut self.text, key);
        self.text.push(':');
    }

    /// `"key": "value"`.
    pub fn string(&mut self, key: &str, value: &str) -> &mut JsonObject {
        self.key(key);
        push_string(&mut self.text, value);
        self
    }

    /// `"key": "value"` or `"key": null`.
    pub fn opt_string(&mut self, key: &str, value: Option<&str>) -> &mut JsonObject {
        match value {
            Some(value) => self.string(key, value),
            None => self.null(key),
        }
    }

    /// `"key": 12`.
    pub fn int(&mut self, key: &str, value: impl Into<i128>) -> &mut JsonObject {
        self.key(key);
        let _ = write!(self.text, "{}", value.into());
        self
    }

    /// `"key": 12` or `"key": null`.
    pub fn opt_int(&mut self, key: &str, value: Option<impl Into<i128>>) -> &mut JsonObject {
        match value {
            Some(value) => self.int(key, value),
            None => self.null(key),
        }
    }

    /// `"key": 1.5` (`null` for a value JSON cannot hold).
    pub fn float(&mut self, key: &str, value: f64) -> &mut JsonObject {
        if !value.is_finite() {
            return self.null(key);
        }
        self.key(key);
        let _ = write!(self.text, "{value}");
        self
    }

    /// `"key": null`.
    pub fn null(&mut self, key: &str) -> &mut JsonObject {
        self.key(key);
        self.text.push_str("null");
        self
    }

    /// `"key": <object>`.
    pub fn object(&mut self, key: &str, value: JsonObject) -> &mut JsonObject {
        self.key(key);
        self.text.push_str(&value.finish());
        self
    }

    /// `"key": [<object>, …]`.
    pub fn array(&mut self, key: &str, items: Vec<JsonObject>) -> &mut JsonObject {
        self.key(key);
        self.text.push('[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.text.push(',');
            }
            self.text.push_str(&item.finish());
        }
        self.text.push(']');
        self
    }

    /// `"key": <text>`, where `text` is already JSON.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut JsonObject {
        self.key(key);
        self.text.push_str(json);
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        self.text.push('}');
        self.text
    }
}

/// Appends `s` as a JSON string.
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_escape_strings_and_keep_key_order() {
        let mut inner = JsonObject::new();
        inner.int("Q1", 3u64);
        let mut o = JsonObject::new();
        o.string("input", "a \"b\"\\\n\u{1}")
            .opt_string("error", None)
            .int("n", -5i64)
            .float("seconds", 0.5)
            .float("nan", f64::NAN)
            .object("repairs", inner);
        assert_eq!(
            o.finish(),
            r#"{"input":"a \"b\"\\\n\u0001","error":null,"n":-5,"seconds":0.5,"nan":null,"repairs":{"Q1":3}}"#
        );
    }
}
