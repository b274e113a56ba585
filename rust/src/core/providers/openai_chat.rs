//! OpenAI Chat Completions (also the wire format of OpenAI-compatible
//! servers: vLLM, llama.cpp, Ollama, Groq, DeepSeek, Mistral, xAI, Cerebras).
//! Mirrors `decisions/_pure/providers/openai_chat.py`, whose docstring states
//! the rules: terminal authority (the selected choice's `finish_reason`;
//! `[DONE]` alone finishes nothing), generated item and call ids, index reuse,
//! finish-reason normalization.
//!
//! Each chunk is parsed once with serde into borrowed, typed structs (unknown
//! fields ignored); a known field of the wrong type is `MALFORMED_EVENT`.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::shape::{count, Str};
use super::DONE;
use crate::core::errors::{Code, CoreError};
use crate::core::events::{Event, FinishReason, ItemKind, Usage};
use crate::core::providers::Mapper;

/// The data of the SSE event that ends a Chat Completions stream.

// ------------------------------------------------------------ shared shapes

/// A JSON object deserialized as `T`. Serde would also build a struct from a
/// JSON array of its fields; the pure twin (and the API) allow only objects.
pub(crate) struct Obj<T>(pub T);

impl<T> std::ops::Deref for Obj<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData)).map(Obj)
    }
}

/// An optional string as `&str` (`None` when absent or null).
pub(crate) fn s<'x>(v: &'x Option<Str<'_>>) -> Option<&'x str> {
    v.as_ref().map(Str::as_str)
}

/// The error for a known event whose shape does not fit.
pub(crate) fn malformed(what: &str, detail: impl fmt::Display) -> CoreError {
    CoreError::new(Code::MALFORMED_EVENT, format!("{what}: {detail}"))
}

/// Parse `data` as `T`, requiring a JSON object at the top.
pub(crate) fn parse<'a, T: Deserialize<'a>>(data: &'a str, what: &str) -> Result<T, CoreError> {
    let trimmed = data.trim_start_matches([' ', '\t', '\n', '\r']);
    if !trimmed.starts_with('{') {
        return Err(malformed(what, "the event must be a JSON object"));
    }
    serde_json::from_str(data).map_err(|e| malformed(what, e))
}

/// An OpenAI-style error object: `{"code", "message", "type"}`.
#[derive(Deserialize)]
pub(crate) struct ErrObj<'a> {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(borrow, default)]
    message: Option<Str<'a>>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<Str<'a>>,
}

/// Provider error types / codes that say asking again may succeed.
const RETRYABLE_ERRORS: &[&str] = &[
    "server_error",
    "rate_limit_exceeded",
    "rate_limit_error",
    "overloaded_error",
    "service_unavailable",
];

impl ErrObj<'_> {
    /// The `ResponseFailed` event this error object stands for.
    pub fn failure(&self, what: &str) -> Result<Event, CoreError> {
        let code = match &self.code {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(c)) => Some(c.clone()),
            Some(serde_json::Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            Some(_) => {
                return Err(malformed(
                    what,
                    "error.code must be a string or a 64-bit integer",
                ))
            }
        };
        let error_type = s(&self.kind).map(str::to_owned);
        let code = code
            .or_else(|| error_type.clone())
            .unwrap_or_else(|| "error".to_owned());
        let retryable = RETRYABLE_ERRORS.contains(&code.as_str())
            || error_type
                .as_deref()
                .is_some_and(|t| RETRYABLE_ERRORS.contains(&t));
        Ok(Event::ResponseFailed {
            code,
            message: s(&self.message).unwrap_or("").to_owned(),
            retryable,
            error_type,
        })
    }
}

// ------------------------------------------------------------ chat shapes

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(borrow, default)]
    choices: Option<Vec<Obj<Choice<'a>>>>,
    #[serde(default)]
    usage: Option<Obj<ChatUsage>>,
    #[serde(borrow, default)]
    error: Option<Obj<ErrObj<'a>>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, deserialize_with = "count")]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<Obj<Delta<'a>>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
}

/// A whole `chat.completion` body.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(borrow, default)]
    choices: Option<Vec<Obj<BodyChoice<'a>>>>,
    #[serde(default)]
    usage: Option<Obj<ChatUsage>>,
    #[serde(borrow, default)]
    error: Option<Obj<ErrObj<'a>>>,
}

#[derive(Deserialize)]
struct BodyChoice<'a> {
    #[serde(default, deserialize_with = "count")]
    index: Option<u64>,
    #[serde(borrow, default)]
    message: Option<Obj<Delta<'a>>>,
    #[serde(borrow, default)]
    finish_reason: Option<Str<'a>>,
}

/// A chunk's `delta`, or a body's `message`.
#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Str<'a>>,
    #[serde(borrow, default)]
    reasoning: Option<Str<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Obj<ToolCallDelta<'a>>>>,
    #[serde(borrow, default)]
    function_call: Option<Obj<FnDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default, deserialize_with = "count")]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    function: Option<Obj<FnDelta<'a>>>,
}

#[derive(Deserialize)]
struct FnDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
}

/// `content`: a string, or (Mistral) an array of `text` / `thinking` parts.
enum Content<'a> {
    Text(Str<'a>),
    Parts(Vec<Obj<ContentPart<'a>>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(Cow::Borrowed(v))))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Str(Cow::Owned(v))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<Obj<ContentPart<'de>>>()? {
                    parts.push(part);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct ContentPart<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Vec<Obj<Thinking<'a>>>>,
}

#[derive(Deserialize)]
struct Thinking<'a> {
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default, deserialize_with = "count")]
    prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Obj<PromptDetails>>,
    #[serde(default)]
    completion_tokens_details: Option<Obj<CompletionDetails>>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default, deserialize_with = "count")]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "count")]
    reasoning_tokens: Option<u64>,
}

impl ChatUsage {
    fn event(&self) -> Event {
        Event::Usage(Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
        })
    }
}

/// One piece of content of a delta, in the order it is applied.
enum Piece<'x> {
    Text(&'x str),
    Reasoning(&'x str),
}

impl<'a> Delta<'a> {
    /// Reasoning, then content pieces, shape-checked (the mapper applies them after).
    fn pieces(&self, what: &str) -> Result<(Option<&str>, Vec<Piece<'_>>), CoreError> {
        let mut pieces = Vec::new();
        match &self.content {
            None => {}
            Some(Content::Text(t)) => pieces.push(Piece::Text(t.as_str())),
            Some(Content::Parts(parts)) => {
                for part in parts {
                    match part.kind.as_str() {
                        "text" => match &part.text {
                            Some(t) => pieces.push(Piece::Text(t.as_str())),
                            None => return Err(malformed(what, "text must be a string")),
                        },
                        "thinking" => {
                            for sub in part.thinking.iter().flatten() {
                                pieces.push(Piece::Reasoning(s(&sub.text).unwrap_or("")));
                            }
                        }
                        other => {
                            return Err(malformed(
                                what,
                                format!("content part type {other:?} is not known"),
                            ))
                        }
                    }
                }
            }
        }
        let rc = s(&self.reasoning_content).filter(|r| !r.is_empty());
        let r = s(&self.reasoning).filter(|r| !r.is_empty());
        if let (Some(a), Some(b)) = (rc, r) {
            if a != b {
                return Err(malformed(what, "reasoning and reasoning_content disagree"));
            }
        }
        Ok((rc.or(r), pieces))
    }

    fn has_content(&self, reasoning: Option<&str>, pieces: &[Piece<'_>]) -> bool {
        reasoning.is_some_and(|r| !r.is_empty())
            || pieces.iter().any(|p| match p {
                Piece::Text(t) | Piece::Reasoning(t) => !t.is_empty(),
            })
            || s(&self.refusal).is_some_and(|r| !r.is_empty())
            || self.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
            || self.function_call.is_some()
    }
}

/// Two entries for one choice index are ambiguous: `MULTIPLE_CHOICES`.
fn no_repeated_choice(indexes: impl Iterator<Item = u64>, place: &str) -> Result<(), CoreError> {
    let mut seen = std::collections::HashSet::new();
    for index in indexes {
        if !seen.insert(index) {
            return Err(CoreError::new(
                Code::MULTIPLE_CHOICES,
                format!("the {place} has choice {index} more than once"),
            ));
        }
    }
    Ok(())
}

// ------------------------------------------------------------ the mapper

struct Call {
    item_id: String,
    call_id: String,
    name: String,
}

/// Chat Completions chunks / bodies -> canonical events.
pub struct OpenAIChat {
    unknown: BTreeMap<String, u64>,
    choice: u64,
    choice_given: bool,
    started: bool,
    response_id: Option<String>,
    open: Vec<String>,
    text: Option<String>,
    refusal: Option<String>,
    reasoning: Option<String>,
    calls: HashMap<u64, Call>,
    legacy: Option<Call>,
    ncalls: usize,
    finished: bool,
    done: bool,
}

const CHUNK: &str = "chat.completion.chunk";
const BODY: &str = "chat.completion";

impl OpenAIChat {
    pub fn new(choice: Option<usize>) -> OpenAIChat {
        OpenAIChat {
            unknown: BTreeMap::new(),
            choice: choice.map_or(0, |c| c as u64),
            choice_given: choice.is_some(),
            started: false,
            response_id: None,
            open: Vec::new(),
            text: None,
            refusal: None,
            reasoning: None,
            calls: HashMap::new(),
            legacy: None,
            ncalls: 0,
            finished: false,
            done: false,
        }
    }

    fn start(&mut self, rid: Option<&str>, model: Option<&str>, out: &mut Vec<Event>) {
        self.started = true;
        self.response_id = rid.map(str::to_owned);
        out.push(Event::ResponseStarted {
            response_id: self.response_id.clone(),
            model: model.map(str::to_owned),
        });
    }

    fn open_item(&mut self, slot: u8, out: &mut Vec<Event>) -> String {
        let (field, kind, name) = match slot {
            0 => (&mut self.reasoning, ItemKind::Reasoning, "reasoning"),
            1 => (&mut self.text, ItemKind::Text, "content"),
            _ => (&mut self.refusal, ItemKind::Refusal, "refusal"),
        };
        if let Some(id) = field {
            return id.clone();
        }
        let id = format!("choice{}.{name}", self.choice);
        *field = Some(id.clone());
        self.open.push(id.clone());
        out.push(Event::ItemStarted {
            item_id: id.clone(),
            kind,
        });
        id
    }

    fn apply(
        &mut self,
        delta: &Delta<'_>,
        with_calls: bool,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let (reasoning, pieces) = delta.pieces(CHUNK)?;
        if let Some(r) = reasoning {
            let id = self.open_item(0, out);
            out.push(Event::ReasoningDelta {
                item_id: id,
                delta: r.to_owned(),
                signature: None,
            });
        }
        for piece in &pieces {
            match piece {
                Piece::Reasoning(t) if !t.is_empty() => {
                    let id = self.open_item(0, out);
                    out.push(Event::ReasoningDelta {
                        item_id: id,
                        delta: (*t).to_owned(),
                        signature: None,
                    });
                }
                Piece::Text(t) if !t.is_empty() => {
                    let id = self.open_item(1, out);
                    out.push(Event::TextDelta {
                        item_id: id,
                        delta: (*t).to_owned(),
                    });
                }
                _ => {}
            }
        }
        if let Some(r) = s(&delta.refusal).filter(|r| !r.is_empty()) {
            let id = self.open_item(2, out);
            out.push(Event::RefusalDelta {
                item_id: id,
                delta: r.to_owned(),
            });
        }
        if with_calls {
            for (position, call) in delta.tool_calls.iter().flatten().enumerate() {
                let index = call.index.unwrap_or(position as u64);
                let (name, arguments) = match &call.function {
                    Some(f) => (s(&f.name), s(&f.arguments)),
                    None => (None, None),
                };
                self.tool_delta(index, s(&call.id), name, arguments, out)?;
            }
        }
        if let Some(f) = &delta.function_call {
            self.legacy_delta(s(&f.name), s(&f.arguments), out)?;
        }
        Ok(())
    }

    fn new_call(
        &mut self,
        call_id: Option<&str>,
        name: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<Call, CoreError> {
        let name = match name {
            Some(n) if !n.is_empty() => n,
            _ => {
                return Err(malformed(
                    CHUNK,
                    "a tool call starts without a function name",
                ))
            }
        };
        let k = self.ncalls;
        self.ncalls += 1;
        let item_id = format!("choice{}.tool_calls[{k}]", self.choice);
        let (call_id, generated) = match call_id {
            Some(c) if !c.is_empty() => (c.to_owned(), false),
            _ => match &self.response_id {
                Some(rid) => (format!("{rid}.call_{k}"), true),
                None => (format!("call_{k}"), true),
            },
        };
        self.open.push(item_id.clone());
        out.push(Event::ToolCallStarted {
            item_id: item_id.clone(),
            call_id: call_id.clone(),
            name: name.to_owned(),
            call_id_generated: generated,
            call_kind: crate::core::events::CallKind::Function,
        });
        Ok(Call {
            item_id,
            call_id,
            name: name.to_owned(),
        })
    }

    fn tool_delta(
        &mut self,
        index: u64,
        call_id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let reuse = match self.calls.get(&index) {
            None => true,
            Some(call) => call_id.is_some_and(|c| !c.is_empty() && c != call.call_id),
        };
        if reuse {
            // a new index, or the index reused by another call: a new call
            if let Some(old) = self.calls.remove(&index) {
                self.close(&old.item_id, out);
            }
            let call = self.new_call(call_id, name, out)?;
            self.calls.insert(index, call);
        } else if let Some(call) = self.calls.get(&index) {
            if let Some(n) = name.filter(|n| !n.is_empty() && *n != call.name) {
                return Err(CoreError::new(
                    Code::CALL_NAME_CHANGED,
                    format!(
                        "tool call {} was named {:?}, then {n:?}",
                        call.call_id, call.name
                    ),
                ));
            }
        }
        if let (Some(a), Some(call)) = (arguments.filter(|a| !a.is_empty()), self.calls.get(&index))
        {
            out.push(Event::ToolArgumentsDelta {
                item_id: call.item_id.clone(),
                delta: a.to_owned(),
            });
        }
        Ok(())
    }

    fn legacy_delta(
        &mut self,
        name: Option<&str>,
        arguments: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if self.legacy.is_none() {
            let call = self.new_call(None, name, out)?;
            self.legacy = Some(call);
        } else if let Some(call) = &self.legacy {
            if let Some(n) = name.filter(|n| !n.is_empty() && *n != call.name) {
                return Err(CoreError::new(
                    Code::CALL_NAME_CHANGED,
                    format!(
                        "function call {} was named {:?}, then {n:?}",
                        call.call_id, call.name
                    ),
                ));
            }
        }
        if let (Some(a), Some(call)) = (arguments.filter(|a| !a.is_empty()), &self.legacy) {
            out.push(Event::ToolArgumentsDelta {
                item_id: call.item_id.clone(),
                delta: a.to_owned(),
            });
        }
        Ok(())
    }

    fn close(&mut self, item_id: &str, out: &mut Vec<Event>) {
        self.open.retain(|id| id != item_id);
        out.push(Event::ItemEnded {
            item_id: item_id.to_owned(),
        });
    }

    fn finish_with(&mut self, raw: &str, out: &mut Vec<Event>) {
        let mut reason = match raw {
            "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Unknown,
        };
        if reason == FinishReason::Stop && self.refusal.is_some() {
            reason = FinishReason::Refusal;
        }
        if matches!(
            reason,
            FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Refusal
        ) {
            for item_id in self.open.drain(..) {
                out.push(Event::ItemEnded { item_id });
            }
        }
        self.finished = true;
        out.push(Event::ResponseFinished {
            finish_reason: reason,
            raw_finish_reason: Some(raw.to_owned()),
        });
    }

    fn chunk(&mut self, chunk: &Chunk<'_>, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let failure = match &chunk.error {
            Some(e) => Some(e.failure(CHUNK)?),
            None => None,
        };
        // shape-check every choice before acting on any
        let mut checked = Vec::new();
        for choice in chunk.choices.iter().flatten() {
            let index = choice.index.unwrap_or(0);
            let parts = match &choice.delta {
                Some(d) => Some(d.pieces(CHUNK)?),
                None => None,
            };
            checked.push((
                index,
                parts.map(|(r, p)| choice.delta.as_ref().is_some_and(|d| d.has_content(r, &p))),
            ));
        }
        no_repeated_choice(checked.iter().map(|(index, _)| *index), "chunk")?;
        let choices = chunk.choices.as_deref().unwrap_or(&[]);
        let rid = s(&chunk.id).filter(|r| !r.is_empty());
        if !self.started
            && (rid.is_some()
                || !choices.is_empty()
                || chunk.usage.is_some()
                || chunk.error.is_some())
        {
            self.start(rid, s(&chunk.model).filter(|m| !m.is_empty()), out);
        }
        if let Some(f) = failure {
            // an error vetoes whatever the chunk's choices say
            out.push(f);
            return Ok(());
        }
        for (choice, (index, has_content)) in choices.iter().zip(checked) {
            if index != self.choice {
                if self.choice_given {
                    continue;
                }
                return Err(CoreError::new(
                    Code::MULTIPLE_CHOICES,
                    format!("the stream has choice {index} besides choice 0; pass choice= to select one"),
                ));
            }
            let terminal = self.finished;
            if let Some(delta) = &choice.delta {
                if terminal && has_content == Some(true) {
                    return Err(CoreError::new(
                        Code::EVENT_AFTER_TERMINAL,
                        "content arrived after the choice's finish_reason",
                    ));
                }
                self.apply(delta, true, out)?;
            }
            if let Some(finish) = s(&choice.finish_reason) {
                if terminal {
                    return Err(CoreError::new(
                        Code::EVENT_AFTER_TERMINAL,
                        "a second finish_reason for the same choice",
                    ));
                }
                self.finish_with(finish, out);
            }
        }
        if let Some(u) = &chunk.usage {
            out.push(u.event());
        }
        Ok(())
    }
}

impl Mapper for OpenAIChat {
    fn map_event(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if self.done {
            return Err(CoreError::new(
                Code::EVENT_AFTER_TERMINAL,
                "an event arrived after data: [DONE]",
            ));
        }
        if data == DONE {
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk<'_> = parse(data, CHUNK)?;
        self.chunk(&chunk, out)
    }

    fn end(&mut self, _out: &mut Vec<Event>) -> Result<(), CoreError> {
        Ok(())
    }

    fn map_body(&mut self, body: &str, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let body: Body<'_> = parse(body, BODY)?;
        let failure = match &body.error {
            Some(e) => Some(e.failure(BODY)?),
            None => None,
        };
        let choices = body.choices.as_deref().unwrap_or(&[]);
        for choice in choices {
            if let Some(m) = &choice.message {
                m.pieces(BODY)?;
            }
        }
        self.start(
            s(&body.id).filter(|r| !r.is_empty()),
            s(&body.model).filter(|m| !m.is_empty()),
            out,
        );
        if let Some(f) = failure {
            // an error vetoes whatever the choices say
            out.push(f);
            return Ok(());
        }
        if choices.is_empty() {
            return Err(malformed(BODY, "the body has no choices"));
        }
        if !self.choice_given && choices.len() > 1 {
            return Err(CoreError::new(
                Code::MULTIPLE_CHOICES,
                format!(
                    "the body has {} choices; pass choice= to select one",
                    choices.len()
                ),
            ));
        }
        let indexes: Vec<u64> = choices
            .iter()
            .enumerate()
            .map(|(p, c)| c.index.unwrap_or(p as u64))
            .collect();
        no_repeated_choice(
            indexes.iter().copied().filter(|i| *i == self.choice),
            "body",
        )?;
        let Some(selected) = choices
            .iter()
            .zip(&indexes)
            .find(|(_, i)| **i == self.choice)
            .map(|(c, _)| c)
        else {
            return Err(CoreError::new(
                Code::MULTIPLE_CHOICES,
                format!(
                    "choice {} is not among the choices {indexes:?}",
                    self.choice
                ),
            ));
        };
        let Some(finish) = s(&selected.finish_reason) else {
            return Err(malformed(BODY, "the selected choice has no finish_reason"));
        };
        if let Some(message) = &selected.message {
            self.apply(message, false, out)?;
            for call in message.tool_calls.iter().flatten() {
                let (name, arguments) = match &call.function {
                    Some(f) => (s(&f.name), s(&f.arguments)),
                    None => (None, None),
                };
                let call = self.new_call(s(&call.id), name, out)?;
                if let Some(a) = arguments.filter(|a| !a.is_empty()) {
                    out.push(Event::ToolArgumentsDelta {
                        item_id: call.item_id,
                        delta: a.to_owned(),
                    });
                }
            }
        }
        if let Some(u) = &body.usage {
            out.push(u.event());
        }
        self.finish_with(finish, out);
        Ok(())
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(m: &mut OpenAIChat, data: &str) -> Result<Vec<Event>, CoreError> {
        let mut out = Vec::new();
        m.map_event(None, data, &mut out)?;
        Ok(out)
    }

    fn chunk(delta: &str, finish: &str) -> String {
        format!(
            r#"{{"id":"r","model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    }

    #[test]
    fn index_reuse_with_another_id_is_another_call() -> Result<(), CoreError> {
        let mut m = OpenAIChat::new(None);
        let a = feed(
            &mut m,
            &chunk(
                r#"{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}"#,
                "null",
            ),
        )?;
        assert!(matches!(a.first(), Some(Event::ResponseStarted { .. })));
        let b = feed(
            &mut m,
            &chunk(
                r#"{"tool_calls":[{"index":0,"id":"b","function":{"name":"g"}}]}"#,
                "null",
            ),
        )?;
        assert_eq!(
            b,
            vec![
                Event::ItemEnded {
                    item_id: "choice0.tool_calls[0]".into()
                },
                Event::ToolCallStarted {
                    item_id: "choice0.tool_calls[1]".into(),
                    call_id: "b".into(),
                    name: "g".into(),
                    call_id_generated: false,
                    call_kind: crate::core::events::CallKind::Function,
                },
            ]
        );
        let end = feed(&mut m, &chunk("{}", r#""tool_calls""#))?;
        assert_eq!(
            end.last(),
            Some(&Event::ResponseFinished {
                finish_reason: FinishReason::ToolCalls,
                raw_finish_reason: Some("tool_calls".into()),
            })
        );
        Ok(())
    }

    #[test]
    fn done_alone_finishes_nothing_and_ends_the_stream() -> Result<(), CoreError> {
        let mut m = OpenAIChat::new(None);
        feed(&mut m, &chunk(r#"{"content":"hi"}"#, "null"))?;
        assert!(feed(&mut m, DONE)?.is_empty());
        let err = feed(&mut m, &chunk(r#"{"content":"x"}"#, "null"))
            .err()
            .map(|e| e.code);
        assert_eq!(err, Some(Code::EVENT_AFTER_TERMINAL));
        Ok(())
    }

    #[test]
    fn wrong_shapes_are_malformed() {
        for bad in [
            chunk(r#"{"content":5}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":-1}]}"#, "null"),
            r#"["not", "an object"]"#.to_owned(),
            "{".to_owned(),
        ] {
            let err = feed(&mut OpenAIChat::new(None), &bad).err().map(|e| e.code);
            assert_eq!(err, Some(Code::MALFORMED_EVENT), "{bad}");
        }
    }

    #[test]
    fn escaped_strings_are_decoded() -> Result<(), CoreError> {
        let mut m = OpenAIChat::new(None);
        let out = feed(&mut m, &chunk(r#"{"content":"a\"b\u00e9"}"#, "null"))?;
        assert_eq!(
            out.last(),
            Some(&Event::TextDelta {
                item_id: "choice0.content".into(),
                delta: "a\"bé".into()
            })
        );
        Ok(())
    }
}
