//! The strict parser against serde_json.
//!
//! Both parse the same bytes. Where both accept, the values must be equal
//! (integers exactly, floats bit for bit: both round correctly). Where both
//! reject, the error positions must agree for the codes listed in
//! [`serde_position`]. Where only one accepts, the difference must be one of
//! the allowed differences below; anything else is a bug in one of them.
//!
//! Allowed differences (ours rejects, serde_json accepts), each on purpose:
//! - `DUPLICATE_KEY`: I-JSON (RFC 7493) forbids duplicate names; serde_json
//!   keeps the last one, which lets a second `"path"` win silently.
//! - `NUMBER_OUT_OF_RANGE` on an integer: integers are kept exact in 64 bits;
//!   serde_json (without `arbitrary_precision`) turns a larger one into a
//!   lossy float.
//! - `NUMBER_TOO_LONG`: a bound on number text (`max_number_length`, here at
//!   its ceiling of 10,000) that serde_json does not have.
//!
//! Value difference, normalised before comparing: `-0` is the integer 0
//! here (an integer literal stays an integer), the float -0.0 in serde_json.
//!
//! serde_json fails on its 128th nested container; `max_depth` is set to 127 so
//! the depth errors agree too.

use decisions::core::errors::Code;
use decisions::core::json::{parse_bytes, Builder, Failure, JsonError, Object};
use decisions::core::limits::Limits;
use serde_json::Value as Serde;

/// A value as the strict parser builds it (numbers keep their kind).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Builds [`Json`] values and checks the parser's own promises on the way:
/// every string it hands out is valid UTF-8 and `ascii` is exact (the parser
/// builds strings with `from_utf8_unchecked`).
pub struct JsonBuilder;

fn checked(value: &str, ascii: bool) -> String {
    assert!(
        std::str::from_utf8(value.as_bytes()).is_ok(),
        "parser produced invalid UTF-8"
    );
    assert_eq!(ascii, value.is_ascii(), "wrong ascii flag for {value:?}");
    value.to_owned()
}

impl Builder for JsonBuilder {
    type Value = Json;
    type Error = ();
    fn null(&mut self) -> Result<Json, ()> {
        Ok(Json::Null)
    }
    fn boolean(&mut self, v: bool) -> Result<Json, ()> {
        Ok(Json::Bool(v))
    }
    fn int(&mut self, v: i64) -> Result<Json, ()> {
        Ok(Json::Int(v))
    }
    fn uint(&mut self, v: u64) -> Result<Json, ()> {
        Ok(Json::Uint(v))
    }
    fn float(&mut self, v: f64) -> Result<Json, ()> {
        Ok(Json::Float(v))
    }
    fn string(&mut self, v: &str, ascii: bool) -> Result<Json, ()> {
        Ok(Json::Str(checked(v, ascii)))
    }
    fn key(&mut self, v: &str, ascii: bool) -> Result<Json, ()> {
        Ok(Json::Str(checked(v, ascii)))
    }
    fn array(&mut self, items: std::vec::Drain<'_, Json>) -> Result<Json, ()> {
        Ok(Json::Array(items.collect()))
    }
    fn object(&mut self, mut members: std::vec::Drain<'_, Json>) -> Result<Object<Json>, ()> {
        let mut object: Vec<(String, Json)> = Vec::with_capacity(members.len() / 2);
        while let Some(key) = members.next() {
            let (Json::Str(key), Some(value)) = (key, members.next()) else {
                return Err(());
            };
            if object.iter().any(|(have, _)| *have == key) {
                return Ok(Object::DuplicateKey(object.len()));
            }
            object.push((key, value));
        }
        Ok(Object::Built(Json::Object(object)))
    }
}

/// The fuzzing limits: everything at its widest except depth (as deep as serde_json).
pub fn limits() -> Limits {
    Limits {
        max_document_bytes: usize::MAX,
        max_depth: 127,
        max_string_bytes: usize::MAX,
        max_array_items: usize::MAX,
        max_object_members: usize::MAX,
        max_values: usize::MAX,
        max_number_length: 10_000,
        ..Limits::default()
    }
}

pub fn parse(data: &[u8], limits: &Limits) -> Result<Json, JsonError> {
    match parse_bytes(data, limits, &mut JsonBuilder) {
        Ok(v) => Ok(v),
        Err(Failure::Parse(e)) => Err(e),
        Err(Failure::Build(())) => {
            panic!("builder refused an object: its members were not key, value pairs")
        }
    }
}

/// Equal values; `-0` (our integer 0) matches serde_json's -0.0.
pub fn same_value(ours: &Json, theirs: &Serde) -> bool {
    match (ours, theirs) {
        (Json::Null, Serde::Null) => true,
        (Json::Bool(a), Serde::Bool(b)) => a == b,
        (Json::Int(a), Serde::Number(n)) => {
            n.as_i64() == Some(*a)
                || (*a == 0 && n.as_f64().is_some_and(|f| f == 0.0 && f.is_sign_negative()))
        }
        (Json::Uint(a), Serde::Number(n)) => n.as_u64() == Some(*a),
        (Json::Float(a), Serde::Number(n)) => {
            n.is_f64() && n.as_f64().map(f64::to_bits) == Some(a.to_bits())
        }
        (Json::Str(a), Serde::String(b)) => a == b,
        (Json::Array(a), Serde::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Json::Object(a), Serde::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => false,
    }
}

/// Byte offset of character `chars` in `data` (counting UTF-8 lead bytes; the
/// parser reports character offsets).
pub fn byte_offset(data: &[u8], chars: usize) -> usize {
    let mut seen = 0;
    for (i, &b) in data.iter().enumerate() {
        if (b & 0xC0) != 0x80 {
            if seen == chars {
                return i;
            }
            seen += 1;
        }
    }
    data.len()
}

/// The byte offset serde_json's (line, column) points at: line 1-based,
/// column the bytes since the start of that line.
fn serde_byte(data: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        data.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(line - 2)
            .map_or(data.len(), |(i, _)| i + 1)
    };
    line_start + column
}

/// How serde_json reports the error we report as `code`: the start of its
/// message, and where it points relative to us. We point at the start of the
/// faulty token, serde_json at the byte where it noticed the fault, so the
/// distance is fixed for most codes and only bounded below for the rest.
/// `None`: no position to compare, because the check is one serde_json does
/// not make, or makes later, by design:
/// - `INVALID_UTF8`, `UTF16_INPUT`, `BOM`, `DOCUMENT_TOO_LARGE`: checked on the
///   whole input before any syntax (serde_json checks UTF-8 only inside strings,
///   as it reaches them), so an earlier syntax error goes unreported here;
/// - `DUPLICATE_KEY`, and `NUMBER_OUT_OF_RANGE` on an integer: serde_json
///   accepts those and reports the next fault it finds, if any;
/// - the size limits (`NUMBER_TOO_LONG`, ...): serde_json has none.
enum Where {
    Exactly(&'static [&'static str], usize),
    After(&'static [&'static str]),
}

fn expected_serde_error(code: Code, number_is_float: bool) -> Option<Where> {
    use Where::*;
    const EXPECTED: &[&str] = &["expected", "trailing characters", "key must be a string"];
    Some(match code {
        Code::EMPTY_INPUT => Exactly(&["EOF while parsing a value"], 0),
        Code::UNEXPECTED_END => Exactly(&["EOF while parsing"], 0),
        Code::DEPTH_EXCEEDED => Exactly(&["recursion limit exceeded"], 1),
        Code::UNEXPECTED_CHARACTER => Exactly(&["expected"], 1),
        Code::TRAILING_CONTENT => Exactly(&["trailing characters"], 1),
        Code::KEY_NOT_STRING => Exactly(&["key must be a string"], 1),
        // Our names for particular unexpected characters.
        Code::COMMENT | Code::SINGLE_QUOTES | Code::MARKDOWN_FENCE => Exactly(EXPECTED, 1),
        // serde_json points past the closing bracket, we at the comma.
        Code::TRAILING_COMMA => After(&["trailing comma"]),
        Code::CONTROL_CHARACTER => Exactly(&["control character"], 1),
        Code::INVALID_ESCAPE => Exactly(&["invalid escape"], 2),
        // serde_json reads the four hex digits before judging them, and
        // reports a missing low surrogate after reading what follows.
        Code::INVALID_UNICODE_ESCAPE => After(&["invalid escape", "EOF while parsing a string"]),
        Code::LONE_SURROGATE => After(&["lone leading surrogate", "unexpected end of hex escape"]),
        Code::INVALID_NUMBER | Code::LEADING_ZERO => After(&["invalid number", "expected value"]),
        Code::NAN_OR_INFINITY => After(&["expected value", "invalid number"]),
        Code::NUMBER_OUT_OF_RANGE if number_is_float => After(&["number out of range"]),
        _ => return None,
    })
}

/// The differential check for one input.
pub fn compare(data: &[u8]) {
    let limits = limits();
    let ours = parse(data, &limits);
    let theirs = serde_json::from_slice::<Serde>(data);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert!(
            same_value(a, b),
            "values differ:\nours:  {a:?}\nserde: {b:?}"
        ),
        (Ok(a), Err(e)) => panic!("we accept what serde_json rejects ({e}): {a:?}"),
        (Err(e), Ok(_)) => assert!(
            matches!(
                e.code,
                Code::DUPLICATE_KEY | Code::NUMBER_OUT_OF_RANGE | Code::NUMBER_TOO_LONG
            ),
            "we reject ({e:?}) what serde_json accepts"
        ),
        (Err(e), Err(se)) => {
            let ours_at = byte_offset(data, e.pos);
            let token = data.get(ours_at..).unwrap_or_default();
            // A number is a float if its integer digits are followed by `.`, `e` or `E`.
            let int_len = token
                .iter()
                .skip(usize::from(token.first() == Some(&b'-')))
                .take_while(|b| b.is_ascii_digit())
                .count();
            let after = token.get(usize::from(token.first() == Some(&b'-')) + int_len);
            let is_float = after.is_some_and(|b| b".eE".contains(b));
            let Some(rule) = expected_serde_error(e.code, is_float) else {
                return;
            };
            let message = se.to_string();
            let theirs_at = serde_byte(data, se.line(), se.column());
            let (prefixes, ok) = match rule {
                Where::Exactly(prefixes, delta) => (prefixes, theirs_at == ours_at + delta),
                Where::After(prefixes) => (prefixes, theirs_at > ours_at),
            };
            assert!(
                prefixes.iter().any(|p| message.starts_with(p)) && ok,
                "errors differ: ours {e:?} (byte {ours_at}), serde_json {message:?} (byte {theirs_at})"
            );
        }
    }
}
