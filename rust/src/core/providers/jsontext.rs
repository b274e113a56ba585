//! Deterministic JSON text for values a provider sends as objects (Anthropic
//! `tool_use.input` in whole bodies, Gemini `functionCall.args`): keys sorted,
//! no whitespace, non-ASCII kept, floats written as Python's `repr` writes
//! them. The pure twin (`_pure/providers/jsontext.py`, `json.dumps(...,
//! sort_keys=True, ensure_ascii=False, separators=(",", ":"))`) writes the same
//! text for the same value. Iterative: input depth cannot grow the stack.

use serde_json::{Number, Value};

enum Frame<'a> {
    Array(std::slice::Iter<'a, Value>, bool),
    Object(serde_json::map::Iter<'a>, bool),
}

/// The canonical arguments text of `value`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next: Option<&Value> = Some(value);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::Null => out.push_str("null"),
                Value::Bool(true) => out.push_str("true"),
                Value::Bool(false) => out.push_str("false"),
                Value::Number(n) => write_number(n, &mut out),
                Value::String(s) => write_string(s, &mut out),
                Value::Array(items) => {
                    out.push('[');
                    stack.push(Frame::Array(items.iter(), true));
                }
                Value::Object(map) => {
                    out.push('{');
                    // serde_json's map (no `preserve_order`) iterates in key order:
                    // Python's `sort_keys` order (code points = UTF-8 byte order).
                    stack.push(Frame::Object(map.iter(), true));
                }
            }
        }
        let Some(frame) = stack.last_mut() else { break };
        match frame {
            Frame::Array(iter, first) => match iter.next() {
                Some(item) => {
                    if !*first {
                        out.push(',');
                    }
                    *first = false;
                    next = Some(item);
                }
                None => {
                    out.push(']');
                    stack.pop();
                }
            },
            Frame::Object(iter, first) => match iter.next() {
                Some((key, item)) => {
                    if !*first {
                        out.push(',');
                    }
                    *first = false;
                    write_string(key, &mut out);
                    out.push(':');
                    next = Some(item);
                }
                None => {
                    out.push('}');
                    stack.pop();
                }
            },
        }
    }
    out
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(s.get(start..i).unwrap_or(""));
        match escape {
            Some(text) => out.push_str(text),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(
                    HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0'),
                ));
                out.push(char::from(
                    HEX.get(usize::from(b & 0xf)).copied().unwrap_or(b'0'),
                ));
            }
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or(""));
    out.push('"');
}

fn write_number(n: &Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(f) = n.as_f64() {
        write_float(f, out);
    }
}

/// `repr(float)`: the shortest digits that round-trip, in fixed notation when
/// the decimal exponent is in [-4, 16), else `d.ddde+XX`.
pub fn write_float(f: f64, out: &mut String) {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if f.is_sign_negative() {
        out.push('-');
    }
    let n = digits.len() as i64;
    let decpt = exp + 1;
    if (-4..16).contains(&exp) {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..(-decpt) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt < n {
            let (int_part, frac) = digits.split_at(decpt as usize);
            out.push_str(int_part);
            out.push('.');
            out.push_str(frac);
        } else {
            out.push_str(&digits);
            for _ in 0..(decpt - n) {
                out.push('0');
            }
            out.push_str(".0");
        }
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let magnitude = exp.unsigned_abs();
        if magnitude < 10 {
            out.push('0');
        }
        out.push_str(&magnitude.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(f: f64) -> String {
        let mut s = String::new();
        write_float(f, &mut s);
        s
    }

    #[test]
    fn floats_match_python_repr() {
        assert_eq!(float(0.0), "0.0");
        assert_eq!(float(-0.0), "-0.0");
        assert_eq!(float(1.0), "1.0");
        assert_eq!(float(0.5), "0.5");
        assert_eq!(float(123.456), "123.456");
        assert_eq!(float(1e16), "1e+16");
        assert_eq!(float(1.5e16), "1.5e+16");
        assert_eq!(float(1e15), "1000000000000000.0");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(1.2345e-7), "1.2345e-07");
        assert_eq!(float(1e300), "1e+300");
        assert_eq!(float(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn values_are_sorted_and_compact() {
        let v: Value =
            serde_json::from_str(r#"{"b":[1,-2,3.5,null,true],"a":{"z":"\n\u0001é\"","y":{}}}"#)
                .unwrap();
        assert_eq!(
            dumps(&v),
            r#"{"a":{"y":{},"z":"\n\u0001é\""},"b":[1,-2,3.5,null,true]}"#
        );
    }
}
