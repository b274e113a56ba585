//! The envelope rule: what every provider event's data and every whole body
//! must be before a mapper reads it. The pure twin is
//! `python/decisions/_pure/envelope.py`; both give the same code, message,
//! offset and path for the same text.
//!
//! Event data is checked with the strict parser of [`crate::core::json`]
//! under [`envelope_limits`]: RFC 8259, no repeated key in any object (read by
//! a mapper or not), no number beyond 64 bits or longer than
//! `max_number_length`, at most [`ENVELOPE_MAX_DEPTH`] levels. A mapper
//! therefore never builds, walks, copies or drops a tree deeper than that.
//!
//! A broken rule is reported by where it is. Inside a field that carries a
//! tool call's arguments as a JSON object (each mapper lists its own, see
//! [`Seg`]), the model wrote it: a parse-layer error with the strict parser's
//! own code (`DUPLICATE_KEY`, `DEPTH_EXCEEDED`, ...), the JSON path of the
//! place in the event and its character offset, exactly as the same rule
//! broken in arguments sent as text. Anywhere else the provider sent it:
//! `MALFORMED_EVENT`, naming the rule and the path. Bad syntax is
//! `MALFORMED_EVENT` "event data is not valid JSON" wherever it is, and a
//! lone surrogate escape "event data has a lone surrogate escape", checked
//! over the whole text first.

use crate::core::errors::{Code, CoreError};
use crate::core::json::{self, Buffers, Builder, Failure, Object};
use crate::core::limits::Limits;
use crate::core::providers::DONE;

/// The deepest nesting accepted in event data or a body. Tool arguments
/// sent as an object inside it are bounded by it too (send deeper arguments
/// as text); `serde_json`, which the mappers use, stops at 128.
pub const ENVELOPE_MAX_DEPTH: usize = 100;

/// One step of an argument field's path: an object key, or any array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg {
    Key(&'static str),
    Index,
}

/// Numbers in event data may be this long whatever `max_number_length` says
/// (a provider's counts and ids must pass a small limit meant for arguments).
pub const ENVELOPE_MIN_NUMBER_LENGTH: usize = 100;

/// The limits event data is parsed under: its size, strings, items, members
/// and values are bounded by one SSE event (the arguments' own bounds are
/// applied when `decide` parses them), nesting by [`ENVELOPE_MAX_DEPTH`],
/// numbers by the larger of `max_number_length` and
/// [`ENVELOPE_MIN_NUMBER_LENGTH`] characters.
pub fn envelope_limits(limits: &Limits) -> Limits {
    let size = limits.max_sse_event_bytes;
    Limits {
        max_document_bytes: size,
        max_string_bytes: size,
        max_array_items: size,
        max_object_members: size,
        max_values: size,
        max_depth: ENVELOPE_MAX_DEPTH,
        max_number_length: limits.max_number_length.max(ENVELOPE_MIN_NUMBER_LENGTH),
        ..*limits
    }
}

/// The bytes of keys' buffer an [`Envelope`] keeps from one check to the next.
const KEYS_KEPT: usize = 64 * 1024;

/// Checks event data against the envelope rule, keeping its working memory
/// from one event to the next (a stream checks every event).
#[derive(Default)]
pub struct Envelope {
    checker: Checker,
    buffers: Buffers<Token>,
}

impl Envelope {
    /// Check `data` (one event's data, or a whole body); `fields` are the
    /// mapper's object-form argument fields.
    pub fn check(
        &mut self,
        data: &str,
        limits: &Limits,
        fields: &[&[Seg]],
    ) -> Result<(), CoreError> {
        if data == DONE {
            return Ok(());
        }
        self.checker.keys.clear();
        let result = json::parse_str_in(
            data,
            &envelope_limits(limits),
            &mut self.checker,
            &mut self.buffers,
        );
        // the keys' buffer is kept for the next event, up to a small reserve
        if self.checker.keys.capacity() > KEYS_KEPT {
            self.checker.keys = String::new();
        }
        // A lone surrogate escape is the first thing a failed check names;
        // text that parses has none (the parser refuses one in any string,
        // and there is no backslash outside strings), so only a failure
        // scans for one.
        if result.is_err() && has_lone_surrogate(data) {
            return Err(CoreError::new(
                Code::MALFORMED_EVENT,
                "event data has a lone surrogate escape",
            ));
        }
        match result {
            Ok(_) => Ok(()),
            Err(Failure::Build(never)) => match never {},
            Err(Failure::Parse(e)) => Err(classify(data, e.code, e.pos, limits, fields)),
        }
    }
}

/// [`Envelope::check`] with fresh working memory (one body, a test).
pub fn check(data: &str, limits: &Limits, fields: &[&[Seg]]) -> Result<(), CoreError> {
    Envelope::default().check(data, limits, fields)
}

/// The error of event data (or a body) longer than `max_sse_event_bytes`,
/// known to be so without reading it (a binding measured a str's UTF-8
/// length from its characters): what [`Envelope::check`] gives such text.
pub fn too_large(limits: &Limits, fields: &[&[Seg]]) -> CoreError {
    classify("", Code::DOCUMENT_TOO_LARGE, 0, limits, fields)
}

/// The error for rule `code` broken at character `pos` of `data`.
pub fn classify(
    data: &str,
    code: Code,
    pos: usize,
    limits: &Limits,
    fields: &[&[Seg]],
) -> CoreError {
    let Some(what) = rule(code, &envelope_limits(limits)) else {
        return CoreError::new(Code::MALFORMED_EVENT, "event data is not valid JSON");
    };
    let (path, inside) = path_at(data, pos, code == Code::DUPLICATE_KEY, fields);
    let mut error = if inside {
        CoreError::at(
            code,
            format!("tool arguments sent as a JSON object have {what}"),
            pos,
        )
    } else {
        CoreError::new(Code::MALFORMED_EVENT, format!("event data has {what}"))
    };
    error.path = Some(path);
    error
}

/// What a broken limit or I-JSON rule says, or None for a syntax error.
fn rule(code: Code, limits: &Limits) -> Option<String> {
    Some(match code {
        Code::DUPLICATE_KEY => "a repeated key".to_owned(),
        Code::DEPTH_EXCEEDED => format!("nesting deeper than {ENVELOPE_MAX_DEPTH} levels"),
        Code::NUMBER_TOO_LONG => format!(
            "a number longer than {} characters",
            limits.max_number_length
        ),
        Code::NUMBER_OUT_OF_RANGE => "a number beyond 64 bits or a float that overflows".to_owned(),
        Code::STRING_TOO_LONG | Code::DOCUMENT_TOO_LARGE => {
            format!("more than {} bytes", limits.max_document_bytes)
        }
        Code::TOO_MANY_ITEMS => format!("an array of more than {} items", limits.max_array_items),
        Code::TOO_MANY_MEMBERS => format!(
            "an object of more than {} members",
            limits.max_object_members
        ),
        Code::TOO_MANY_VALUES => format!("more than {} values", limits.max_values),
        _ => return None,
    })
}

/// The JSON path (`$.a[0].b`) of the place at character `pos` of `data`
/// (valid JSON up to `pos`), and whether it lies inside one of `fields`.
/// With `key_at_pos`, `pos` is the opening quote of an object key, which is
/// the path's last step.
fn path_at(data: &str, pos: usize, key_at_pos: bool, fields: &[&[Seg]]) -> (String, bool) {
    enum Step {
        Key(Option<String>),
        Index(usize),
    }
    let bytes = data.as_bytes();
    let end = byte_offset(data, pos);
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes.get(i) {
            Some(b'{') => steps.push(Step::Key(None)),
            Some(b'[') => steps.push(Step::Index(0)),
            Some(b'}' | b']') => {
                steps.pop();
            }
            Some(b',') => match steps.last_mut() {
                Some(Step::Index(n)) => *n += 1,
                Some(Step::Key(key)) => *key = None,
                None => {}
            },
            Some(b'"') => {
                let close = string_end(bytes, i);
                if let Some(Step::Key(key @ None)) = steps.last_mut() {
                    *key = Some(unquote(data.get(i..close).unwrap_or_default()));
                }
                i = close;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if key_at_pos {
        let key = unquote(data.get(end..string_end(bytes, end)).unwrap_or_default());
        match steps.last_mut() {
            Some(Step::Key(open @ None)) => *open = Some(key),
            _ => steps.push(Step::Key(Some(key))),
        }
    }
    // An object whose next key is not read yet is the place itself.
    while matches!(steps.last(), Some(Step::Key(None))) {
        steps.pop();
    }
    let inside = fields.iter().any(|field| {
        field.len() <= steps.len()
            && field
                .iter()
                .zip(&steps)
                .all(|(seg, step)| match (seg, step) {
                    (Seg::Index, Step::Index(_)) => true,
                    (Seg::Key(want), Step::Key(Some(key))) => want == key,
                    _ => false,
                })
    });
    let mut path = String::from("$");
    for step in &steps {
        match step {
            Step::Index(n) => path.push_str(&format!("[{n}]")),
            Step::Key(Some(key)) if is_identifier(key) => {
                path.push('.');
                path.push_str(key);
            }
            Step::Key(Some(key)) => {
                path.push('[');
                path.push_str(&quote(key));
                path.push(']');
            }
            Step::Key(None) => {}
        }
    }
    (path, inside)
}

/// The byte offset of character `pos`.
fn byte_offset(data: &str, pos: usize) -> usize {
    data.char_indices()
        .nth(pos)
        .map_or(data.len(), |(at, _)| at)
}

/// The byte just past the string whose opening quote is at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A JSON string token's value (the token is valid: the parser read it).
fn unquote(token: &str) -> String {
    serde_json::from_str(token).unwrap_or_default()
}

/// A key as the path shows it in brackets: JSON-quoted, non-ASCII kept
/// (Python's `json.dumps(key, ensure_ascii=False)`).
fn quote(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 2);
    out.push('"');
    for c in key.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `[A-Za-z_][A-Za-z0-9_]*`: shown as `.key` in a path.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn hex_escape(bytes: &[u8], at: usize) -> Option<u32> {
    if bytes.get(at) != Some(&b'u') {
        return None;
    }
    let digits = bytes.get(at + 1..at + 5)?;
    let mut value = 0;
    for &d in digits {
        value = value * 16 + char::from(d).to_digit(16)?;
    }
    Some(value)
}

/// Whether a `\uD800`-`\uDFFF` escape not part of a high + low pair is in
/// the text. Escapes are scanned from the left (`\\ud800` is an escaped
/// backslash and letters).
fn has_lone_surrogate(data: &str) -> bool {
    let bytes = data.as_bytes();
    let mut from = 0;
    while let Some(found) = bytes
        .get(from..)
        .and_then(|rest| memchr::memchr(b'\\', rest))
    {
        let at = from + found;
        from = match hex_escape(bytes, at + 1) {
            Some(0xD800..=0xDBFF)
                if bytes.get(at + 6) == Some(&b'\\')
                    && matches!(hex_escape(bytes, at + 7), Some(0xDC00..=0xDFFF)) =>
            {
                at + 12
            }
            Some(0xD800..=0xDFFF) => return true,
            _ => at + 2,
        };
    }
    false
}

/// What the checker's parse makes of a value: a key (its place in `keys`)
/// or anything else. Nothing is built.
#[derive(Clone, Copy)]
enum Token {
    Other,
    Key(usize, usize),
}

/// A [`Builder`] that builds nothing and finds repeated keys; the keys of
/// the open objects are kept in one buffer.
#[derive(Default)]
struct Checker {
    keys: String,
}

impl Checker {
    fn key_text(&self, token: Token) -> &str {
        match token {
            Token::Key(start, end) => self.keys.get(start..end).unwrap_or_default(),
            Token::Other => "",
        }
    }
}

impl Builder for Checker {
    type Value = Token;
    type Error = std::convert::Infallible;
    fn null(&mut self) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn boolean(&mut self, _: bool) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn int(&mut self, _: i64) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn uint(&mut self, _: u64) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn float(&mut self, _: f64) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn string(&mut self, _: &str, _: bool) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn key(&mut self, value: &str, _: bool) -> Result<Token, Self::Error> {
        let start = self.keys.len();
        self.keys.push_str(value);
        Ok(Token::Key(start, self.keys.len()))
    }
    fn array(&mut self, _: std::vec::Drain<'_, Token>) -> Result<Token, Self::Error> {
        Ok(Token::Other)
    }
    fn object(
        &mut self,
        members: std::vec::Drain<'_, Token>,
    ) -> Result<Object<Token>, Self::Error> {
        let keys = members.as_slice();
        let count = keys.len() / 2;
        let key = |i: usize| self.key_text(keys.get(2 * i).copied().unwrap_or(Token::Other));
        let repeated = if count <= 16 {
            (1..count).find(|&i| (0..i).any(|j| key(j) == key(i)))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(count);
            (0..count).position(|i| !seen.insert(key(i)))
        };
        // The object's keys are the last ones written: drop them.
        let first = keys.first().copied();
        drop(members);
        if let Some(Token::Key(start, _)) = first {
            self.keys.truncate(start);
        }
        Ok(match repeated {
            Some(i) => Object::DuplicateKey(i),
            None => Object::Built(Token::Other),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGS: &[&[Seg]] = &[&[Seg::Key("content"), Seg::Index, Seg::Key("input")]];

    fn err(data: &str) -> CoreError {
        check(data, &Limits::DEFAULT, ARGS)
            .err()
            .unwrap_or_else(|| panic!("accepted {data}"))
    }

    #[test]
    fn repeated_keys_are_placed() {
        let e = err(r#"{"a":1,"b":{"c":1,"c":2}}"#);
        assert_eq!(
            (e.code, e.path.as_deref()),
            (Code::MALFORMED_EVENT, Some("$.b.c"))
        );
        let e = err(r#"{"content":[{"input":{}},{"input":{"x":[{"p":1,"p":2}]}}]}"#);
        assert_eq!(
            (e.code, e.path.as_deref(), e.offset),
            (
                Code::DUPLICATE_KEY,
                Some("$.content[1].input.x[0].p"),
                Some(47)
            )
        );
        let e = err(r#"{"content":[{"input":{"p":1,"p":2}}]}"#);
        assert_eq!(
            (e.code, e.path.as_deref()),
            (Code::DUPLICATE_KEY, Some("$.content[0].input.p"))
        );
        let e = err(r#"{"content":[{"input":{},"input":{}}]}"#);
        assert_eq!(
            (e.code, e.path.as_deref()),
            (Code::DUPLICATE_KEY, Some("$.content[0].input"))
        );
        let e = err(r#"{"content":[{"input":{"a b":1,"a b":2}}]}"#);
        assert_eq!(e.path.as_deref(), Some(r#"$.content[0].input["a b"]"#));
        let e = err(r#"{"content":[{"type":"text","type":"tool_use"}]}"#);
        assert_eq!(
            (e.code, e.path.as_deref()),
            (Code::MALFORMED_EVENT, Some("$.content[0].type"))
        );
    }

    #[test]
    fn depth_is_bounded_and_placed() {
        let deep = format!(
            r#"{{"content":[{{"input":{{"a":{}1{}}}}}]}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let e = err(&deep);
        assert_eq!(e.code, Code::DEPTH_EXCEEDED);
        assert!(e
            .path
            .as_deref()
            .is_some_and(|p| p.starts_with("$.content[0].input.a[0][0]")));
        let deep = format!(
            r#"{{"other":{}1{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(err(&deep).code, Code::MALFORMED_EVENT);
    }

    #[test]
    fn syntax_and_surrogates() {
        assert_eq!(err("{").message, "event data is not valid JSON");
        assert_eq!(
            err(r#"{"a":"\ud800"}"#).message,
            "event data has a lone surrogate escape"
        );
        assert!(check(
            r#"{"a":"\ud83d\ude00","b":[1,{"c":null}]}"#,
            &Limits::DEFAULT,
            ARGS
        )
        .is_ok());
    }

    #[test]
    fn lone_surrogate_escapes_are_refused_anywhere() {
        for ok in [
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":"\\ud800"}"#,
            r#"{"a":"\u0041\\"}"#,
            "[DONE]",
        ] {
            assert!(check(ok, &Limits::DEFAULT, ARGS).is_ok(), "{ok}");
        }
        for bad in [
            r#"{"x":"\ud800"}"#,
            r#"{"x":"\uDC00"}"#,
            r#"{"x":"\\\ud800"}"#,
            r#"{"\ud83d\u0041":1}"#,
            r#"["\ud83d\ud83d\ude00"]"#,
        ] {
            let err = check(bad, &Limits::DEFAULT, ARGS).err().map(|e| e.message);
            assert_eq!(
                err.as_deref(),
                Some("event data has a lone surrogate escape"),
                "{bad}"
            );
        }
    }

    #[test]
    fn wide_objects_use_the_set() {
        let mut members: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        assert!(check(
            &format!("{{{}}}", members.join(",")),
            &Limits::DEFAULT,
            ARGS
        )
        .is_ok());
        members.push("\"k7\":0".to_owned());
        let e = err(&format!("{{{}}}", members.join(",")));
        assert_eq!(e.path.as_deref(), Some("$.k7"));
    }
}
