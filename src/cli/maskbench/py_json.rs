//! JSON text exactly as Python's `json.dumps(value)` writes it (separators `, ` and
//! `: `, `repr` floats, optional `ensure_ascii`), so instances replay byte for byte the
//! way the Python harnesses of this field serialize them. Keys keep their order.

use serde_json::Value;
use std::fmt::Write;

/// Serialization options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PyJson {
    /// Escape every non-ASCII character as `\uXXXX` (Python's default); otherwise write
    /// UTF-8 as is (`ensure_ascii=False`).
    pub ensure_ascii: bool,
}

/// `repr(float)`: shortest round-trip digits, positional for exponents in [-4, 16).
fn py_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    let a = f.abs();
    if a == 0.0 {
        out.push_str("0.0");
        return;
    }
    // `{:e}` prints the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{a:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let e = exp as usize;
            if digits.len() > e + 1 {
                let _ = write!(out, "{}.{}", &digits[..e + 1], &digits[e + 1..]);
            } else {
                let _ = write!(out, "{}{}.0", digits, "0".repeat(e + 1 - digits.len()));
            }
        } else {
            let _ = write!(out, "0.{}{}", "0".repeat((-exp - 1) as usize), digits);
        }
    } else {
        let (d0, rest) = digits.split_at(1);
        let sign = if exp < 0 { '-' } else { '+' };
        if rest.is_empty() {
            let _ = write!(out, "{d0}e{sign}{:02}", exp.abs());
        } else {
            let _ = write!(out, "{d0}.{rest}e{sign}{:02}", exp.abs());
        }
    }
}

fn py_string(s: &str, style: PyJson, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (style.ensure_ascii && !(' '..='~').contains(&c)) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_value(v: &Value, style: PyJson, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                let _ = write!(out, "{n}");
            } else {
                py_float(n.as_f64().unwrap_or(0.0), out);
            }
        }
        Value::String(s) => py_string(s, style, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(x, style, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_string(k, style, out);
                out.push_str(": ");
                write_value(x, style, out);
            }
            out.push('}');
        }
    }
}

/// `json.dumps(v, ensure_ascii=style.ensure_ascii)`.
pub fn to_python_json(v: &Value, style: PyJson) -> String {
    let mut out = String::new();
    write_value(v, style, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_json_dumps() {
        // Expected strings are what CPython 3 prints for the same values.
        let v: Value = serde_json::from_str(
            r#"{"b": [1, 2.5, 1e-05, 1e16, 123456789.0, -0.0001, 1.5e300], "a": "é\n\u0001\"", "c": null}"#,
        )
        .unwrap();
        assert_eq!(
            to_python_json(&v, PyJson { ensure_ascii: true }),
            r#"{"b": [1, 2.5, 1e-05, 1e+16, 123456789.0, -0.0001, 1.5e+300], "a": "\u00e9\n\u0001\"", "c": null}"#
        );
        assert_eq!(
            to_python_json(
                &serde_json::json!(["😀", 0.1, 100.0]),
                PyJson { ensure_ascii: true }
            ),
            r#"["\ud83d\ude00", 0.1, 100.0]"#
        );
        assert_eq!(
            to_python_json(
                &serde_json::json!(["é"]),
                PyJson {
                    ensure_ascii: false
                }
            ),
            "[\"é\"]"
        );
    }
}
