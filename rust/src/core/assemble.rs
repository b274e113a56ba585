//! Stream assembly: canonical events in, one checked response out.
//!
//! [`Assembler`] enforces the state machine `init -> started -> streaming ->
//! completed | failed`: only a legal terminal event and complete items give a
//! [`Response`]. Each delta is appended to its own item's buffer after the
//! limits are checked; nothing accumulated is re-joined, re-scanned or
//! re-parsed. [`CanonicalMapper`] is the `"canonical"` provider: event data in
//! the canonical wire format (`decisions.types` `to_dict()`).
//!
//! Event data reaches a mapper only after the envelope rule
//! ([`crate::core::envelope`]) has passed it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use serde::Deserialize;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::core::errors::{Code, CoreError};
use crate::core::events::{CallKind, Event, FinishReason, ItemKind, Usage};
use crate::core::limits::Limits;
use crate::core::providers::unknown::count_unknown;
use crate::core::providers::{Mapper, DONE};
use crate::core::tree::Tree;

/// The assembler's state (`StreamAssembler.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Init,
    Started,
    Streaming,
    Completed,
    Failed,
}

impl State {
    const ALL: [State; 5] = [
        State::Init,
        State::Started,
        State::Streaming,
        State::Completed,
        State::Failed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            State::Init => "init",
            State::Started => "started",
            State::Streaming => "streaming",
            State::Completed => "completed",
            State::Failed => "failed",
        }
    }
}

/// What another thread may read or do while the assembler is in use: its
/// state (a copy kept at each change) and its cancel flag, checked at every
/// event, so an `abort()` from another thread stops a feed in flight at the
/// next event. Relaxed atomics: nothing else is published through them.
#[derive(Debug, Default)]
pub struct Status {
    state: AtomicU8,
    /// `LIVE`, `CANCELLED` or `SETTLED`: the first of `cancel` and `settle` wins.
    end: AtomicU8,
}

const LIVE: u8 = 0;
const CANCELLED: u8 = 1;
const SETTLED: u8 = 2;

impl Status {
    /// `failed` once cancelled, else the assembler's last state.
    pub fn state(&self) -> State {
        if self.is_cancelled() {
            return State::Failed;
        }
        State::ALL
            .get(usize::from(self.state.load(Ordering::Relaxed)))
            .copied()
            .unwrap_or(State::Failed)
    }

    /// `abort()`: the assembler fails with `STREAM_CANCELLED` at its next
    /// event or call, unless its outcome was already given (see `settle`).
    pub fn cancel(&self) {
        let _ = self
            .end
            .compare_exchange(LIVE, CANCELLED, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.end.load(Ordering::Relaxed) == CANCELLED
    }

    /// The stream's outcome (its response, the provider's failure or an
    /// error) is given to the caller: a later `cancel` changes nothing.
    /// False if a `cancel` came first.
    fn settle(&self) -> bool {
        matches!(
            self.end
                .compare_exchange(LIVE, SETTLED, Ordering::Relaxed, Ordering::Relaxed),
            Ok(_) | Err(SETTLED)
        )
    }
}

/// The error of every call after `abort()`.
fn cancelled() -> CoreError {
    err(
        Code::STREAM_CANCELLED,
        "the stream was cancelled by the caller".into(),
    )
}

/// What an item holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Refusal,
    Reasoning,
    ToolCall,
}

impl Kind {
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Refusal => "refusal",
            Kind::Reasoning => "reasoning",
            Kind::ToolCall => "tool_call",
        }
    }
}

/// One item as far as it has streamed. `text` is the text, refusal, reasoning
/// or the arguments JSON text of a tool call.
#[derive(Debug, Clone)]
pub struct Item {
    pub kind: Kind,
    pub item_id: String,
    pub text: String,
    pub ended: bool,
    pub call_id: String,
    pub name: String,
    pub call_id_generated: bool,
    pub call_kind: CallKind,
    pub signature: Option<String>,
}

/// A complete response (`decisions.types.NormalizedResponse`). A tool-call
/// item is complete when it ended and the finish reason did not cut the
/// output ([`Response::call_complete`]).
#[derive(Debug, Clone)]
pub struct Response {
    pub response_id: Option<String>,
    pub model: Option<String>,
    pub items: Vec<Item>,
    pub finish_reason: FinishReason,
    pub raw_finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub unknown_events: BTreeMap<String, u64>,
}

impl Response {
    /// Whether a tool-call item of this response is complete: it ended, and
    /// the finish reason (length, content filter, refusal) did not cut the
    /// output. Every call of a cut response is incomplete, ended or not.
    pub const fn call_complete(&self, item: &Item) -> bool {
        item.ended && !cuts_calls(self.finish_reason)
    }
}

/// The provider's failure event, kept for `finish()`.
#[derive(Debug, Clone)]
struct ProviderFailure {
    code: String,
    message: String,
    retryable: bool,
}

/// Canonical events in, one [`Response`] out.
#[derive(Debug)]
pub struct Assembler {
    limits: Limits,
    state: State,
    error: Option<Code>,
    status: Arc<Status>,
    provider_failure: Option<ProviderFailure>,
    items: Vec<Item>,
    /// Items to put at a position when the response is built: (item id, position).
    placed: Vec<(String, usize)>,
    /// Items by item id, and tool-call items by call id.
    by_id: Index,
    call_ids: Index,
    calls: usize,
    bytes: usize,
    events: usize,
    response_id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    finish_reason: FinishReason,
    raw_finish_reason: Option<String>,
    response: Option<Response>,
}

/// Positions in the assembler's items found by one string of the item (its
/// item id or call id), hashed from the items themselves: no key is copied.
struct Index {
    hasher: DefaultHashBuilder,
    table: HashTable<usize>,
    key: fn(&Item) -> &str,
}

impl Index {
    fn new(key: fn(&Item) -> &str) -> Index {
        Index {
            hasher: DefaultHashBuilder::default(),
            table: HashTable::new(),
            key,
        }
    }

    /// The position of the item whose key is `key`.
    fn find(&self, items: &[Item], key: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(key);
        let of = self.key;
        self.table
            .find(hash, |&i| items.get(i).is_some_and(|item| of(item) == key))
            .copied()
    }

    /// Room for `more` keys without rehashing.
    fn reserve(&mut self, items: &[Item], more: usize) {
        let (hasher, of) = (&self.hasher, self.key);
        self.table.reserve(more, |&i| {
            items.get(i).map_or(0, |item| hasher.hash_one(of(item)))
        });
    }

    fn clear(&mut self) {
        self.table.clear();
    }

    /// Index `items[index]` (its key is set, and no other item has it).
    fn insert(&mut self, items: &[Item], index: usize) {
        let (hasher, of) = (&self.hasher, self.key);
        let Some(item) = items.get(index) else {
            return;
        };
        let hash = hasher.hash_one(of(item));
        self.table.insert_unique(hash, index, |&i| {
            items.get(i).map_or(0, |item| hasher.hash_one(of(item)))
        });
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("len", &self.table.len())
            .finish()
    }
}

fn err(code: Code, message: String) -> CoreError {
    CoreError::new(code, message)
}

const fn event_type(event: &Event) -> &'static str {
    match event {
        Event::ResponseStarted { .. } => "response_started",
        Event::ItemStarted { .. } => "item_started",
        Event::TextDelta { .. } => "text_delta",
        Event::RefusalDelta { .. } => "refusal_delta",
        Event::ReasoningDelta { .. } => "reasoning_delta",
        Event::ToolCallStarted { .. } => "tool_call_started",
        Event::ToolArgumentsDelta { .. } => "tool_arguments_delta",
        Event::ItemEnded { .. } => "item_ended",
        Event::Usage(_) => "usage",
        Event::ResponseFinished { .. } => "response_finished",
        Event::ResponseFailed { .. } => "response_failed",
    }
}

/// `delta` appended to an item's text (moved in when it is the first).
fn append(text: &mut String, delta: String) {
    if text.is_empty() {
        *text = delta;
    } else {
        text.push_str(&delta);
    }
}

/// Finish reasons that cut the output itself: every tool call of the
/// response is incomplete and can never become executable.
pub const fn cuts_calls(reason: FinishReason) -> bool {
    matches!(
        reason,
        FinishReason::Length | FinishReason::ContentFilter | FinishReason::Refusal
    )
}

/// Finish reasons that cut the response short: open items are allowed at the finish.
const fn is_truncating(reason: FinishReason) -> bool {
    matches!(
        reason,
        FinishReason::Length
            | FinishReason::ContentFilter
            | FinishReason::Refusal
            | FinishReason::Cancelled
            | FinishReason::Error
    )
}

impl Assembler {
    pub fn new(limits: Limits) -> Assembler {
        Assembler {
            limits,
            state: State::Init,
            error: None,
            status: Arc::default(),
            provider_failure: None,
            items: Vec::new(),
            placed: Vec::new(),
            by_id: Index::new(|item| &item.item_id),
            call_ids: Index::new(|item| &item.call_id),
            calls: 0,
            bytes: 0,
            events: 0,
            response_id: None,
            model: None,
            usage: None,
            finish_reason: FinishReason::Unknown,
            raw_finish_reason: None,
            response: None,
        }
    }

    /// Room for `items` more items (a whole body's, counted before they are applied).
    pub fn reserve(&mut self, items: usize) {
        self.items.reserve(items);
        let Assembler {
            items: all,
            by_id,
            call_ids,
            ..
        } = self;
        by_id.reserve(all, items);
        call_ids.reserve(all, items);
    }

    /// `failed` once cancelled (from any thread), else the state.
    pub fn state(&self) -> State {
        if self.status.is_cancelled() {
            return State::Failed;
        }
        self.state
    }

    /// The state and cancel flag, shared with other threads.
    pub fn status(&self) -> Arc<Status> {
        Arc::clone(&self.status)
    }

    fn set_state(&mut self, state: State) {
        self.state = state;
        self.status.state.store(state as u8, Ordering::Relaxed);
    }

    pub fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The items so far, in the order they started.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Record a failure (from here or an earlier stage); later use raises `STREAM_FAILED`.
    pub fn fail(&mut self, error: CoreError) -> CoreError {
        if self.error.is_none() {
            self.error = Some(error.code);
        }
        self.status.settle();
        self.set_state(State::Failed);
        error
    }

    fn fail_with(&mut self, code: Code, message: String) -> CoreError {
        self.fail(err(code, message))
    }

    /// `abort()`: every later call raises `STREAM_CANCELLED`.
    pub fn cancel(&mut self) {
        self.status.cancel();
        if self.status.is_cancelled() {
            self.set_state(State::Failed);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.status.is_cancelled()
    }

    /// A finished response or a provider failure was seen: nothing more to map at EOF.
    pub fn is_settled(&self) -> bool {
        self.response.is_some() || self.provider_failure.is_some()
    }

    /// Err if the stream was cancelled or already failed.
    pub fn check_usable(&self) -> Result<(), CoreError> {
        if self.status.is_cancelled() {
            return Err(cancelled());
        }
        if let Some(code) = self.error {
            return Err(err(
                Code::STREAM_FAILED,
                format!("the stream already failed ({})", code.as_str()),
            ));
        }
        Ok(())
    }

    /// Consume one canonical event.
    pub fn apply(&mut self, event: Event) -> Result<(), CoreError> {
        self.check_usable()?;
        self.events += 1;
        if self.events > self.limits.max_stream_events {
            let msg = format!(
                "the response has more events than max_stream_events ({})",
                self.limits.max_stream_events
            );
            return Err(self.fail_with(Code::TOO_MANY_EVENTS, msg));
        }
        let state = self.state;
        if state >= State::Completed {
            if let Event::Usage(usage) = event {
                self.merge_usage(usage);
                return Ok(());
            }
            let msg = format!("{} after the terminal event", event_type(&event));
            return Err(self.fail_with(Code::EVENT_AFTER_TERMINAL, msg));
        }
        if let Event::ResponseStarted { response_id, model } = event {
            if state != State::Init {
                return Err(self.fail_with(
                    Code::DUPLICATE_START,
                    "the response was started twice".into(),
                ));
            }
            self.set_state(State::Started);
            self.response_id = response_id;
            self.model = model;
            return Ok(());
        }
        if state == State::Init {
            let msg = format!("{} before response_started", event_type(&event));
            return Err(self.fail_with(Code::EVENT_BEFORE_START, msg));
        }
        if let Event::Usage(usage) = event {
            self.merge_usage(usage);
            return Ok(());
        }
        if state != State::Streaming {
            self.set_state(State::Streaming);
        }
        match event {
            Event::ItemStarted {
                item_id,
                kind,
                position,
            } => {
                let kind = match kind {
                    ItemKind::Text => Kind::Text,
                    ItemKind::Refusal => Kind::Refusal,
                    ItemKind::Reasoning => Kind::Reasoning,
                };
                match position {
                    Some(position) => {
                        self.new_item(kind, item_id.clone())?;
                        self.place(item_id, position);
                        Ok(())
                    }
                    None => self.new_item(kind, item_id).map(|_| ()),
                }
            }
            Event::TextDelta { item_id, delta } => {
                self.text_delta("text_delta", Kind::Text, &item_id, delta)
            }
            Event::RefusalDelta { item_id, delta } => {
                self.text_delta("refusal_delta", Kind::Refusal, &item_id, delta)
            }
            Event::ReasoningDelta {
                item_id,
                delta,
                signature,
            } => self.reasoning_delta(&item_id, &delta, signature.as_deref()),
            Event::ToolCallStarted {
                item_id,
                call_id,
                name,
                call_id_generated,
                call_kind,
            } => self.call_started(item_id, call_id, name, call_id_generated, call_kind),
            Event::ToolArgumentsDelta { item_id, delta } => self.arguments_delta(&item_id, delta),
            Event::ItemEnded { item_id } => self.item_ended(&item_id),
            Event::ResponseFinished {
                finish_reason,
                raw_finish_reason,
            } => {
                self.finish_reason = finish_reason;
                self.raw_finish_reason = raw_finish_reason;
                self.set_state(State::Completed);
                Ok(())
            }
            Event::ResponseFailed {
                code,
                message,
                retryable,
                ..
            } => {
                self.provider_failure = Some(ProviderFailure {
                    code,
                    message,
                    retryable,
                });
                self.set_state(State::Failed);
                Ok(())
            }
            Event::ResponseStarted { .. } | Event::Usage(_) => Ok(()),
        }
    }

    fn new_item(&mut self, kind: Kind, item_id: String) -> Result<usize, CoreError> {
        if self.by_id.find(&self.items, &item_id).is_some() {
            let msg = format!("two items share the item id \"{item_id}\"");
            return Err(self.fail_with(Code::DUPLICATE_ITEM_ID, msg));
        }
        if self.items.len() >= self.limits.max_items_per_response {
            let msg = format!(
                "the response has more items than max_items_per_response ({})",
                self.limits.max_items_per_response
            );
            return Err(self.fail_with(Code::TOO_MANY_ITEMS_IN_RESPONSE, msg));
        }
        let index = self.items.len();
        self.items.push(Item {
            kind,
            item_id,
            text: String::new(),
            ended: false,
            call_id: String::new(),
            name: String::new(),
            call_id_generated: false,
            call_kind: CallKind::Function,
            signature: None,
        });
        self.by_id.insert(&self.items, index);
        Ok(index)
    }

    fn open_item(&mut self, event: &str, kind: Kind, item_id: &str) -> Result<usize, CoreError> {
        let Some(index) = self.by_id.find(&self.items, item_id) else {
            let msg = format!("{event} for item \"{item_id}\", which was never started");
            return Err(self.fail_with(Code::DELTA_BEFORE_START, msg));
        };
        let (item_kind, ended) = match self.items.get(index) {
            Some(item) => (item.kind, item.ended),
            None => {
                return Err(
                    self.fail_with(Code::UNKNOWN_ITEM, format!("item \"{item_id}\" is missing"))
                )
            }
        };
        if item_kind != kind {
            let msg = format!(
                "{event} for item \"{item_id}\", which is a {} item",
                item_kind.as_str()
            );
            return Err(self.fail_with(Code::UNKNOWN_ITEM, msg));
        }
        if ended {
            let msg = format!("{event} for item \"{item_id}\", which has ended");
            return Err(self.fail_with(Code::DELTA_AFTER_END, msg));
        }
        Ok(index)
    }

    fn add_bytes(&mut self, size: usize) -> Result<(), CoreError> {
        let total = self.bytes.saturating_add(size);
        if total > self.limits.max_response_bytes {
            let msg = format!(
                "the response content exceeds max_response_bytes ({})",
                self.limits.max_response_bytes
            );
            return Err(self.fail_with(Code::RESPONSE_TOO_LARGE, msg));
        }
        self.bytes = total;
        Ok(())
    }

    fn text_delta(
        &mut self,
        event: &str,
        kind: Kind,
        item_id: &str,
        delta: String,
    ) -> Result<(), CoreError> {
        let index = self.open_item(event, kind, item_id)?;
        self.add_bytes(delta.len())?;
        if let Some(item) = self.items.get_mut(index) {
            append(&mut item.text, delta);
        }
        Ok(())
    }

    fn reasoning_delta(
        &mut self,
        item_id: &str,
        delta: &str,
        signature: Option<&str>,
    ) -> Result<(), CoreError> {
        let index = self.open_item("reasoning_delta", Kind::Reasoning, item_id)?;
        self.add_bytes(delta.len().saturating_add(signature.map_or(0, str::len)))?;
        if let Some(item) = self.items.get_mut(index) {
            item.text.push_str(delta);
            if let Some(signature) = signature {
                item.signature
                    .get_or_insert_with(String::new)
                    .push_str(signature);
            }
        }
        Ok(())
    }

    fn call_started(
        &mut self,
        item_id: String,
        call_id: String,
        name: String,
        call_id_generated: bool,
        call_kind: CallKind,
    ) -> Result<(), CoreError> {
        if let Some(existing) = self
            .by_id
            .find(&self.items, &item_id)
            .and_then(|i| self.items.get(i))
        {
            if existing.kind == Kind::ToolCall
                && existing.call_id == call_id
                && existing.name != name
            {
                let msg = format!(
                    "tool call \"{call_id}\" changed its name from \"{}\" to \"{name}\"",
                    existing.name
                );
                return Err(self.fail_with(Code::CALL_NAME_CHANGED, msg));
            }
            let msg = format!("two items share the item id \"{item_id}\"");
            return Err(self.fail_with(Code::DUPLICATE_ITEM_ID, msg));
        }
        if self.call_ids.find(&self.items, &call_id).is_some() {
            let msg = format!("two tool calls share the call id \"{call_id}\"");
            return Err(self.fail_with(Code::DUPLICATE_CALL_ID, msg));
        }
        if self.calls >= self.limits.max_calls_per_response {
            let msg = format!(
                "the response has more tool calls than max_calls_per_response ({})",
                self.limits.max_calls_per_response
            );
            return Err(self.fail_with(Code::TOO_MANY_CALLS, msg));
        }
        let index = self.new_item(Kind::ToolCall, item_id)?;
        self.calls += 1;
        if let Some(item) = self.items.get_mut(index) {
            item.call_id = call_id;
            item.name = name;
            item.call_id_generated = call_id_generated;
            item.call_kind = call_kind;
        }
        self.call_ids.insert(&self.items, index);
        Ok(())
    }

    fn arguments_delta(&mut self, item_id: &str, delta: String) -> Result<(), CoreError> {
        let index = self.open_item("tool_arguments_delta", Kind::ToolCall, item_id)?;
        let (current, call_id) = match self.items.get(index) {
            Some(item) => (item.text.len(), item.call_id.as_str()),
            None => return Ok(()),
        };
        if current.saturating_add(delta.len()) > self.limits.max_call_argument_bytes {
            let msg = format!(
                "the arguments of tool call \"{call_id}\" exceed max_call_argument_bytes ({})",
                self.limits.max_call_argument_bytes
            );
            return Err(self.fail_with(Code::ARGUMENTS_TOO_LARGE, msg));
        }
        self.add_bytes(delta.len())?;
        if let Some(item) = self.items.get_mut(index) {
            append(&mut item.text, delta);
        }
        Ok(())
    }

    fn item_ended(&mut self, item_id: &str) -> Result<(), CoreError> {
        let Some(item) = self
            .by_id
            .find(&self.items, item_id)
            .and_then(|i| self.items.get_mut(i))
        else {
            let msg = format!("item_ended for item \"{item_id}\", which was never started");
            return Err(self.fail_with(Code::UNKNOWN_ITEM, msg));
        };
        if item.ended {
            let msg = format!("item_ended for item \"{item_id}\", which has ended");
            return Err(self.fail_with(Code::DELTA_AFTER_END, msg));
        }
        item.ended = true;
        Ok(())
    }

    fn merge_usage(&mut self, usage: Usage) {
        let merged = self.usage.get_or_insert_with(Usage::default);
        merged.input_tokens = usage.input_tokens.or(merged.input_tokens);
        merged.output_tokens = usage.output_tokens.or(merged.output_tokens);
        merged.cached_tokens = usage.cached_tokens.or(merged.cached_tokens);
        merged.reasoning_tokens = usage.reasoning_tokens.or(merged.reasoning_tokens);
    }

    /// Put item `item_id` at `position` among the response's items (after the
    /// ones placed before it) when the response is built.
    pub fn place(&mut self, item_id: String, position: usize) {
        self.placed.push((item_id, position));
    }

    /// The response, if a legal terminal event and complete items were seen.
    /// The provider's failure event gives a `PROVIDER_ERROR` (transport).
    pub fn finish(
        &mut self,
        unknown_events: &BTreeMap<String, u64>,
    ) -> Result<&Response, CoreError> {
        self.check_usable()?;
        if !self.status.settle() {
            return Err(cancelled());
        }
        if let Some(failure) = &self.provider_failure {
            let message = if failure.message.is_empty() {
                failure.code.clone()
            } else {
                format!("{}: {}", failure.code, failure.message)
            };
            let mut error = err(Code::PROVIDER_ERROR, message);
            error.retryable = Some(failure.retryable);
            return Err(error);
        }
        if self.response.is_none() {
            if self.state != State::Completed {
                let msg = "the stream ended without a terminal event".to_string();
                return Err(self.fail_with(Code::NO_TERMINAL_EVENT, msg));
            }
            let truncated = is_truncating(self.finish_reason);
            if !truncated {
                if let Some(open) = self.items.iter().find(|item| !item.ended) {
                    let msg = format!("item \"{}\" was never ended", open.item_id);
                    return Err(self.fail_with(Code::ITEM_NOT_ENDED, msg));
                }
            }
            let mut items = std::mem::take(&mut self.items);
            for (item_id, position) in &self.placed {
                if let Some(at) = items.iter().position(|item| item.item_id == *item_id) {
                    let item = items.remove(at);
                    items.insert((*position).min(items.len()), item);
                }
            }
            self.response = Some(Response {
                response_id: self.response_id.clone(),
                model: self.model.clone(),
                items,
                finish_reason: self.finish_reason,
                raw_finish_reason: self.raw_finish_reason.clone(),
                usage: self.usage,
                unknown_events: unknown_events.clone(),
            });
            self.by_id.clear();
            self.call_ids.clear();
        }
        self.response
            .as_ref()
            .ok_or_else(|| err(Code::STREAM_FAILED, "the response is missing".into()))
    }

    /// The finished response's items when `finish` moved them out, else the live ones.
    pub fn current_items(&self) -> &[Item] {
        match &self.response {
            Some(response) => &response.items,
            None => &self.items,
        }
    }
}

// ------------------------------------------------------------------ plain bodies

/// A whole body read straight to its parts by a mapper (see
/// [`Mapper::plain_body`]): the events it stands for are `response_started`
/// with `head` (response id, model), the text item `text` (item id, its
/// non-empty text) started with one delta, each call of `calls` started with
/// one arguments delta (none when empty), `usage`, each item ended when the
/// finish reason is `stop` or `tool_calls`, then `response_finished` with
/// `finish` (reason, raw reason).
#[derive(Debug)]
pub struct PlainBody {
    pub head: (Option<String>, Option<String>),
    pub text: Option<(String, String)>,
    pub calls: Vec<PlainCall>,
    pub finish: (FinishReason, String),
    pub usage: Option<Usage>,
}

/// One function call of a [`PlainBody`].
#[derive(Debug)]
pub struct PlainCall {
    pub item_id: String,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    pub call_id_generated: bool,
}

impl PlainBody {
    /// How many canonical events the body stands for.
    fn events(&self) -> usize {
        let ended = matches!(self.finish.0, FinishReason::Stop | FinishReason::ToolCalls);
        let items = self.calls.len() + usize::from(self.text.is_some());
        let deltas = self
            .calls
            .iter()
            .filter(|c| !c.arguments.is_empty())
            .count()
            + usize::from(self.text.is_some());
        2 + items + deltas + usize::from(self.usage.is_some()) + if ended { items } else { 0 }
    }
}

/// What an [`Assembler`] gives for the events `body` stands for, built
/// without applying them one by one; None when the assembler would refuse
/// them (a limit, a repeated id, an item never ended, a finish reason it
/// does not take this way): the caller then applies the events, which
/// raise. Mirrors `decisions._pure.assemble.body_response`.
pub fn body_response(
    limits: &Limits,
    body: PlainBody,
    unknown_events: &BTreeMap<String, u64>,
) -> Option<Response> {
    let reason = body.finish.0;
    let ended = matches!(reason, FinishReason::Stop | FinishReason::ToolCalls);
    if !ended && !is_truncating(reason) {
        return None;
    }
    let calls = &body.calls;
    let count = calls.len() + usize::from(body.text.is_some());
    if body.events() > limits.max_stream_events
        || count > limits.max_items_per_response
        || calls.len() > limits.max_calls_per_response
    {
        return None;
    }
    // a repeated item id or call id: the assembler names it
    let mut ids: Vec<&str> = calls.iter().map(|c| c.item_id.as_str()).collect();
    ids.extend(body.text.as_ref().map(|(id, _)| id.as_str()));
    let mut call_ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    for keys in [&mut ids, &mut call_ids] {
        keys.sort_unstable();
        if keys.windows(2).any(|pair| pair.first() == pair.last()) {
            return None;
        }
    }
    let mut total = body.text.as_ref().map_or(0, |(_, text)| text.len());
    for call in calls {
        if call.arguments.len() > limits.max_call_argument_bytes {
            return None;
        }
        total = total.saturating_add(call.arguments.len());
    }
    if total > limits.max_response_bytes {
        return None;
    }
    let mut items = Vec::with_capacity(count);
    if let Some((item_id, text)) = body.text {
        items.push(Item {
            kind: Kind::Text,
            item_id,
            text,
            ended,
            call_id: String::new(),
            name: String::new(),
            call_id_generated: false,
            call_kind: CallKind::Function,
            signature: None,
        });
    }
    items.extend(body.calls.into_iter().map(|call| Item {
        kind: Kind::ToolCall,
        item_id: call.item_id,
        text: call.arguments,
        ended,
        call_id: call.call_id,
        name: call.name,
        call_id_generated: call.call_id_generated,
        call_kind: CallKind::Function,
        signature: None,
    }));
    Some(Response {
        response_id: body.head.0,
        model: body.head.1,
        items,
        finish_reason: reason,
        raw_finish_reason: Some(body.finish.1),
        usage: body.usage,
        unknown_events: unknown_events.clone(),
    })
}

// ------------------------------------------------------------------ canonical wire format

#[derive(Clone, Copy)]
enum Field {
    Str,
    OptStr,
    Bool,
    OptInt,
    Kind,
    Finish,
    CallKind,
}

impl Field {
    const fn expected(self) -> &'static str {
        match self {
            Field::Str => "a string",
            Field::OptStr => "a string or null",
            Field::Bool => "a boolean",
            Field::OptInt => "an integer or null",
            Field::Kind => "an item kind",
            Field::Finish => "a finish reason",
            Field::CallKind => "a call kind",
        }
    }

    fn valid(self, value: &Value) -> bool {
        match self {
            Field::Str => value.is_string(),
            Field::OptStr => value.is_null() || value.is_string(),
            Field::Bool => value.is_boolean(),
            Field::OptInt => value.is_null() || value.as_u64().is_some(),
            Field::Kind => matches!(value.as_str(), Some("text" | "refusal" | "reasoning")),
            Field::Finish => value.as_str().and_then(FinishReason::parse).is_some(),
            Field::CallKind => value.as_str().and_then(CallKind::parse).is_some(),
        }
    }
}

type Spec = &'static [(&'static str, Field, bool)];

/// Whether `kind` is the `type` of a canonical event.
pub fn is_event_type(kind: &str) -> bool {
    spec(kind).is_some()
}

fn spec(kind: &str) -> Option<Spec> {
    use Field::*;
    Some(match kind {
        "response_started" => &[("response_id", OptStr, false), ("model", OptStr, false)],
        "item_started" => &[
            ("item_id", Str, true),
            ("kind", Kind, true),
            ("position", OptInt, false),
        ],
        "text_delta" | "refusal_delta" | "tool_arguments_delta" => {
            &[("item_id", Str, true), ("delta", Str, true)]
        }
        "reasoning_delta" => &[
            ("item_id", Str, true),
            ("delta", Str, false),
            ("signature", OptStr, false),
        ],
        "tool_call_started" => &[
            ("item_id", Str, true),
            ("call_id", Str, true),
            ("name", Str, true),
            ("call_id_generated", Bool, false),
            ("call_kind", CallKind, false),
        ],
        "item_ended" => &[("item_id", Str, true)],
        "usage" => &[
            ("input_tokens", OptInt, false),
            ("output_tokens", OptInt, false),
            ("cached_tokens", OptInt, false),
            ("reasoning_tokens", OptInt, false),
        ],
        "response_finished" => &[
            ("finish_reason", Finish, true),
            ("raw_finish_reason", OptStr, false),
        ],
        "response_failed" => &[
            ("code", Str, true),
            ("message", Str, false),
            ("retryable", Bool, false),
            ("error_type", OptStr, false),
        ],
        _ => return None,
    })
}

fn malformed(message: String) -> CoreError {
    CoreError::new(Code::MALFORMED_EVENT, message)
}

/// A canonical event from its wire format; `Ok(None)` for an unknown `type`.
pub fn canonical_event(payload: Value) -> Result<Option<Event>, CoreError> {
    let Value::Object(mut map) = payload else {
        return Err(malformed("a canonical event must be a JSON object".into()));
    };
    let kind = match map.remove("type") {
        Some(Value::String(kind)) => kind,
        _ => {
            return Err(malformed(
                "a canonical event needs a \"type\" string".into(),
            ))
        }
    };
    let Some(fields) = spec(&kind) else {
        map.insert("type".into(), Value::String(kind));
        return Ok(None);
    };
    // the map is ordered, so the first unknown key is the smallest, as in the pure twin
    if let Some(extra) = map
        .keys()
        .find(|key| !fields.iter().any(|(name, _, _)| name == key))
    {
        return Err(malformed(format!(
            "{kind} event has an unknown field \"{extra}\""
        )));
    }
    for (name, field, required) in fields {
        match map.get(*name) {
            None if *required => {
                return Err(malformed(format!(
                    "{kind} event lacks the field \"{name}\""
                )))
            }
            Some(value) if !field.valid(value) => {
                return Err(malformed(format!(
                    "{kind} event field \"{name}\" must be {}",
                    field.expected()
                )))
            }
            _ => {}
        }
    }
    // an empty call id pairs with no result (refused as Anthropic's and Responses' are)
    if kind == "tool_call_started" && map.get("call_id").and_then(Value::as_str) == Some("") {
        return Err(malformed(
            "tool_call_started event field \"call_id\" must not be empty".into(),
        ));
    }
    let m = &mut map;
    let event = match kind.as_str() {
        "response_started" => Event::ResponseStarted {
            response_id: take_opt(m, "response_id"),
            model: take_opt(m, "model"),
        },
        "item_started" => {
            let kind = match m.get("kind").and_then(Value::as_str) {
                Some("refusal") => ItemKind::Refusal,
                Some("reasoning") => ItemKind::Reasoning,
                _ => ItemKind::Text,
            };
            Event::ItemStarted {
                item_id: take(m, "item_id"),
                kind,
                // beyond the address space: after every item, as any position past the end
                position: m
                    .get("position")
                    .and_then(Value::as_u64)
                    .map(|p| usize::try_from(p).unwrap_or(usize::MAX)),
            }
        }
        "text_delta" => Event::TextDelta {
            item_id: take(m, "item_id"),
            delta: take(m, "delta"),
        },
        "refusal_delta" => Event::RefusalDelta {
            item_id: take(m, "item_id"),
            delta: take(m, "delta"),
        },
        "tool_arguments_delta" => Event::ToolArgumentsDelta {
            item_id: take(m, "item_id"),
            delta: take(m, "delta"),
        },
        "reasoning_delta" => Event::ReasoningDelta {
            item_id: take(m, "item_id"),
            delta: take(m, "delta"),
            signature: take_opt(m, "signature"),
        },
        "tool_call_started" => Event::ToolCallStarted {
            item_id: take(m, "item_id"),
            call_id: take(m, "call_id"),
            name: take(m, "name"),
            call_id_generated: m
                .get("call_id_generated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            call_kind: m
                .get("call_kind")
                .and_then(Value::as_str)
                .and_then(CallKind::parse)
                .unwrap_or_default(),
        },
        "item_ended" => Event::ItemEnded {
            item_id: take(m, "item_id"),
        },
        "usage" => Event::Usage(Usage {
            input_tokens: m.get("input_tokens").and_then(Value::as_u64),
            output_tokens: m.get("output_tokens").and_then(Value::as_u64),
            cached_tokens: m.get("cached_tokens").and_then(Value::as_u64),
            reasoning_tokens: m.get("reasoning_tokens").and_then(Value::as_u64),
        }),
        "response_finished" => Event::ResponseFinished {
            finish_reason: m
                .get("finish_reason")
                .and_then(Value::as_str)
                .and_then(FinishReason::parse)
                .unwrap_or(FinishReason::Unknown),
            raw_finish_reason: take_opt(m, "raw_finish_reason"),
        },
        _ => Event::ResponseFailed {
            code: take(m, "code"),
            message: take(m, "message"),
            retryable: m.get("retryable").and_then(Value::as_bool).unwrap_or(false),
            error_type: take_opt(m, "error_type"),
        },
    };
    Ok(Some(event))
}

fn take(map: &mut serde_json::Map<String, Value>, name: &str) -> String {
    match map.remove(name) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn take_opt(map: &mut serde_json::Map<String, Value>, name: &str) -> Option<String> {
    match map.remove(name) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// Event data parsed as JSON, `[DONE]` as the string itself.
pub fn decode_data(data: &str) -> Result<Value, CoreError> {
    if data == DONE {
        return Ok(Value::String(DONE.to_string()));
    }
    crate::core::json::parse_value(data)
        .map_err(|_| malformed("event data is not valid JSON".into()))
}

/// The `"canonical"` provider: each event's data is a canonical event's wire
/// format; a whole body is a JSON array of them.
#[derive(Debug, Default)]
pub struct CanonicalMapper {
    unknown: BTreeMap<String, u64>,
}

/// Whether an SSE event's name agrees with its data's `type`: no name, or
/// `message`, leaves the data alone to say what it is.
fn named_as(event: Option<&str>, kind: &str) -> bool {
    !matches!(event, Some(name) if name != "message" && name != kind)
}

impl CanonicalMapper {
    /// The event `value`; `event` is its SSE name, None in a body.
    fn map_value(
        &mut self,
        event: Option<&str>,
        value: Value,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let name = value
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(kind) = name.as_deref().filter(|kind| !named_as(event, kind)) {
            // two types are two events: neither is taken (as Anthropic's and Responses')
            let mut error = malformed(format!(
                "canonical SSE event {} carries data of type {kind}",
                event.unwrap_or_default()
            ));
            error.path = Some("$.type".into());
            return Err(error);
        }
        match canonical_event(value)? {
            Some(event) => out.push(event),
            None => count_unknown(&mut self.unknown, name.as_deref().unwrap_or_default()),
        }
        Ok(())
    }
}

/// A delta with exactly its three fields: the hot path, read without building
/// a `Value`. Anything else (other fields, duplicates, other types) takes the
/// general path, which gives the same result or the documented error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    item_id: Cow<'a, str>,
    #[serde(borrow)]
    delta: Cow<'a, str>,
}

impl Mapper for CanonicalMapper {
    fn map_event(
        &mut self,
        event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if let Some(wire) = serde_json::from_str::<WireDelta<'_>>(data)
            .ok()
            .filter(|wire| named_as(event, &wire.kind))
        {
            let (item_id, delta) = (wire.item_id.into_owned(), wire.delta.into_owned());
            let event = match wire.kind.as_ref() {
                "tool_arguments_delta" => Some(Event::ToolArgumentsDelta { item_id, delta }),
                "text_delta" => Some(Event::TextDelta { item_id, delta }),
                "refusal_delta" => Some(Event::RefusalDelta { item_id, delta }),
                _ => None,
            };
            if let Some(event) = event {
                out.push(event);
                return Ok(());
            }
        }
        let value = decode_data(data)?;
        self.map_value(event, value, out)
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
        let Value::Array(values) = decode_data(body)? else {
            return Err(malformed(
                "a canonical body must be a JSON array of events".into(),
            ));
        };
        for value in values {
            self.map_value(None, value, out)?;
        }
        Ok(())
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> Event {
        Event::ResponseStarted {
            response_id: Some("r".into()),
            model: None,
        }
    }

    fn call(id: &str) -> Event {
        Event::ToolCallStarted {
            item_id: id.into(),
            call_id: format!("c{id}"),
            name: "f".into(),
            call_id_generated: false,
            call_kind: CallKind::Function,
        }
    }

    fn delta(id: &str, d: &str) -> Event {
        Event::ToolArgumentsDelta {
            item_id: id.into(),
            delta: d.into(),
        }
    }

    fn run(events: Vec<Event>) -> Result<Response, CoreError> {
        let mut a = Assembler::new(Limits::default());
        for e in events {
            a.apply(e)?;
        }
        a.finish(&BTreeMap::new()).cloned()
    }

    #[test]
    fn interleaved_calls_are_kept_apart() {
        let events = vec![
            started(),
            call("a"),
            call("b"),
            delta("a", "{\"x\":"),
            delta("b", "{\"y\":"),
            delta("a", "1}"),
            delta("b", "2}"),
            Event::ItemEnded {
                item_id: "a".into(),
            },
            Event::ItemEnded {
                item_id: "b".into(),
            },
            Event::ResponseFinished {
                finish_reason: FinishReason::ToolCalls,
                raw_finish_reason: None,
            },
        ];
        let response = run(events).ok();
        let texts: Vec<String> = response
            .map(|r| r.items.into_iter().map(|i| i.text).collect())
            .unwrap_or_default();
        assert_eq!(
            texts,
            vec!["{\"x\":1}".to_string(), "{\"y\":2}".to_string()]
        );
    }

    #[test]
    fn protocol_errors_have_their_codes() {
        let code = |events: Vec<Event>| run(events).err().map(|e| e.code);
        assert_eq!(code(vec![call("a")]), Some(Code::EVENT_BEFORE_START));
        assert_eq!(
            code(vec![started(), delta("a", "x")]),
            Some(Code::DELTA_BEFORE_START)
        );
        assert_eq!(
            code(vec![started(), call("a"), call("a")]),
            Some(Code::DUPLICATE_ITEM_ID)
        );
        assert_eq!(
            code(vec![started(), call("a")]),
            Some(Code::NO_TERMINAL_EVENT)
        );
        let finished = Event::ResponseFinished {
            finish_reason: FinishReason::Stop,
            raw_finish_reason: None,
        };
        assert_eq!(
            code(vec![started(), call("a"), finished.clone()]),
            Some(Code::ITEM_NOT_ENDED)
        );
        assert_eq!(
            code(vec![started(), finished, delta("a", "x")]),
            Some(Code::EVENT_AFTER_TERMINAL)
        );
    }

    #[test]
    fn items_of_every_kind_count_toward_max_items_per_response() {
        let limits = Limits {
            max_items_per_response: 3,
            ..Limits::default()
        };
        let text = |id: &str| Event::ItemStarted {
            item_id: id.into(),
            kind: ItemKind::Text,
            position: None,
        };
        let mut a = Assembler::new(limits);
        for e in [
            started(),
            text("t"),
            call("a"),
            Event::ItemStarted {
                item_id: "r".into(),
                kind: ItemKind::Reasoning,
                position: None,
            },
        ] {
            assert!(a.apply(e).is_ok());
        }
        for extra in [call("b"), text("u")] {
            let mut b = Assembler::new(limits);
            for e in [started(), text("t"), call("a"), text("v")] {
                assert!(b.apply(e).is_ok());
            }
            let error = b.apply(extra).err();
            assert_eq!(
                error.as_ref().map(|e| e.code),
                Some(Code::TOO_MANY_ITEMS_IN_RESPONSE)
            );
            assert_eq!(
                error.map(|e| e.message),
                Some("the response has more items than max_items_per_response (3)".to_string())
            );
            assert_eq!(b.items().len(), 3);
        }
    }

    #[test]
    fn a_cut_finish_makes_every_call_incomplete() {
        for (reason, complete) in [
            (FinishReason::Length, false),
            (FinishReason::ContentFilter, false),
            (FinishReason::Refusal, false),
            (FinishReason::Cancelled, true),
            (FinishReason::Error, true),
            (FinishReason::ToolCalls, true),
            (FinishReason::Stop, true),
        ] {
            let events = vec![
                started(),
                call("a"),
                delta("a", "{}"),
                Event::ItemEnded {
                    item_id: "a".into(),
                },
                Event::ResponseFinished {
                    finish_reason: reason,
                    raw_finish_reason: None,
                },
            ];
            let flags = run(events).map(|r| {
                r.items
                    .iter()
                    .map(|i| (i.ended, r.call_complete(i)))
                    .collect::<Vec<_>>()
            });
            assert_eq!(flags.ok(), Some(vec![(true, complete)]), "{reason:?}");
        }
    }

    #[test]
    fn canonical_wire_format_is_checked() {
        let mut m = CanonicalMapper::default();
        let mut out = Vec::new();
        let ok = m.map_event(None, r#"{"type":"item_ended","item_id":"x"}"#, &mut out);
        assert!(ok.is_ok());
        assert_eq!(
            out,
            vec![Event::ItemEnded {
                item_id: "x".into()
            }]
        );
        let bad = m.map_event(
            None,
            r#"{"type":"item_ended","item_id":"x","zz":1,"aa":2}"#,
            &mut out,
        );
        assert_eq!(
            bad.err().map(|e| e.message),
            Some("item_ended event has an unknown field \"aa\"".to_string())
        );
        assert!(m.map_event(None, r#"{"type":"future"}"#, &mut out).is_ok());
        assert_eq!(m.unknown_events().get("future"), Some(&1));
    }

    #[test]
    fn a_canonical_call_with_an_empty_call_id_is_malformed() {
        let mut m = CanonicalMapper::default();
        let mut out = Vec::new();
        let bad = m.map_event(
            None,
            r#"{"type":"tool_call_started","item_id":"i","call_id":"","name":"f"}"#,
            &mut out,
        );
        assert_eq!(bad.err().map(|e| e.code), Some(Code::MALFORMED_EVENT));
        assert!(out.is_empty());
    }

    #[test]
    fn a_canonical_event_named_as_another_type_is_malformed() {
        let mut m = CanonicalMapper::default();
        let mut out = Vec::new();
        for data in [
            r#"{"type":"response_finished","finish_reason":"stop"}"#,
            r#"{"type":"text_delta","item_id":"t","delta":"x"}"#,
        ] {
            let bad = m.map_event(Some("response_failed"), data, &mut out);
            let error = bad.err();
            assert_eq!(error.as_ref().map(|e| e.code), Some(Code::MALFORMED_EVENT));
            assert_eq!(error.and_then(|e| e.path).as_deref(), Some("$.type"));
            assert!(m.map_event(Some("message"), data, &mut out).is_ok());
        }
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_canonical_count_written_minus_zero_is_zero() {
        let mut m = CanonicalMapper::default();
        let mut out = Vec::new();
        let ok = m.map_event(None, r#"{"type":"usage","input_tokens":-0}"#, &mut out);
        assert!(ok.is_ok());
        assert_eq!(
            out,
            vec![Event::Usage(Usage {
                input_tokens: Some(0),
                ..Usage::default()
            })]
        );
        for float in ["-0.0", "0.0", "-0e0", "1e0"] {
            let data = format!(r#"{{"type":"usage","input_tokens":{float}}}"#);
            let bad = m.map_event(None, &data, &mut out).err().map(|e| e.message);
            assert_eq!(
                bad.as_deref(),
                Some("usage event field \"input_tokens\" must be an integer or null"),
                "{float}"
            );
        }
    }
}
