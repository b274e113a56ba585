//! Anthropic Messages. The pure twin (`_pure/providers/anthropic.py`) documents
//! the mapping; this file follows it check for check, in the same order, so
//! both backends give the same events and the same error for the same input.
//!
//! Terminal authority: `message_stop` (finishes with the stop reason the
//! `message_delta` events gave) or `error` (fails). Nothing may follow either.
//!
//! Vetoes (the twin's docstring has the table): only `end_turn`,
//! `stop_sequence` and `tool_use` are done, and a `stop_details` of type
//! `refusal` makes any of them a refusal; a stop reason that disagrees with
//! an earlier one keeps the not-done one (two different done ones are
//! ambiguous: unknown); no content block may start or grow after the
//! `message_delta` that gave the stop reason. Content blocks start in
//! order: one started before the block before it is `MALFORMED_EVENT`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::shape::{is_array, located, model_role, Path, Shape, Str, ROOT};
use super::unknown::MAX_RECORDED_ITEMS;
use super::{jsontext, Mapper};
use crate::core::envelope::Seg;
use crate::core::errors::{Code, CoreError};
use crate::core::events::{Event, FinishReason, ItemKind, Usage};
use crate::core::tree::Tree;

/// Provider error types worth retrying.
pub const RETRYABLE_ERRORS: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
];

/// Blocks of tools Anthropic runs itself and its own markers, with nothing
/// for the host to do; any other unknown block is `UNSUPPORTED_ITEM`.
const INFORMATIONAL_BLOCKS: &[&str] = &[
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "advisor_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "mcp_tool_listing",
    "container_upload",
    "compaction",
    "fallback",
];

/// The normalized finish reason of an Anthropic `stop_reason`.
pub fn finish_reason(raw: Option<&str>) -> FinishReason {
    match raw {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::Refusal,
        _ => FinishReason::Unknown,
    }
}

// ------------------------------------------------------------------ wire shapes
// Every documented object is read as raw JSON first and checked to be an
// object before its typed struct is read: serde's derive would also accept a
// JSON array in its place.

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageRaw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    stop_reason: Option<&'a RawValue>,
    #[serde(borrow)]
    stop_details: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct BlockRaw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    thinking: Option<&'a RawValue>,
    #[serde(borrow)]
    signature: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct DeltaRaw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    partial_json: Option<&'a RawValue>,
    #[serde(borrow)]
    thinking: Option<&'a RawValue>,
    #[serde(borrow)]
    signature: Option<&'a RawValue>,
    #[serde(borrow)]
    citation: Option<&'a RawValue>,
    #[serde(borrow)]
    stop_reason: Option<&'a RawValue>,
    #[serde(borrow)]
    stop_details: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct StopDetailsRaw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
}

/// Whether the `stop_details` at `at` (null, or an object with a `type`) is
/// a refusal's: `{"type": "refusal", "category", "explanation"}`.
fn refusal_details(raw: Option<&RawValue>, what: &str, at: Path<'_>) -> Result<bool, CoreError> {
    let details: Option<StopDetailsRaw<'_>> = SHAPE.opt_obj(raw, what, at)?;
    Ok(match details {
        None => false,
        Some(details) => {
            SHAPE.opt_str(details.ty, what, at.key("type"))?.as_deref() == Some("refusal")
        }
    })
}

#[derive(Deserialize)]
struct ErrorRaw<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageRaw<'a> {
    #[serde(borrow)]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    cache_creation_input_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    cache_read_input_tokens: Option<&'a RawValue>,
}

// The hot path: a `content_block_delta` read in one pass, every field typed.
// It is used only when it reads cleanly and every check passes; anything else
// (a wrong type, a repeated key, an array for an object, a state error) goes
// through the general path, which names the failure exactly as the pure twin
// does.

#[derive(Deserialize)]
struct FastEvent<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<FastDelta<'a>>,
}

/// A delta object; only a JSON object is accepted (derive would also take an array).
#[derive(Default)]
struct FastDelta<'a> {
    ty: Option<Cow<'a, str>>,
    /// The one text field present: its key and value.
    text: Option<(&'static str, Cow<'a, str>)>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FastDelta<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FastDelta<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a delta object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<FastDelta<'a>, M::Error> {
                let mut delta = FastDelta::default();
                let mut seen = [false; 5];
                while let Some(key) = map.next_key::<Str<'de>>()? {
                    let (slot, name): (usize, &'static str) = match key.0.as_ref() {
                        "type" => (0, "type"),
                        "text" => (1, "text"),
                        "partial_json" => (2, "partial_json"),
                        "thinking" => (3, "thinking"),
                        "signature" => (4, "signature"),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    let Some(flag) = seen.get_mut(slot) else {
                        return Err(de::Error::custom("slot"));
                    };
                    if std::mem::replace(flag, true) {
                        return Err(de::Error::custom("repeated key"));
                    }
                    let value: Str<'de> = map.next_value()?;
                    if slot == 0 {
                        delta.ty = Some(value.0);
                    } else if delta.text.is_some() {
                        return Err(de::Error::custom("several text fields"));
                    } else {
                        delta.text = Some((name, value.0));
                    }
                }
                Ok(delta)
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}

const SHAPE: Shape = Shape("anthropic");

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Thinking,
    /// A `redacted_thinking` block: it takes no delta the package maps.
    Redacted,
    Recorded,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Tool => "tool_use",
            Kind::Thinking => "thinking",
            Kind::Redacted => "redacted_thinking",
            Kind::Recorded => "recorded",
        }
    }
}

struct Block {
    kind: Kind,
    item_id: String,
    ended: bool,
    /// A whole `input` object as canonical text, and whether it has members.
    input: Option<String>,
    input_nonempty: bool,
    saw_json: bool,
}

#[derive(Default)]
struct UsageAcc {
    input: Option<u64>,
    output: Option<u64>,
    cache_creation: Option<u64>,
    cache_read: Option<u64>,
    seen: bool,
}

/// Maps Anthropic Messages events and bodies to canonical events.
#[derive(Default)]
pub struct AnthropicMapper {
    unknown: BTreeMap<String, u64>,
    started: bool,
    terminal: bool,
    blocks: BTreeMap<u64, Block>,
    /// Blocks of an unknown type kept in `blocks`.
    recorded: usize,
    stop_reason: Option<String>,
    /// A `message_delta` gave the stop reason: no content may follow.
    stopped: bool,
    /// A `content_block_start` came: only a `message_delta`'s stop reason covers it.
    streamed: bool,
    usage: UsageAcc,
}

impl AnthropicMapper {
    pub fn new() -> AnthropicMapper {
        AnthropicMapper::default()
    }

    fn count(&mut self, key: String) {
        super::unknown::count_unknown(&mut self.unknown, &key);
    }

    fn merge_usage(
        &mut self,
        raw: Option<&RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<(), CoreError> {
        let Some(raw) = raw else { return Ok(()) };
        let usage: UsageRaw<'_> = SHAPE.req_obj(Some(raw), what, at)?;
        let pairs = [
            (
                &mut self.usage.input,
                SHAPE.opt_count(usage.input_tokens, what, at.key("input_tokens"))?,
            ),
            (
                &mut self.usage.output,
                SHAPE.opt_count(usage.output_tokens, what, at.key("output_tokens"))?,
            ),
            (
                &mut self.usage.cache_creation,
                SHAPE.opt_count(
                    usage.cache_creation_input_tokens,
                    what,
                    at.key("cache_creation_input_tokens"),
                )?,
            ),
            (
                &mut self.usage.cache_read,
                SHAPE.opt_count(
                    usage.cache_read_input_tokens,
                    what,
                    at.key("cache_read_input_tokens"),
                )?,
            ),
        ];
        for (slot, value) in pairs {
            if value.is_some() {
                *slot = value;
                self.usage.seen = true;
            }
        }
        Ok(())
    }

    /// A stop reason that disagrees with an earlier one never makes the
    /// message more finished: a not-done one (or the earlier of two) wins;
    /// two different done ones are ambiguous and give `"<first>/<second>"`,
    /// which normalizes to unknown.
    fn set_stop_reason(&mut self, raw: String) {
        let done = |r: &str| {
            matches!(
                finish_reason(Some(r)),
                FinishReason::Stop | FinishReason::ToolCalls
            )
        };
        self.stop_reason = match self.stop_reason.take() {
            None => Some(raw),
            Some(old) if old == raw => Some(old),
            Some(old) if done(&old) => Some(if done(&raw) {
                format!("{old}/{raw}")
            } else {
                raw
            }),
            Some(old) => Some(old),
        };
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.terminal = true;
        let u = &self.usage;
        if u.seen {
            let parts = [u.input, u.cache_read, u.cache_creation];
            let input = if parts.iter().any(Option::is_some) {
                Some(
                    parts
                        .iter()
                        .flatten()
                        .fold(0u64, |acc, v| acc.saturating_add(*v)),
                )
            } else {
                None
            };
            out.push(Event::Usage(Usage {
                input_tokens: input,
                output_tokens: u.output,
                cached_tokens: u.cache_read,
                reasoning_tokens: None,
            }));
        }
        out.push(Event::ResponseFinished {
            finish_reason: finish_reason(self.stop_reason.as_deref()),
            raw_finish_reason: self.stop_reason.clone(),
        });
    }

    fn failed(raw: Option<&RawValue>, what: &str) -> Result<Event, CoreError> {
        let at = ROOT.key("error");
        let error: ErrorRaw<'_> = SHAPE.req_obj(raw, what, at)?;
        let error_type = SHAPE.req_str(error.ty, what, at.key("type"))?.into_owned();
        let message = SHAPE
            .opt_str(error.message, what, at.key("message"))?
            .map(Cow::into_owned)
            .unwrap_or_default();
        Ok(Event::ResponseFailed {
            retryable: RETRYABLE_ERRORS.contains(&error_type.as_str()),
            code: error_type.clone(),
            message,
            error_type: Some(error_type),
        })
    }

    /// The failure, preceded by an (id-less) start when the provider failed
    /// before starting the message.
    fn start_failed(&mut self, failed: Event, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::ResponseStarted {
                response_id: None,
                model: None,
            });
        }
        out.push(failed);
    }

    fn open_block(
        &mut self,
        index: u64,
        raw: Option<&RawValue>,
        what: &str,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let block: BlockRaw<'_> = SHAPE.req_obj(raw, what, at)?;
        if self.blocks.contains_key(&index) {
            return Err(CoreError::new(
                Code::DUPLICATE_ITEM_ID,
                format!("anthropic content block {index} was started twice"),
            ));
        }
        let block_type = SHAPE.req_str(block.ty, what, at.key("type"))?;
        let item_id = format!("block_{index}");
        let mut state = Block {
            kind: Kind::Recorded,
            item_id: item_id.clone(),
            ended: false,
            input: None,
            input_nonempty: false,
            saw_json: false,
        };
        match block_type.as_ref() {
            "text" => {
                let text = SHAPE.opt_str(block.text, what, at.key("text"))?;
                state.kind = Kind::Text;
                out.push(Event::ItemStarted {
                    item_id: item_id.clone(),
                    kind: ItemKind::Text,
                    position: None,
                });
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    out.push(Event::TextDelta {
                        item_id,
                        delta: text.into_owned(),
                    });
                }
            }
            "tool_use" => {
                let call_id = SHAPE.req_str(block.id, what, at.key("id"))?.into_owned();
                if call_id.is_empty() {
                    // an empty id pairs with no tool_result
                    return Err(SHAPE.malformed(what, at.key("id")));
                }
                let name = SHAPE
                    .req_str(block.name, what, at.key("name"))?
                    .into_owned();
                if let Some(input) = block.input {
                    let Ok(jsontext::Node::Object(members)) = jsontext::parse(input.get()) else {
                        return Err(SHAPE.malformed(what, at.key("input")));
                    };
                    state.input_nonempty = !members.is_empty();
                    state.input = Some(jsontext::dumps(&jsontext::Node::Object(members)));
                }
                state.kind = Kind::Tool;
                out.push(Event::ToolCallStarted {
                    item_id,
                    call_id,
                    name,
                    call_id_generated: false,
                    call_kind: crate::core::events::CallKind::Function,
                });
            }
            "thinking" => {
                let thinking = SHAPE.opt_str(block.thinking, what, at.key("thinking"))?;
                let signature = SHAPE.opt_str(block.signature, what, at.key("signature"))?;
                state.kind = Kind::Thinking;
                out.push(Event::ItemStarted {
                    item_id: item_id.clone(),
                    kind: ItemKind::Reasoning,
                    position: None,
                });
                let thinking = thinking.map(Cow::into_owned).unwrap_or_default();
                let signature = signature.map(Cow::into_owned).filter(|s| !s.is_empty());
                if !thinking.is_empty() || signature.is_some() {
                    out.push(Event::ReasoningDelta {
                        item_id,
                        delta: thinking,
                        signature,
                    });
                }
            }
            "redacted_thinking" => {
                let data = SHAPE
                    .req_str(block.data, what, at.key("data"))?
                    .into_owned();
                state.kind = Kind::Redacted;
                out.push(Event::ItemStarted {
                    item_id: item_id.clone(),
                    kind: ItemKind::Reasoning,
                    position: None,
                });
                out.push(Event::ReasoningDelta {
                    item_id,
                    delta: String::new(),
                    signature: Some(data),
                });
            }
            other if !INFORMATIONAL_BLOCKS.contains(&other) => {
                return Err(located(
                    CoreError::new(
                        Code::UNSUPPORTED_ITEM,
                        format!(
                            "content block of type \"{other}\" is not one the package can \
                             represent; it may be a call the host must handle, so nothing in \
                             the response is decided"
                        ),
                    ),
                    at,
                ));
            }
            other => {
                if self.recorded >= MAX_RECORDED_ITEMS {
                    return Err(CoreError::new(
                        Code::TOO_MANY_ITEMS_IN_RESPONSE,
                        format!("the response has more unknown content blocks than {MAX_RECORDED_ITEMS}"),
                    ));
                }
                self.recorded += 1;
                let key = format!("content_block:{other}");
                self.count(key);
            }
        }
        self.blocks.insert(index, state);
        Ok(())
    }

    fn close_block(&mut self, index: u64, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let Some(state) = self.blocks.get_mut(&index) else {
            return Err(CoreError::new(
                Code::UNKNOWN_ITEM,
                format!("anthropic content_block_stop names block {index}, which never started"),
            ));
        };
        if state.ended {
            return Err(CoreError::new(
                Code::DELTA_AFTER_END,
                format!("anthropic content block {index} was stopped twice"),
            ));
        }
        state.ended = true;
        if state.kind == Kind::Recorded {
            return Ok(());
        }
        if state.kind == Kind::Tool && !state.saw_json {
            // no input object and no input_json_delta: no arguments (never `{}`)
            if let Some(text) = state.input.take() {
                out.push(Event::ToolArgumentsDelta {
                    item_id: state.item_id.clone(),
                    delta: text,
                });
            }
        }
        out.push(Event::ItemEnded {
            item_id: state.item_id.clone(),
        });
        Ok(())
    }

    fn message_start(
        &mut self,
        env: &Envelope<'_>,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let at = ROOT.key("message");
        let message: MessageRaw<'_> = SHAPE.req_obj(env.message, what, at)?;
        // the event's own type names the object, so the message's may be absent; present, it must agree
        let ty_at = at.key("type");
        if SHAPE
            .opt_str(message.ty, what, ty_at)?
            .is_some_and(|ty| ty != "message")
        {
            return Err(SHAPE.malformed(what, ty_at));
        }
        let response_id = SHAPE
            .opt_str(message.id, what, at.key("id"))?
            .map(Cow::into_owned);
        let model = SHAPE
            .opt_str(message.model, what, at.key("model"))?
            .map(Cow::into_owned);
        model_role(message.role, "assistant", what, at.key("role"))?;
        if self.started {
            return Err(CoreError::new(
                Code::DUPLICATE_START,
                "anthropic message_start after the message had started",
            ));
        }
        let content_at = at.key("content");
        let content = SHAPE
            .opt_list(message.content, what, content_at)?
            .unwrap_or_default();
        let stop_reason = SHAPE
            .opt_str(message.stop_reason, what, at.key("stop_reason"))?
            .map(Cow::into_owned);
        let refused = refusal_details(message.stop_details, what, at.key("stop_details"))?;
        self.merge_usage(message.usage, what, at.key("usage"))?;
        self.started = true;
        out.push(Event::ResponseStarted { response_id, model });
        for (position, block) in content.into_iter().enumerate() {
            let index = position as u64;
            self.open_block(index, Some(block), what, content_at.index(position), out)?;
            self.close_block(index, out)?;
        }
        if let Some(raw) = stop_reason {
            self.set_stop_reason(raw);
        }
        if refused {
            self.set_stop_reason("refusal".to_owned());
        }
        Ok(())
    }

    /// Apply a cleanly read delta whose every check passes; false sends the
    /// event down the general path instead.
    fn fast_delta(
        &mut self,
        event: Option<&str>,
        fast: FastEvent<'_>,
        out: &mut Vec<Event>,
    ) -> bool {
        if self.terminal
            || self.stopped
            || !self.started
            || !matches!(event, None | Some("message" | "content_block_delta"))
        {
            return false;
        }
        let (
            Some(index),
            Some(FastDelta {
                ty: Some(delta_type),
                text: Some((field, text)),
            }),
        ) = (fast.index, fast.delta)
        else {
            return false;
        };
        let Some(state) = self.blocks.get_mut(&index) else {
            return false;
        };
        if state.ended {
            return false;
        }
        let event = match (delta_type.as_ref(), field, state.kind) {
            ("text_delta", "text", Kind::Text) => Event::TextDelta {
                item_id: state.item_id.clone(),
                delta: text.into_owned(),
            },
            ("input_json_delta", "partial_json", Kind::Tool) if !state.input_nonempty => {
                if text.is_empty() {
                    return true;
                }
                state.saw_json = true;
                Event::ToolArgumentsDelta {
                    item_id: state.item_id.clone(),
                    delta: text.into_owned(),
                }
            }
            ("thinking_delta", "thinking", Kind::Thinking) => Event::ReasoningDelta {
                item_id: state.item_id.clone(),
                delta: text.into_owned(),
                signature: None,
            },
            _ => return false,
        };
        out.push(event);
        true
    }

    fn delta(
        &mut self,
        env: &Envelope<'_>,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let index = SHAPE.req_index(env.index, what, ROOT.key("index"))?;
        let at = ROOT.key("delta");
        let delta: DeltaRaw<'_> = SHAPE.req_obj(env.delta, what, at)?;
        let delta_type = SHAPE.req_str(delta.ty, what, at.key("type"))?;
        let (field, wanted) = match delta_type.as_ref() {
            "text_delta" => (Some((delta.text, "text")), Some(Kind::Text)),
            "input_json_delta" => (Some((delta.partial_json, "partial_json")), Some(Kind::Tool)),
            "thinking_delta" => (Some((delta.thinking, "thinking")), Some(Kind::Thinking)),
            "signature_delta" => (Some((delta.signature, "signature")), Some(Kind::Thinking)),
            "citations_delta" => (None, Some(Kind::Text)),
            _ => (None, None),
        };
        let text = match field {
            Some((raw, key)) => Some(SHAPE.req_str(raw, what, at.key(key))?),
            None => {
                if delta_type == "citations_delta" {
                    let _: serde::de::IgnoredAny =
                        SHAPE.req_obj(delta.citation, what, at.key("citation"))?;
                }
                None
            }
        };
        let Some(state) = self.blocks.get_mut(&index) else {
            return Err(CoreError::new(
                Code::DELTA_BEFORE_START,
                format!("anthropic {delta_type} for content block {index} before its start"),
            ));
        };
        if state.ended {
            return Err(CoreError::new(
                Code::DELTA_AFTER_END,
                format!("anthropic {delta_type} for content block {index} after its stop"),
            ));
        }
        if state.kind == Kind::Recorded && !matches!(wanted, Some(Kind::Text | Kind::Thinking)) {
            // part of a block that runs on the provider's side (counted at its start); a text or
            // thinking delta in it is not, and is refused below
            return Ok(());
        }
        if let Some(wanted) = wanted {
            if state.kind != wanted {
                return Err(located(
                    CoreError::new(
                        Code::MALFORMED_EVENT,
                        format!(
                            "anthropic {delta_type} for content block {index}, which is not a {} block",
                            wanted.name()
                        ),
                    ),
                    ROOT.key("delta").key("type"),
                ));
            }
        }
        if wanted.is_none() && matches!(state.kind, Kind::Text | Kind::Tool) {
            // it may hold what the block says: never dropped
            return Err(located(
                CoreError::new(
                    Code::MALFORMED_EVENT,
                    format!(
                        "anthropic {delta_type} for content block {index}, a {} block, is not a delta type it takes",
                        state.kind.name()
                    ),
                ),
                ROOT.key("delta").key("type"),
            ));
        }
        let item_id = state.item_id.clone();
        let Some(text) = text else {
            let key = format!("content_block_delta:{delta_type}");
            self.count(key);
            return Ok(());
        };
        match delta_type.as_ref() {
            "text_delta" => out.push(Event::TextDelta {
                item_id,
                delta: text.into_owned(),
            }),
            "input_json_delta" => {
                if !text.is_empty() {
                    if state.input_nonempty {
                        return Err(located(
                            CoreError::new(
                                Code::MALFORMED_EVENT,
                                format!("anthropic tool_use block {index} has both an input object and input_json_delta text"),
                            ),
                            ROOT.key("delta").key("partial_json"),
                        ));
                    }
                    state.saw_json = true;
                    out.push(Event::ToolArgumentsDelta {
                        item_id,
                        delta: text.into_owned(),
                    });
                }
            }
            "thinking_delta" => out.push(Event::ReasoningDelta {
                item_id,
                delta: text.into_owned(),
                signature: None,
            }),
            _ => out.push(Event::ReasoningDelta {
                item_id,
                delta: String::new(),
                signature: Some(text.into_owned()),
            }),
        }
        Ok(())
    }
}

/// Where a `tool_use` block's `input` object sits: in `content_block_start`,
/// in `message_start`'s message and in a whole body.
const ARGUMENT_FIELDS: &[&[Seg]] = &[
    &[Seg::Key("content_block"), Seg::Key("input")],
    &[
        Seg::Key("message"),
        Seg::Key("content"),
        Seg::Index,
        Seg::Key("input"),
    ],
    &[Seg::Key("content"), Seg::Index, Seg::Key("input")],
];

impl Mapper for AnthropicMapper {
    fn argument_fields(&self) -> &'static [&'static [Seg]] {
        ARGUMENT_FIELDS
    }

    fn map_event(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if !data.trim_start().starts_with('{') {
            return Err(SHAPE.malformed("event", ROOT));
        }
        if let Ok(fast) = serde_json::from_str::<FastEvent<'_>>(data) {
            if fast.ty == "content_block_delta" && self.fast_delta(event, fast, out) {
                return Ok(());
            }
        }
        let env: Envelope<'_> =
            serde_json::from_str(data).map_err(|_| SHAPE.malformed("event", ROOT))?;
        let event_type = SHAPE.req_str(env.ty, "event", ROOT.key("type"))?;
        if let Some(name) = event {
            if name != "message" && name != event_type {
                return Err(located(
                    CoreError::new(
                        Code::MALFORMED_EVENT,
                        format!("anthropic SSE event {name} carries data of type {event_type}"),
                    ),
                    ROOT.key("type"),
                ));
            }
        }
        if self.terminal {
            return Err(CoreError::new(
                Code::EVENT_AFTER_TERMINAL,
                format!("anthropic {event_type} event after the end of the message"),
            ));
        }
        let what = format!("{event_type} event");
        match event_type.as_ref() {
            "ping" => Ok(()),
            "error" => {
                let failed = Self::failed(env.error, &what)?;
                self.terminal = true;
                self.start_failed(failed, out);
                Ok(())
            }
            "message_start" => self.message_start(&env, &what, out),
            "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop" => {
                if !self.started {
                    return Err(CoreError::new(
                        Code::EVENT_BEFORE_START,
                        format!("anthropic {event_type} event before message_start"),
                    ));
                }
                if self.stopped
                    && matches!(
                        event_type.as_ref(),
                        "content_block_start" | "content_block_delta"
                    )
                {
                    return Err(CoreError::new(
                        Code::EVENT_AFTER_TERMINAL,
                        format!("anthropic {event_type} event after the message_delta that stopped the message"),
                    ));
                }
                match event_type.as_ref() {
                    "content_block_delta" => self.delta(&env, &what, out),
                    "content_block_start" => {
                        let index = SHAPE.req_index(env.index, &what, ROOT.key("index"))?;
                        // blocks are the message's content, in order: one went missing
                        let started = self.blocks.len() as u64;
                        if index > started {
                            let message = format!(
                                "anthropic content block {index} started before block {started}: an event was lost"
                            );
                            let error = CoreError::new(Code::MALFORMED_EVENT, message);
                            return Err(located(error, ROOT.key("index")));
                        }
                        self.streamed = true;
                        self.open_block(
                            index,
                            env.content_block,
                            &what,
                            ROOT.key("content_block"),
                            out,
                        )
                    }
                    "content_block_stop" => {
                        let index = SHAPE.req_index(env.index, &what, ROOT.key("index"))?;
                        self.close_block(index, out)
                    }
                    "message_delta" => {
                        let at = ROOT.key("delta");
                        let delta: DeltaRaw<'_> = SHAPE.req_obj(env.delta, &what, at)?;
                        let stop_reason = SHAPE
                            .opt_str(delta.stop_reason, &what, at.key("stop_reason"))?
                            .map(Cow::into_owned);
                        let refused =
                            refusal_details(delta.stop_details, &what, at.key("stop_details"))?;
                        self.merge_usage(env.usage, &what, ROOT.key("usage"))?;
                        if let Some(raw) = stop_reason {
                            self.set_stop_reason(raw);
                            self.stopped = true;
                        }
                        if refused {
                            self.set_stop_reason("refusal".to_owned());
                            self.stopped = true;
                        }
                        Ok(())
                    }
                    _ => {
                        // a block the provider runs has no item to be left open: its stop is checked here
                        let open = self
                            .blocks
                            .iter()
                            .find(|(_, b)| b.kind == Kind::Recorded && !b.ended);
                        if let Some((index, _)) = open {
                            return Err(CoreError::new(
                                Code::ITEM_NOT_ENDED,
                                format!("anthropic content block {index} was never stopped before message_stop"),
                            ));
                        }
                        let done = matches!(
                            finish_reason(self.stop_reason.as_deref()),
                            FinishReason::Stop | FinishReason::ToolCalls
                        );
                        if self.streamed && !self.stopped && done {
                            // message_start's done stop reason spoke of its own content only, not
                            // of blocks streamed after it, whose stop reason never came
                            self.stop_reason = None;
                        }
                        self.finish(out);
                        Ok(())
                    }
                }
            }
            other => {
                let key = other.to_owned();
                self.count(key);
                Ok(())
            }
        }
    }

    fn end(&mut self, _out: &mut Vec<Event>) -> Result<(), CoreError> {
        Ok(())
    }

    fn map_body(
        &mut self,
        body: &str,
        _tree: Option<&Tree<'_>>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if !body.trim_start().starts_with('{') {
            return Err(SHAPE.malformed("body", ROOT));
        }
        let message: MessageRaw<'_> =
            serde_json::from_str(body).map_err(|_| SHAPE.malformed("body", ROOT))?;
        let body_type = match message.ty {
            Some(raw) => serde_json::from_str::<Str<'_>>(raw.get()).ok().map(|s| s.0),
            None => None,
        };
        match body_type.as_deref() {
            Some("error") => {
                let failed = Self::failed(message.error, "error body")?;
                self.terminal = true;
                self.start_failed(failed, out);
                return Ok(());
            }
            Some("message") => {}
            _ => return Err(SHAPE.malformed("body", ROOT.key("type"))),
        }
        let what = "message body";
        let response_id = SHAPE
            .opt_str(message.id, what, ROOT.key("id"))?
            .map(Cow::into_owned);
        let model = SHAPE
            .opt_str(message.model, what, ROOT.key("model"))?
            .map(Cow::into_owned);
        model_role(message.role, "assistant", what, ROOT.key("role"))?;
        let content_at = ROOT.key("content");
        let content = match message.content {
            Some(raw) if is_array(raw) => SHAPE
                .opt_list(Some(raw), what, content_at)?
                .unwrap_or_default(),
            _ => return Err(SHAPE.malformed(what, content_at)),
        };
        let stop_reason = SHAPE
            .opt_str(message.stop_reason, what, ROOT.key("stop_reason"))?
            .map(Cow::into_owned);
        let refused = refusal_details(message.stop_details, what, ROOT.key("stop_details"))?;
        self.merge_usage(message.usage, what, ROOT.key("usage"))?;
        self.started = true;
        out.push(Event::ResponseStarted { response_id, model });
        for (position, block) in content.into_iter().enumerate() {
            let index = position as u64;
            self.open_block(index, Some(block), what, content_at.index(position), out)?;
            self.close_block(index, out)?;
        }
        self.stop_reason = stop_reason;
        if refused {
            self.set_stop_reason("refusal".to_owned());
        }
        self.finish(out);
        Ok(())
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}
