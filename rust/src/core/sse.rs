//! Incremental Server-Sent-Events framing (WHATWG `text/event-stream`).
//!
//! Bytes arrive in arbitrary chunks. CR, LF and CRLF end lines (a CR ending
//! one chunk and its LF starting the next count once); one leading BOM is
//! stripped; `:` starts a comment; `data` lines are joined with `\n`; one space
//! after the colon is removed; unknown fields are ignored; an event without
//! data is never dispatched. Each line is validated as UTF-8 once complete
//! (line ends are ASCII, so a character split across chunks decodes exactly);
//! invalid UTF-8 is an error, never U+FFFD.
//!
//! Error offsets are byte offsets into the stream (BOM included): the bad byte
//! for `SSE_INVALID_UTF8`, the first byte past the limit for
//! `SSE_STREAM_TOO_LARGE`, otherwise the first byte of the line that crossed.

use crate::core::errors::{Code, CoreError};
use crate::core::jsonarray::{is_whitespace, ArraySplitter};
use crate::core::limits::Limits;
use std::sync::Arc;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event. `event` is None when the stream gave no (or an
/// empty) `event:` field; `id` and `retry` are the last valid values seen.
/// The id is shared by every event it applies to: one `id:` line of a
/// megabyte followed by many small events is never copied per event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
    pub id: Option<Arc<str>>,
    pub retry: Option<u64>,
}

/// The decoder. Memory is bounded by `max_sse_line_bytes` (one pending line)
/// plus `max_sse_event_bytes` (one pending event's data).
#[derive(Debug)]
pub struct Decoder {
    limits: Limits,
    line: Vec<u8>,
    line_start: usize,
    pos: usize,
    skip_lf: bool,
    bom_done: bool,
    bom_held: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    last_id: Option<Arc<str>>,
    retry: Option<u64>,
    events: usize,
    without_data: usize,
    /// Start of the last line if it was counted toward `without_data`: the
    /// LF of its CRLF, arriving in the next chunk, is counted with it.
    counted_at: Option<usize>,
    failed: Option<Code>,
    /// `finish` returned: the stream has ended, and no more bytes may come.
    finished: bool,
    /// The first byte other than whitespace is still to choose the framing
    /// (see [`Decoder::framing`]).
    detect: bool,
    /// Whether a stream starting with `[` is one JSON array.
    arrays: bool,
    array: Option<ArraySplitter>,
    /// A stream that is one JSON document: its bytes, held whole.
    document: Option<Vec<u8>>,
    /// The offset of the document's first byte.
    document_at: usize,
}

/// What a stream that is one JSON document is (`NOT_A_RESPONSE_BODY`).
pub const NOT_AN_EVENT_STREAM: &str = "the stream is a JSON document, not an event stream (a whole response body is read with normalize)";

impl Decoder {
    pub fn new(limits: Limits) -> Decoder {
        Decoder::framing(limits, false, false)
    }

    /// A decoder that, with `array`, also takes a stream that is one JSON
    /// array (Gemini without `alt=sse`): its elements are dispatched as
    /// events without a name. With `documents`, a stream whose first byte
    /// other than whitespace is `{` (or `[` without `array`) is one JSON
    /// document, no event stream: held whole (see [`Decoder::document`]).
    pub fn framing(limits: Limits, array: bool, documents: bool) -> Decoder {
        Decoder {
            limits,
            line: Vec::new(),
            line_start: 0,
            pos: 0,
            skip_lf: false,
            bom_done: false,
            bom_held: Vec::new(),
            data: String::new(),
            has_data: false,
            event: None,
            last_id: None,
            retry: None,
            events: 0,
            without_data: 0,
            counted_at: None,
            failed: None,
            finished: false,
            detect: array || documents,
            arrays: array,
            array: None,
            document: None,
            document_at: 0,
        }
    }

    fn fail(&mut self, code: Code, message: String, offset: usize) -> CoreError {
        self.failed = Some(code);
        CoreError::at(code, message, offset)
    }

    /// Err(`STREAM_FAILED`) once the decoder has failed.
    pub fn check(&self) -> Result<(), CoreError> {
        match self.failed {
            Some(code) => Err(CoreError::new(
                Code::STREAM_FAILED,
                format!("the event stream already failed ({})", code.as_str()),
            )),
            None => Ok(()),
        }
    }

    fn line_too_long(&mut self) -> CoreError {
        let msg = format!(
            "an event-stream line exceeds max_sse_line_bytes ({})",
            self.limits.max_sse_line_bytes
        );
        self.fail(Code::SSE_LINE_TOO_LONG, msg, self.line_start)
    }

    /// Consume a chunk; dispatched events are appended to `out`. On an
    /// error, `out` holds the events the chunk completed before the byte at
    /// fault, in order (as fed byte by byte): a caller maps them before it
    /// reports the error, so the first error does not depend on the chunking.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), CoreError> {
        self.check()?;
        let limit = self.limits.max_stream_bytes;
        let room = limit.saturating_sub(self.pos.saturating_add(self.bom_held.len()));
        if chunk.len() > room {
            // the bytes within the bound are read first: what they complete
            // (or the error they hold) comes before the byte past it
            self.feed_within(chunk.get(..room).unwrap_or_default(), out)?;
            let msg = format!("the stream is longer than max_stream_bytes ({limit})");
            return Err(self.fail(Code::SSE_STREAM_TOO_LARGE, msg, limit));
        }
        self.feed_within(chunk, out)
    }

    /// [`Decoder::feed`] of a chunk within `max_stream_bytes`.
    fn feed_within(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), CoreError> {
        if self.finished && !chunk.is_empty() {
            let msg = "bytes fed after finish(): the stream had ended".to_string();
            return Err(self.fail(Code::EVENT_AFTER_TERMINAL, msg, self.pos));
        }
        let held;
        let mut data: &[u8] = chunk;
        if !self.bom_done {
            let mut joined = std::mem::take(&mut self.bom_held);
            joined.extend_from_slice(chunk);
            if joined.len() < 3 && BOM.starts_with(&joined) {
                self.bom_held = joined;
                return Ok(());
            }
            self.bom_done = true;
            held = joined;
            data = &held;
            if let Some(rest) = data.strip_prefix(BOM) {
                data = rest;
                self.pos = 3;
                self.line_start = 3;
            }
        }
        if self.detect || self.array.is_some() || self.document.is_some() {
            return self.split(data, out);
        }
        self.lines(data, out)
    }

    /// The framing is chosen by the first byte other than whitespace.
    fn split(&mut self, mut data: &[u8], out: &mut Vec<SseEvent>) -> Result<(), CoreError> {
        if self.document.is_some() {
            return self.hold(data);
        }
        if self.array.is_none() {
            let Some(start) = data.iter().position(|&b| !is_whitespace(b)) else {
                return self.lines(data, out);
            };
            self.detect = false;
            let first = data.get(start).copied();
            if first != Some(b'[') && first != Some(b'{') {
                return self.lines(data, out);
            }
            let (blank, rest) = data.split_at(start);
            self.lines(blank, out)?; // whitespace: counted, never an event
            self.line.clear();
            self.skip_lf = false;
            if first == Some(b'{') || !self.arrays {
                self.document = Some(Vec::new());
                self.document_at = self.pos;
                return self.hold(rest);
            }
            data = rest;
        }
        let pos = self.pos;
        let limits = self.limits;
        let splitter = self
            .array
            .get_or_insert_with(|| ArraySplitter::new(limits, pos));
        let mut elements = Vec::new();
        let result = splitter.feed(data, &mut elements);
        self.pos += data.len();
        out.extend(elements.into_iter().map(|data| SseEvent {
            event: None,
            data,
            id: None,
            retry: None,
        }));
        result.inspect_err(|e| {
            self.failed = Some(e.code);
        })
    }

    /// More of the JSON document, held whole up to `max_sse_event_bytes` (a
    /// whole body's bound): past it `NOT_A_RESPONSE_BODY` at once.
    fn hold(&mut self, data: &[u8]) -> Result<(), CoreError> {
        let limit = self.limits.max_sse_event_bytes;
        let held = self.document.as_ref().map_or(0, Vec::len);
        if held.saturating_add(data.len()) > limit {
            let msg = format!("{NOT_AN_EVENT_STREAM}, longer than max_sse_event_bytes ({limit})");
            return Err(self.fail(Code::NOT_A_RESPONSE_BODY, msg, self.document_at));
        }
        if let Some(document) = self.document.as_mut() {
            document.extend_from_slice(data);
        }
        self.pos += data.len();
        Ok(())
    }

    /// A stream that is one JSON document (see [`Decoder::framing`]): its
    /// bytes and the offset of its first one; None for an event stream.
    pub fn document(&self) -> Option<(&[u8], usize)> {
        self.document.as_deref().map(|d| (d, self.document_at))
    }

    fn lines(&mut self, mut data: &[u8], out: &mut Vec<SseEvent>) -> Result<(), CoreError> {
        if data.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = data.strip_prefix(b"\n") {
                data = rest;
                self.pos += 1;
                self.line_start = self.pos;
                if let Some(start) = self.counted_at {
                    self.no_data(1, start)?;
                }
            }
        }
        while !data.is_empty() {
            let Some(end) = memchr::memchr2(b'\r', b'\n', data) else {
                if self.line.len().saturating_add(data.len()) > self.limits.max_sse_line_bytes {
                    return Err(self.line_too_long());
                }
                self.line.extend_from_slice(data);
                self.pos += data.len();
                return Ok(());
            };
            let (body, rest) = data.split_at(end);
            let is_cr = rest.first() == Some(&b'\r');
            let mut term = 1;
            if is_cr && rest.get(1) == Some(&b'\n') {
                term = 2;
            }
            let length = self.pos - self.line_start + end + term;
            if self.line.is_empty() {
                if body.len() > self.limits.max_sse_line_bytes {
                    return Err(self.line_too_long());
                }
                self.line_end(body, length, out)?;
            } else {
                if self.line.len().saturating_add(body.len()) > self.limits.max_sse_line_bytes {
                    return Err(self.line_too_long());
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(body);
                let result = self.line_end(&line, length, out);
                line.clear();
                self.line = line;
                result?;
            }
            self.pos += end + term;
            self.line_start = self.pos;
            data = rest.get(term..).unwrap_or_default();
            if is_cr && term == 1 && data.is_empty() {
                self.skip_lf = true;
            }
        }
        Ok(())
    }

    /// One complete line, without its line end; `length` counts the line end.
    fn line_end(
        &mut self,
        raw: &[u8],
        length: usize,
        out: &mut Vec<SseEvent>,
    ) -> Result<(), CoreError> {
        let start = self.line_start;
        let line = match std::str::from_utf8(raw) {
            Ok(line) => line,
            Err(e) => {
                let msg = "the event stream is not valid UTF-8".to_string();
                return Err(self.fail(Code::SSE_INVALID_UTF8, msg, start + e.valid_up_to()));
            }
        };
        if line.is_empty() {
            return self.dispatch(out, start, length);
        }
        if line.starts_with(':') {
            return self.no_data(length, start);
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match name {
            "data" => {
                let total = self.data.len() + value.len() + usize::from(self.has_data);
                if total > self.limits.max_sse_event_bytes {
                    let msg = format!(
                        "an event's data exceeds max_sse_event_bytes ({})",
                        self.limits.max_sse_event_bytes
                    );
                    return Err(self.fail(Code::SSE_EVENT_TOO_LARGE, msg, start));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.without_data = 0;
                self.counted_at = None;
                return Ok(());
            }
            "event" => self.event = Some(value.to_string()),
            "id" if !value.contains('\0') => self.last_id = Some(Arc::from(value)),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(retry) = value.parse::<u64>() {
                    self.retry = Some(retry);
                }
            }
            _ => {}
        }
        self.no_data(length, start)
    }

    fn no_data(&mut self, length: usize, start: usize) -> Result<(), CoreError> {
        self.counted_at = Some(start);
        self.without_data = self.without_data.saturating_add(length);
        if self.without_data > self.limits.max_bytes_without_data {
            let msg = format!(
                "more than max_bytes_without_data ({}) arrived without a data event",
                self.limits.max_bytes_without_data
            );
            return Err(self.fail(Code::SSE_NO_DATA, msg, start));
        }
        Ok(())
    }

    fn dispatch(
        &mut self,
        out: &mut Vec<SseEvent>,
        start: usize,
        length: usize,
    ) -> Result<(), CoreError> {
        if !self.has_data {
            self.event = None;
            return self.no_data(length, start);
        }
        if self.events >= self.limits.max_stream_events {
            let msg = format!(
                "the stream has more events than max_stream_events ({})",
                self.limits.max_stream_events
            );
            return Err(self.fail(Code::SSE_TOO_MANY_EVENTS, msg, start));
        }
        self.events += 1;
        self.counted_at = None;
        let event = self.event.take().filter(|e| !e.is_empty());
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry: self.retry,
        });
        self.has_data = false;
        Ok(())
    }

    /// End of stream: an unfinished line or event is `SSE_UNTERMINATED_EVENT`;
    /// bytes fed after it are `EVENT_AFTER_TERMINAL`.
    pub fn finish(&mut self) -> Result<(), CoreError> {
        self.check()?;
        self.finished = true;
        if let Some(splitter) = &self.array {
            return splitter.finish().inspect_err(|e| {
                self.failed = Some(e.code);
            });
        }
        if !self.line.is_empty() || !self.bom_held.is_empty() || self.has_data {
            let msg = "the stream ended in the middle of an event".to_string();
            return Err(self.fail(Code::SSE_UNTERMINATED_EVENT, msg, self.line_start));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, CoreError> {
        let mut d = Decoder::new(Limits::default());
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, &mut out)?;
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn crlf_split_across_chunks_counts_once() {
        let whole = decode(&[b"data: a\r\n\r\ndata: b\r\n\r\n"]).unwrap_or_default();
        let split = decode(&[b"data: a\r", b"\n\r", b"\ndata: b\r", b"\n\r\n"]).unwrap_or_default();
        assert_eq!(whole.len(), 2);
        assert_eq!(whole, split);
    }

    #[test]
    fn bom_utf8_and_fields() {
        let bytes: &[u8] =
            b"\xEF\xBB\xBF: c\nevent: e\nid: 1\nretry: 5\ndata: \xC3\xA9\ndata:x\n\n";
        let mut one_by_one: Vec<&[u8]> = Vec::new();
        for i in 0..bytes.len() {
            one_by_one.push(bytes.get(i..i + 1).unwrap_or_default());
        }
        let events = decode(&one_by_one).unwrap_or_default();
        assert_eq!(events, decode(&[bytes]).unwrap_or_default());
        assert_eq!(
            events,
            vec![SseEvent {
                event: Some("e".into()),
                data: "é\nx".into(),
                id: Some("1".into()),
                retry: Some(5)
            }]
        );
    }

    #[test]
    fn invalid_utf8_and_unterminated() {
        let err = decode(&[b"data: \xFF\n\n"])
            .err()
            .map(|e| (e.code, e.offset));
        assert_eq!(err, Some((Code::SSE_INVALID_UTF8, Some(6))));
        let err = decode(&[b"data: x\n"]).err().map(|e| e.code);
        assert_eq!(err, Some(Code::SSE_UNTERMINATED_EVENT));
    }

    #[test]
    fn a_json_document_is_held_whole_in_any_chunking() {
        let text: &[u8] = b"\r\n  {\"error\": {\"message\": \"x\"}}\n";
        for piece in 1..=text.len() {
            let mut d = Decoder::framing(Limits::default(), false, true);
            let mut out = Vec::new();
            for chunk in text.chunks(piece) {
                assert!(d.feed(chunk, &mut out).is_ok());
            }
            assert!(d.finish().is_ok());
            assert!(out.is_empty());
            assert_eq!(d.document(), Some((&text[4..], 4)));
        }
        // `[` is a document unless arrays are read; the plain decoder reads lines
        let mut d = Decoder::framing(Limits::default(), false, true);
        assert!(d.feed(b"[1]", &mut Vec::new()).is_ok());
        assert_eq!(d.document(), Some((&b"[1]"[..], 0)));
        let mut d = Decoder::new(Limits::default());
        assert!(d.feed(b"{\"a\": 1}\ndata: x\n\n", &mut Vec::new()).is_ok());
        assert_eq!(d.document(), None);
    }

    #[test]
    fn the_events_before_a_framing_error_come_with_it() {
        // as fed byte by byte: the event completed before the byte at fault is
        // dispatched, whatever the error and the chunking
        let event: &[u8] = b"data: a\n\n";
        let cases: [(&[u8], Limits, Code); 4] = [
            (b"data: \xFF\n\n", Limits::default(), Code::SSE_INVALID_UTF8),
            (
                b"data: 123456789\n",
                Limits {
                    max_sse_line_bytes: 12,
                    ..Limits::default()
                },
                Code::SSE_LINE_TOO_LONG,
            ),
            (
                b"data: b\n\n",
                Limits {
                    max_stream_events: 1,
                    ..Limits::default()
                },
                Code::SSE_TOO_MANY_EVENTS,
            ),
            (
                b"data: b\n\n",
                Limits {
                    max_stream_bytes: event.len() + 2,
                    ..Limits::default()
                },
                Code::SSE_STREAM_TOO_LARGE,
            ),
        ];
        for (fault, limits, code) in cases {
            let stream = [event, fault].concat();
            let mut outcomes = Vec::new();
            for piece in [stream.len(), 1, event.len(), event.len() + 1] {
                let mut d = Decoder::new(limits);
                let mut out = Vec::new();
                let error = stream
                    .chunks(piece)
                    .map(|chunk| d.feed(chunk, &mut out))
                    .find_map(Result::err)
                    .map(|e| (e.code, e.offset));
                let data: Vec<String> = out.into_iter().map(|e| e.data).collect();
                outcomes.push((data, error));
            }
            let first = outcomes.first().cloned();
            assert_eq!(
                first
                    .as_ref()
                    .map(|(data, error)| (data.clone(), error.map(|e| e.0))),
                Some((vec!["a".to_string()], Some(code)))
            );
            for outcome in outcomes {
                assert_eq!(Some(outcome), first);
            }
        }
    }

    #[test]
    fn a_json_document_past_the_event_bound_is_refused_at_once() {
        let limits = Limits {
            max_sse_event_bytes: 8,
            ..Limits::default()
        };
        let mut d = Decoder::framing(limits, true, true);
        assert!(d.feed(b" {\"a\":", &mut Vec::new()).is_ok());
        let err = d.feed(b" 12345}", &mut Vec::new()).err();
        assert_eq!(
            err.map(|e| (e.code, e.offset)),
            Some((Code::NOT_A_RESPONSE_BODY, Some(1)))
        );
    }
}
