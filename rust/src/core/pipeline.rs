//! The one stream pipeline: SSE decoder -> envelope rule -> provider mapper
//! -> assembler, and the whole-body path envelope rule -> mapper -> assembler.
//! The bindings (`rust/src/py/assemble.rs`) and every fuzz target drive this;
//! the pure twin is `StreamAssembler` / `normalize` in
//! `python/decisions/_pure/assemble.py`, with the same steps in the same order.

use crate::core::assemble::{body_response, Assembler, Response};
use crate::core::body::{body_error, foreign_body, shapeless_body};
use crate::core::envelope::Envelope;
use crate::core::errors::{Code, CoreError};
use crate::core::events::Event;
use crate::core::json::Buffers;
use crate::core::limits::Limits;
use crate::core::providers::Mapper;
use crate::core::sse::{Decoder, SseEvent, NOT_AN_EVENT_STREAM};
use crate::core::tree::{self, Node, TREE_MAX_BYTES};

/// One provider stream in, one checked [`Response`] out.
pub struct Pipeline {
    limits: Limits,
    mapper: Box<dyn Mapper>,
    envelope: Envelope,
    /// The parser's working memory for event data's trees, kept from one
    /// event to the next.
    tree_buffers: Buffers<Node>,
    decoder: Option<Decoder>,
    assembler: Assembler,
    /// Copies of the canonical events applied, when asked to keep them.
    kept: Option<Vec<Event>>,
    sse: Vec<SseEvent>,
    mapped: Vec<Event>,
}

impl Pipeline {
    /// A pipeline for `mapper`'s provider; `keep_events` keeps a copy of each
    /// canonical event (see [`Pipeline::take_events`]).
    pub fn new(mut mapper: Box<dyn Mapper>, limits: Limits, keep_events: bool) -> Pipeline {
        mapper.limit_arguments(limits.max_call_argument_bytes);
        Pipeline {
            limits,
            mapper,
            envelope: Envelope::default(),
            tree_buffers: Buffers::new(),
            decoder: None,
            assembler: Assembler::new(limits),
            kept: keep_events.then(Vec::new),
            sse: Vec::new(),
            mapped: Vec::new(),
        }
    }

    /// The assembler (its state, the partial items a snapshot shows).
    pub fn assembler(&self) -> &Assembler {
        &self.assembler
    }

    /// Raw SSE bytes of the provider's stream, in any chunking. An error
    /// leaves the assembler failed with it (later calls see it).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), CoreError> {
        self.assembler.check_usable()?;
        let framing = self.mapper.array_framing();
        let decoder = self
            .decoder
            .get_or_insert_with(|| Decoder::framing(self.limits, framing, true));
        let mut sse = std::mem::take(&mut self.sse);
        // The events complete before a framing error are mapped first, in
        // byte order: the error of one of them comes before the framing
        // error, whatever the chunking.
        let mut result = decoder.feed(bytes, &mut sse);
        for event in &sse {
            let mapped = self.map(event.event.as_deref(), &event.data);
            if mapped.is_err() {
                result = mapped;
                break;
            }
        }
        sse.clear();
        self.sse = sse;
        result.map_err(|e| self.assembler.fail(e))
    }

    /// One already-decoded provider event: its `event:` name and `data`.
    pub fn feed_event(&mut self, event: Option<&str>, data: &str) -> Result<(), CoreError> {
        self.assembler.check_usable()?;
        self.map(event, data).map_err(|e| self.assembler.fail(e))
    }

    /// The end of the stream: the response, or the error that makes it
    /// incomplete (the assembler is then failed with it).
    pub fn finish(&mut self) -> Result<&Response, CoreError> {
        self.assembler.check_usable()?;
        if !self.assembler.is_settled() {
            let result = match self.decoder.as_mut() {
                Some(decoder) => decoder.finish(),
                None => Ok(()),
            }
            .and_then(
                |()| match self.decoder.as_ref().and_then(Decoder::document) {
                    Some((document, at)) => Err(not_an_event_stream(
                        &mut *self.mapper,
                        document,
                        at,
                        self.limits,
                    )),
                    None => Ok(()),
                },
            )
            .and_then(|()| self.mapper.end(&mut self.mapped))
            .and_then(|()| self.apply_mapped());
            self.mapped.clear();
            result.map_err(|e| self.assembler.fail(e))?;
        }
        self.assembler.finish(self.mapper.unknown_events())
    }

    /// One event's data known (measured, not read) to be longer than
    /// `max_sse_event_bytes`: the error [`Pipeline::feed_event`] gives it,
    /// the assembler failed with it.
    pub fn event_too_large(&mut self) -> CoreError {
        if let Err(error) = self.assembler.check_usable() {
            return error;
        }
        let error = crate::core::envelope::too_large(&self.limits, self.mapper.argument_fields());
        self.assembler.fail(error)
    }

    /// Fail the stream with `error` (a payload the caller could not turn
    /// into event data); returns the error to raise.
    pub fn fail(&mut self, error: CoreError) -> CoreError {
        self.assembler.fail(error)
    }

    /// Cancel: later calls fail with `STREAM_CANCELLED`.
    pub fn cancel(&mut self) {
        self.assembler.cancel();
    }

    /// The kept canonical events since the last call (None unless kept).
    pub fn take_events(&mut self) -> Option<Vec<Event>> {
        self.kept.as_mut().map(std::mem::take)
    }

    fn map(&mut self, event: Option<&str>, data: &str) -> Result<(), CoreError> {
        // A tree is built in the pass that checks the envelope rule; data that
        // fails it (or is not built as a tree) is checked, which names the failure.
        let tree = if self.mapper.reads_tree() {
            tree::parse_in(data, &self.limits, &mut self.tree_buffers)
        } else {
            None
        };
        let result = match &tree {
            Some(tree) => self
                .mapper
                .map_tree_event(event, data, tree, &mut self.mapped),
            None => self
                .envelope
                .check(data, &self.limits, self.mapper.argument_fields())
                .and_then(|()| self.mapper.map_event(event, data, &mut self.mapped)),
        }
        .and_then(|()| self.apply_mapped());
        self.mapped.clear();
        result
    }

    /// Apply `self.mapped` in order (keeping copies when asked).
    fn apply_mapped(&mut self) -> Result<(), CoreError> {
        for event in self.mapped.drain(..) {
            if let Some(kept) = self.kept.as_mut() {
                kept.push(event.clone());
            }
            self.assembler.apply(event)?;
        }
        for (item_id, position) in self.mapper.take_placements() {
            if let Some(kept) = self.kept.as_mut() {
                // the kept start says where the item goes: forwarded, it goes there too
                let start = kept.iter_mut().rev().find_map(|event| match event {
                    Event::ItemStarted {
                        item_id: id,
                        position: at,
                        ..
                    } if *id == item_id => Some(at),
                    _ => None,
                });
                if let Some(at) = start {
                    *at = Some(position);
                }
            }
            self.assembler.place(item_id, position);
        }
        Ok(())
    }
}

/// The error of a stream that was one JSON `document` (from offset `at`):
/// the `PROVIDER_ERROR` it is as a whole body given to `mapper` (a provider's
/// error object: its code, retryable and message), else `NOT_A_RESPONSE_BODY`.
fn not_an_event_stream(
    mapper: &mut dyn Mapper,
    document: &[u8],
    at: usize,
    limits: Limits,
) -> CoreError {
    let read = std::str::from_utf8(document)
        .map_err(|_| CoreError::new(Code::NOT_A_RESPONSE_BODY, ""))
        .and_then(|body| normalize("", mapper, body, limits, |_| ()));
    match read {
        Err(error) if error.code == Code::PROVIDER_ERROR => error,
        _ => CoreError::at(Code::NOT_A_RESPONSE_BODY, NOT_AN_EVENT_STREAM, at),
    }
}

/// Whether `event` starts an item.
const fn starts_item(event: &Event) -> bool {
    matches!(
        event,
        Event::ItemStarted { .. } | Event::ToolCallStarted { .. }
    )
}

thread_local! {
    /// The envelope checker of whole bodies, its working memory kept from
    /// one body to the next on this thread.
    static BODY_ENVELOPE: std::cell::RefCell<Envelope> = std::cell::RefCell::new(Envelope::default());
}

/// A whole body known (measured, not read) to be longer than
/// `max_sse_event_bytes`: the error [`normalize`] gives it.
pub fn body_too_large(mapper: &dyn Mapper, limits: Limits) -> CoreError {
    let error = crate::core::envelope::too_large(&limits, mapper.argument_fields());
    body_error(None, "", error)
}

/// A whole non-streaming body given to `provider`: envelope rule (with the
/// body's tree when the mapper reads one) -> `mapper.map_body` -> assembler; `read` is given the response. A body read
/// as nothing or not at all that looks like another provider's is
/// `NOT_A_RESPONSE_BODY` (see [`body_error`]).
pub fn normalize<T>(
    provider: &str,
    mapper: &mut dyn Mapper,
    body: &str,
    limits: Limits,
    read: impl FnOnce(&Response) -> T,
) -> Result<T, CoreError> {
    // A tree is built in the pass that checks the envelope rule; a body that
    // fails it (or is not built as a tree) is checked, which names the failure.
    let tree = (mapper.reads_tree() && body.len() <= TREE_MAX_BYTES)
        .then(|| tree::parse(body, &limits))
        .flatten();
    if tree.is_none() {
        let fields = mapper.argument_fields();
        BODY_ENVELOPE
            .with(|envelope| match envelope.try_borrow_mut() {
                Ok(mut envelope) => envelope.check(body, &limits, fields),
                Err(_) => Envelope::default().check(body, &limits, fields),
            })
            .map_err(|e| body_error(None, body, e))?;
    }
    if let Some(response) = tree
        .as_ref()
        .and_then(|tree| mapper.plain_body(tree))
        .and_then(|plain| body_response(&limits, plain, mapper.unknown_events()))
    {
        return Ok(read(&response));
    }
    let mut assembler = Assembler::new(limits);
    let mut events = Vec::new();
    mapper
        .map_body(body, tree.as_ref(), &mut events)
        .and_then(|()| {
            let starts = events.iter().filter(|e| starts_item(e)).count();
            assembler.reserve(starts.min(limits.max_items_per_response));
            events.into_iter().try_for_each(|e| assembler.apply(e))
        })
        .and_then(|()| assembler.finish(mapper.unknown_events()))
        .and_then(|response| {
            // read as nothing: whose body is it?
            let foreign = response
                .items
                .is_empty()
                .then(|| foreign_body(provider, body).or_else(|| shapeless_body(provider, body)));
            match foreign.flatten() {
                Some(error) => Err(error),
                None => Ok(read(response)),
            }
        })
        .map_err(|e| body_error(Some(provider), body, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::providers::mapper_for;

    /// The first error of `stream` fed in pieces of `piece` bytes: its code and path.
    fn first_error(stream: &[u8], piece: usize, limits: Limits) -> Option<(Code, Option<String>)> {
        let mapper = mapper_for("openai-chat", None)?;
        let mut pipeline = Pipeline::new(mapper, limits, false);
        let fed = stream
            .chunks(piece)
            .map(|chunk| pipeline.feed(chunk))
            .find_map(Result::err);
        let error = match fed {
            Some(error) => error,
            None => pipeline.finish().err()?,
        };
        Some((error.code, error.path))
    }

    #[test]
    fn an_event_before_a_framing_error_is_mapped_first_in_any_chunking() {
        // a chunk with a user-role chunk (MALFORMED_EVENT), then a framing
        // error: the event comes first in the stream, so its error is the one
        let event: &[u8] =
            b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"role\": \"user\"}}]}\n\n";
        let faults: [(&[u8], Limits); 3] = [
            (b"data: \xFF\n\n", Limits::default()),
            (
                b"data: {}\n\n",
                Limits {
                    max_stream_bytes: event.len() + 3,
                    ..Limits::default()
                },
            ),
            (
                b"data: {}\n\n",
                Limits {
                    max_stream_events: 1,
                    ..Limits::default()
                },
            ),
        ];
        let expected = Some((
            Code::MALFORMED_EVENT,
            Some("$.choices[0].delta.role".to_string()),
        ));
        for (fault, limits) in faults {
            let stream = [event, fault].concat();
            for piece in [stream.len(), 1, event.len() + 1] {
                assert_eq!(first_error(&stream, piece, limits), expected, "{piece}");
            }
        }
    }
}
