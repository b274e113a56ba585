//! Provider mappers: one provider's wire events (or whole body) in, canonical
//! events out. Each provider lives in its own module; [`mapper_for`] is the
//! only place that knows the provider ids.
//!
//! The template is [`shape`]: every event has passed the envelope rule
//! ([`crate::core::envelope`]) before a mapper reads it, so a mapper reads
//! raw members (`serde_json::value::RawValue`) and checks each documented
//! field with a `Shape` reader when it reaches it, passing the field's
//! [`shape::Path`]. The pure twin uses the same readers in the same order
//! (`_pure/providers/_shape.py`), so both backends give the same code,
//! message and JSON path (`$.choices[0].delta.content`, the syntax of the
//! envelope rule's errors) for a field of the wrong shape. Typed serde
//! structs check every field at once in serde's order and word their errors
//! their own way, so they cannot be made to agree with the twin field by
//! field; and since the envelope rule already proved the JSON well formed,
//! reading members as they are needed costs no second parse. Every
//! mapper follows the template. Chat also reads its common bodies and
//! chunks from their tree ([`crate::core::tree`], built in the pass that
//! checks the envelope rule, so no text is parsed twice), falling back to the
//! template for anything else. What the two
//! OpenAI mappers share is in `openai_common`, never in one of them.
//! Adding a provider: README, "Adding a provider".

use std::collections::BTreeMap;

pub mod anthropic;
mod blake2b;
pub mod gemini;
pub mod jsontext;
pub mod openai_chat;
mod openai_common;
pub mod openai_responses;
mod shape;
pub mod unknown;

use crate::core::assemble::PlainBody;
use crate::core::envelope::Seg;
use crate::core::errors::CoreError;
use crate::core::events::Event;
use crate::core::tree::Tree;

/// Maps one provider's events to canonical events.
pub trait Mapper: Send + Sync {
    /// One decoded provider event: the SSE `event:` name (None when the
    /// stream gave none, or the caller's SDK already decoded it) and its JSON
    /// `data`. Canonical events are appended to `out`.
    fn map_event(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError>;

    /// The end of the provider stream (EOF). Emits whatever the provider's
    /// stream implies at its end (or nothing); the assembler then decides
    /// whether the response is complete.
    fn end(&mut self, out: &mut Vec<Event>) -> Result<(), CoreError>;

    /// One decoded provider event as [`Mapper::map_event`] takes it, with
    /// the tree of its `data`, for a mapper that [reads trees](Mapper::reads_tree).
    fn map_tree_event(
        &mut self,
        event: Option<&str>,
        data: &str,
        tree: &Tree<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let _ = tree;
        self.map_event(event, data, out)
    }

    /// Whether the mapper reads trees ([`crate::core::tree`]) of event data
    /// ([`Mapper::map_tree_event`]) and bodies ([`Mapper::map_body`]), which
    /// the pipeline then builds in the pass that checks the envelope rule.
    fn reads_tree(&self) -> bool {
        false
    }

    /// A whole non-streaming response body, which has passed the envelope
    /// rule; `tree` is its tree when the mapper reads trees and the body is
    /// small enough to be built as one.
    fn map_body(
        &mut self,
        body: &str,
        tree: Option<&Tree<'_>>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError>;

    /// A body's tree read straight to its parts when it is plain (one
    /// choice or candidate of text and function calls, finished, nothing
    /// else the mapper reads), else None: the pipeline then maps the body to
    /// events with [`Mapper::map_body`]. [`crate::core::assemble::body_response`]
    /// turns the parts into exactly the response those events give.
    fn plain_body(&self, tree: &Tree<'_>) -> Option<PlainBody> {
        let _ = tree;
        None
    }

    /// The fields of this provider's events and bodies that carry a tool
    /// call's arguments as a JSON object (see [`crate::core::envelope`]).
    fn argument_fields(&self) -> &'static [&'static [Seg]] {
        &[]
    }

    /// Whether a stream may be one JSON array instead of SSE (see
    /// [`crate::core::jsonarray`]); the first byte other than whitespace decides.
    fn array_framing(&self) -> bool {
        false
    }

    /// Provider event types seen but not known, with their counts.
    fn unknown_events(&self) -> &BTreeMap<String, u64>;

    /// `max_call_argument_bytes`, for a mapper that assembles a call's
    /// arguments itself before it emits them (Gemini's streamed
    /// `partialArgs`): it refuses them as soon as they pass the bound, not
    /// once the whole value is held.
    fn limit_arguments(&mut self, max_bytes: usize) {
        let _ = max_bytes;
    }

    /// Items the mapper produced after later ones (a Responses reasoning item
    /// only `response.completed` carries), each with its position among the
    /// response's items, since the last call (see [`crate::core::assemble::Assembler::place`]).
    fn take_placements(&mut self) -> Vec<(String, usize)> {
        Vec::new()
    }
}

/// The mapper for a provider id, or None if the id is unknown.
/// `choice` selects one choice of a multi-choice (`n > 1`) Chat response.
pub fn mapper_for(provider: &str, choice: Option<usize>) -> Option<Box<dyn Mapper>> {
    match provider {
        "openai-chat" => Some(Box::new(openai_chat::OpenAIChat::new(choice))),
        "openai-responses" => Some(Box::new(openai_responses::OpenAIResponses::new())),
        "anthropic" => Some(Box::new(anthropic::AnthropicMapper::new())),
        "gemini" => Some(Box::new(gemini::GeminiMapper::new(choice))),
        _ => None,
    }
}

/// The `[DONE]` sentinel OpenAI-style streams send as the last `data`: not
/// JSON; the envelope rule passes it and the mapper reads it.
pub const DONE: &str = "[DONE]";

/// The provider ids [`mapper_for`] knows.
pub const PROVIDERS: &[&str] = &["openai-chat", "openai-responses", "anthropic", "gemini"];
