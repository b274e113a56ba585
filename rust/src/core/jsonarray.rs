//! Incremental splitter of a streamed JSON array (the pure twin is
//! `python/decisions/_pure/jsonarray.py`, which documents the rules).
//!
//! Gemini's `streamGenerateContent` without `alt=sse` sends one JSON array,
//! `[{...},\r\n{...}\r\n]`, a chunk at a time. [`ArraySplitter`] is fed its
//! bytes (from the `[` on) in any chunking and gives each element's text as
//! soon as the element closes, as an event's `data`: the envelope rule and
//! the mapper then read it exactly as an SSE event's. Brackets are counted
//! outside strings, escapes skipped; validity is the envelope rule's job.
//! Linear cost, one element of memory, bounded as one SSE event is.

use crate::core::errors::{Code, CoreError};
use crate::core::limits::Limits;

/// JSON whitespace (RFC 8259), the bytes allowed between elements.
pub fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    First,
    Value,
    After,
    Next,
    Done,
}

/// Splits a streamed JSON array into its elements' texts.
#[derive(Debug)]
pub struct ArraySplitter {
    limits: Limits,
    pos: usize,
    state: State,
    depth: usize,
    in_string: bool,
    escape: bool,
    element: Vec<u8>,
    start: usize,
    events: usize,
    blank: usize,
    blank_start: usize,
}

impl ArraySplitter {
    /// A splitter whose first byte (the `[`) is at stream offset `offset`.
    pub fn new(limits: Limits, offset: usize) -> ArraySplitter {
        ArraySplitter {
            limits,
            pos: offset,
            state: State::Open,
            depth: 0,
            in_string: false,
            escape: false,
            element: Vec::new(),
            start: 0,
            events: 0,
            blank: 0,
            blank_start: offset,
        }
    }

    /// Consume `data`; the elements it completes are appended to `out`.
    pub fn feed(&mut self, data: &[u8], out: &mut Vec<String>) -> Result<(), CoreError> {
        let mut i = 0;
        while let Some(&byte) = data.get(i) {
            if self.state == State::Value {
                i = self.value(data, i, out)?;
                continue;
            }
            let pos = self.pos + i;
            if is_whitespace(byte) {
                if self.blank == 0 {
                    self.blank_start = pos;
                }
                self.blank += 1;
                if self.blank > self.limits.max_bytes_without_data {
                    return Err(CoreError::at(
                        Code::SSE_NO_DATA,
                        format!(
                            "more than max_bytes_without_data ({}) arrived without a data event",
                            self.limits.max_bytes_without_data
                        ),
                        self.blank_start,
                    ));
                }
                i += 1;
                continue;
            }
            self.blank = 0;
            match (self.state, byte) {
                (State::Open, b'[') => self.state = State::First,
                (State::First | State::Next, b'{' | b'[') => {
                    self.state = State::Value;
                    self.start = pos;
                    self.depth = 0;
                    continue; // the value scan reads the opening bracket
                }
                (State::First | State::After, b']') => self.state = State::Done,
                (State::After, b',') => self.state = State::Next,
                _ => {
                    return Err(CoreError::at(
                        Code::MALFORMED_EVENT,
                        "the JSON-array stream has an unexpected character",
                        pos,
                    ))
                }
            }
            i += 1;
        }
        self.pos += data.len();
        Ok(())
    }

    /// Scan the element from `data[i]`; the index after what was read.
    fn value(
        &mut self,
        data: &[u8],
        mut i: usize,
        out: &mut Vec<String>,
    ) -> Result<usize, CoreError> {
        let begin = i;
        let rest = |i: usize| data.get(i..).unwrap_or_default();
        while i < data.len() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                let Some(found) = memchr::memchr2(b'"', b'\\', rest(i)) else {
                    i = data.len();
                    break;
                };
                i += found;
                if data.get(i) == Some(&b'\\') {
                    self.escape = true;
                } else {
                    self.in_string = false;
                }
                i += 1;
                continue;
            }
            let Some(found) = rest(i)
                .iter()
                .position(|b| matches!(b, b'"' | b'{' | b'[' | b'}' | b']'))
            else {
                i = data.len();
                break;
            };
            i += found;
            let byte = data.get(i).copied().unwrap_or_default();
            i += 1;
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                _ => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.take(data.get(begin..i).unwrap_or_default())?;
                        out.push(self.emit()?);
                        return Ok(i);
                    }
                }
            }
        }
        self.take(data.get(begin..i).unwrap_or_default())?;
        Ok(i)
    }

    fn take(&mut self, bytes: &[u8]) -> Result<(), CoreError> {
        let max = self.limits.max_sse_event_bytes;
        if self.element.len().saturating_add(bytes.len()) > max {
            return Err(CoreError::at(
                Code::SSE_EVENT_TOO_LARGE,
                format!("an element of the JSON-array stream exceeds max_sse_event_bytes ({max})"),
                self.start,
            ));
        }
        self.element.extend_from_slice(bytes);
        Ok(())
    }

    fn emit(&mut self) -> Result<String, CoreError> {
        if self.events >= self.limits.max_stream_events {
            return Err(CoreError::at(
                Code::SSE_TOO_MANY_EVENTS,
                format!(
                    "the stream has more events than max_stream_events ({})",
                    self.limits.max_stream_events
                ),
                self.start,
            ));
        }
        self.events += 1;
        let text = String::from_utf8(std::mem::take(&mut self.element)).map_err(|e| {
            CoreError::at(
                Code::SSE_INVALID_UTF8,
                "the event stream is not valid UTF-8",
                self.start + e.utf8_error().valid_up_to(),
            )
        })?;
        self.state = State::After;
        Ok(text)
    }

    /// The end of the stream: an array not closed by `]` was cut.
    pub fn finish(&self) -> Result<(), CoreError> {
        if self.state == State::Done {
            return Ok(());
        }
        Err(CoreError::at(
            Code::NO_TERMINAL_EVENT,
            "the JSON-array stream ended before its closing ]",
            self.pos,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Result<Vec<String>, CoreError> {
        let mut splitter = ArraySplitter::new(Limits::default(), 0);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.feed(chunk, &mut out)?;
        }
        splitter.finish()?;
        Ok(out)
    }

    #[test]
    fn any_split_gives_the_same_elements() {
        let whole: &[u8] = b"[{\"a\":\"]}\\\"{\"},\r\n{\"b\":[1,{}]}\r\n]";
        let expected = split(&[whole]).unwrap_or_default();
        assert_eq!(expected, vec![r#"{"a":"]}\"{"}"#, r#"{"b":[1,{}]}"#]);
        for at in 0..whole.len() {
            let (a, b) = whole.split_at(at);
            assert_eq!(split(&[a, b]).unwrap_or_default(), expected, "{at}");
        }
    }

    #[test]
    fn cut_and_junk() {
        let code = |chunks: &[&[u8]]| split(chunks).err().map(|e| (e.code, e.offset));
        assert_eq!(code(&[b"[{}"]), Some((Code::NO_TERMINAL_EVENT, Some(3))));
        assert_eq!(code(&[b"[{} {}]"]), Some((Code::MALFORMED_EVENT, Some(4))));
        assert_eq!(code(&[b"[{}] x"]), Some((Code::MALFORMED_EVENT, Some(5))));
    }
}
