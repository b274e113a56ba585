//! Deterministic JSON text for values a provider sends as objects (Anthropic
//! `tool_use.input` given whole, Gemini `functionCall.args` and streamed
//! `partialArgs`): keys sorted, no whitespace, non-ASCII kept, integers exactly
//! as written (any size), floats as Python's `repr` writes them. The pure twin
//! (`_pure/providers/jsontext.py`, `json.dumps(..., sort_keys=True,
//! ensure_ascii=False, separators=(",", ":"))` over `json.loads`) writes the
//! same text for the same input.
//!
//! [`Node`] keeps a number's text, so an integer beyond 64 bits is never
//! turned into a float. Parsing and writing are iterative: input depth cannot
//! grow the stack.

use std::collections::BTreeMap;

use crate::core::envelope::ENVELOPE_MAX_DEPTH;

/// A JSON value whose numbers keep their text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Null,
    Bool(bool),
    /// The number as written (validated, finite).
    Number(String),
    String(String),
    Array(Vec<Node>),
    /// Sorted by key (Python's `sort_keys`: code points = UTF-8 byte order).
    Object(BTreeMap<String, Node>),
}

/// The input is not JSON this module can represent (or a float overflows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

enum Open {
    Array(Vec<Node>),
    Object(BTreeMap<String, Node>, String),
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Result<(), Invalid> {
        self.skip_ws();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    fn string(&mut self) -> Result<String, Invalid> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(Invalid);
        }
        let bytes = self.text.as_bytes();
        let mut i = start + 1;
        let mut escaped = false;
        loop {
            match bytes.get(i) {
                None => return Err(Invalid),
                Some(b'\\') => {
                    escaped = true;
                    i += 2;
                }
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        self.pos = i + 1;
        let token = self.text.get(start..=i).ok_or(Invalid)?;
        if escaped {
            serde_json::from_str(token).map_err(|_| Invalid)
        } else {
            token
                .get(1..token.len() - 1)
                .map(str::to_owned)
                .ok_or(Invalid)
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), Invalid> {
        if self.text.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Invalid)
        }
    }

    fn number(&mut self) -> Result<String, Invalid> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        number(self.text.get(start..self.pos).ok_or(Invalid)?)
    }
}

/// A validated number token (JSON grammar; a float must be finite).
pub fn number(token: &str) -> Result<String, Invalid> {
    let digits = token.strip_prefix('-').unwrap_or(token);
    let (int_part, rest) = digits.split_at(digits.find(['.', 'e', 'E']).unwrap_or(digits.len()));
    let int_ok = int_part == "0" || (!int_part.is_empty() && !int_part.starts_with('0'));
    if !int_ok || !int_part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Invalid);
    }
    if rest.is_empty() {
        return Ok(token.to_owned());
    }
    let (frac, exp) = rest.split_at(rest.find(['e', 'E']).unwrap_or(rest.len()));
    if let Some(frac) = frac.strip_prefix('.') {
        if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Invalid);
        }
    } else if !frac.is_empty() {
        return Err(Invalid);
    }
    if let Some(exp) = exp.get(1..) {
        let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        if exp.is_empty() || !exp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Invalid);
        }
    }
    match token.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(token.to_owned()),
        _ => Err(Invalid),
    }
}

/// Parse one JSON value (surrounding whitespace allowed). A repeated key,
/// or nesting deeper than [`ENVELOPE_MAX_DEPTH`], is invalid: the envelope
/// rule refuses both first, so a tree from here is never deeper than that
/// (its drop recurses once per level).
pub fn parse(text: &str) -> Result<Node, Invalid> {
    let mut cur = Cursor { text, pos: 0 };
    let mut stack: Vec<Open> = Vec::new();
    loop {
        cur.skip_ws();
        let opens = matches!(cur.peek(), Some(b'{' | b'['));
        if opens && stack.len() >= ENVELOPE_MAX_DEPTH {
            return Err(Invalid);
        }
        let mut value = match cur.peek().ok_or(Invalid)? {
            b'{' => {
                cur.pos += 1;
                cur.skip_ws();
                if cur.peek() == Some(b'}') {
                    cur.pos += 1;
                    Node::Object(BTreeMap::new())
                } else {
                    let key = cur.string()?;
                    cur.eat(b':')?;
                    stack.push(Open::Object(BTreeMap::new(), key));
                    continue;
                }
            }
            b'[' => {
                cur.pos += 1;
                cur.skip_ws();
                if cur.peek() == Some(b']') {
                    cur.pos += 1;
                    Node::Array(Vec::new())
                } else {
                    stack.push(Open::Array(Vec::new()));
                    continue;
                }
            }
            b'"' => Node::String(cur.string()?),
            b't' => cur.literal("true").map(|()| Node::Bool(true))?,
            b'f' => cur.literal("false").map(|()| Node::Bool(false))?,
            b'n' => cur.literal("null").map(|()| Node::Null)?,
            _ => Node::Number(cur.number()?),
        };
        // attach the value, closing every container it completes
        loop {
            match stack.last_mut() {
                None => {
                    cur.skip_ws();
                    return if cur.pos == text.len() {
                        Ok(value)
                    } else {
                        Err(Invalid)
                    };
                }
                Some(Open::Array(items)) => {
                    items.push(value);
                    cur.skip_ws();
                    match cur.peek() {
                        Some(b',') => {
                            cur.pos += 1;
                            break;
                        }
                        Some(b']') => {
                            cur.pos += 1;
                            let Some(Open::Array(items)) = stack.pop() else {
                                return Err(Invalid);
                            };
                            value = Node::Array(items);
                        }
                        _ => return Err(Invalid),
                    }
                }
                Some(Open::Object(map, key)) => {
                    if map.insert(std::mem::take(key), value).is_some() {
                        return Err(Invalid);
                    }
                    cur.skip_ws();
                    match cur.peek() {
                        Some(b',') => {
                            cur.pos += 1;
                            *key = cur.string()?;
                            cur.eat(b':')?;
                            break;
                        }
                        Some(b'}') => {
                            cur.pos += 1;
                            let Some(Open::Object(map, _)) = stack.pop() else {
                                return Err(Invalid);
                            };
                            value = Node::Object(map);
                        }
                        _ => return Err(Invalid),
                    }
                }
            }
        }
    }
}

enum Frame<'a> {
    Array(std::slice::Iter<'a, Node>, bool),
    Object(std::collections::btree_map::Iter<'a, String, Node>, bool),
}

/// The canonical arguments text of `node`.
pub fn dumps(node: &Node) -> String {
    let mut out = String::new();
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next: Option<&Node> = Some(node);
    loop {
        if let Some(v) = next.take() {
            match v {
                Node::Null => out.push_str("null"),
                Node::Bool(true) => out.push_str("true"),
                Node::Bool(false) => out.push_str("false"),
                Node::Number(text) => write_number(text, &mut out),
                Node::String(s) => write_string(s, &mut out),
                Node::Array(items) => {
                    out.push('[');
                    stack.push(Frame::Array(items.iter(), true));
                }
                Node::Object(map) => {
                    out.push('{');
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

/// An integer as Python's `int` prints it (`-0` is `0`); a float as `repr`.
fn write_number(text: &str, out: &mut String) {
    if !text.contains(['.', 'e', 'E']) {
        if text.trim_start_matches('-').bytes().all(|b| b == b'0') {
            out.push('0');
        } else {
            out.push_str(text);
        }
    } else {
        write_float(text.parse::<f64>().unwrap_or(0.0), out);
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

    fn canon(text: &str) -> Result<String, Invalid> {
        parse(text).map(|node| dumps(&node))
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
    fn values_are_sorted_compact_and_exact() {
        assert_eq!(
            canon(r#" {"b":[1,-2,3.5,null,true],"a":{"z":"\n\u0001é\"","y":{}}} "#),
            Ok(r#"{"a":{"y":{},"z":"\n\u0001é\""},"b":[1,-2,3.5,null,true]}"#.to_owned())
        );
        assert_eq!(
            canon("123456789012345678901234567890"),
            Ok("123456789012345678901234567890".to_owned())
        );
        assert_eq!(
            canon("[-0, -0.0, 1E2, 1e-7]"),
            Ok("[0,-0.0,100.0,1e-07]".to_owned())
        );
    }

    #[test]
    fn invalid_input_is_refused() {
        for bad in [
            "",
            "1e400",
            "-1e400",
            "[1,]",
            "{\"a\"}",
            "01",
            "1.",
            "tru",
            "[1] x",
            "\"abc",
            "NaN",
            "{1:2}",
            "{\"a\":1,\"a\":1}",
            "[{\"b\":[],\"b\":{}}]",
        ] {
            assert_eq!(canon(bad), Err(Invalid), "{bad}");
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(canon(&deep(ENVELOPE_MAX_DEPTH)).is_ok());
        assert_eq!(canon(&deep(ENVELOPE_MAX_DEPTH + 1)), Err(Invalid));
        assert_eq!(canon(&deep(100_000)), Err(Invalid));
    }
}
