//! OpenAI Responses API. Mirrors `decisions/_pure/providers/openai_responses.py`,
//! whose docstring states the rules: identity (item id, `call_id`, content
//! part ids), terminal authority, the output check, builtin tools, and the
//! vetoes: an `error` object on any terminal `response` or body fails it;
//! `failed`/`error` fail, `incomplete` or any `incomplete_details` object
//! give the incomplete reason, `cancelled` cancels, and `in_progress`,
//! `queued`, `""` or an unknown status finish as unknown: only `completed`
//! (or no status on `response.completed`) is done. An output item whose
//! status is not `completed` (or absent) is unfinished, and a done response
//! holding an unfinished message or call is `ITEM_NOT_ENDED`.
//!
//! An event is parsed twice at most: once for its `type` and
//! `sequence_number`, once into the typed struct of a known type (unknown
//! types are only counted). Output items are parsed for their `type` first,
//! so a builtin tool's item of any shape is counted, never rejected.
//!
//! The output check keeps, per item, a running byte length and FNV-1a hash of
//! the deltas; final values are hashed once when they arrive.
//!
//! Calls of every kind (function, custom, and the client-executed local_shell,
//! computer, apply_patch and shell) share one path: a custom call's input is
//! its arguments text, a client tool's `action` / `operation` object is
//! written by `jsontext::dumps` (as the pure twin's `jsontext.dumps`) when
//! its item is done, and a `shell_call` with a non-local `environment` is the
//! provider's own (counted, not a call).

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::jsontext::{self, Node};
use super::openai_common::{failure, malformed, parse, s, Obj};
use super::shape::{count, Shape, Str, ROOT};
use crate::core::errors::{Code, CoreError};
use crate::core::events::{CallKind, Event, FinishReason, ItemKind, Usage};
use crate::core::providers::Mapper;

const SHAPE: Shape = Shape("openai-responses");

// ------------------------------------------------------------ shapes

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default, deserialize_with = "count")]
    sequence_number: Option<u64>,
}

#[derive(Deserialize)]
struct RespHead<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct WithRespHead<'a> {
    #[serde(borrow)]
    response: Obj<RespHead<'a>>,
}

#[derive(Deserialize)]
struct Final<'a> {
    #[serde(borrow, default)]
    id: Option<Str<'a>>,
    #[serde(borrow, default)]
    model: Option<Str<'a>>,
    #[serde(borrow, default)]
    status: Option<Str<'a>>,
    #[serde(borrow, default)]
    output: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    usage: Option<Obj<RespUsage>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    incomplete_details: Option<Obj<Details<'a>>>,
}

#[derive(Deserialize)]
struct WithFinal<'a> {
    #[serde(borrow)]
    response: Obj<Final<'a>>,
}

#[derive(Deserialize)]
struct Details<'a> {
    #[serde(borrow, default)]
    reason: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct RespUsage {
    #[serde(default, deserialize_with = "count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<Obj<InDetails>>,
    #[serde(default)]
    output_tokens_details: Option<Obj<OutDetails>>,
}

#[derive(Deserialize)]
struct InDetails {
    #[serde(default, deserialize_with = "count")]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutDetails {
    #[serde(default, deserialize_with = "count")]
    reasoning_tokens: Option<u64>,
}

impl RespUsage {
    fn event(&self) -> Event {
        Event::Usage(Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_tokens: self
                .input_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens),
            reasoning_tokens: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
        })
    }
}

#[derive(Deserialize)]
struct ItemHead<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow, default)]
    environment: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EnvHead<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Str<'a>>,
}

/// A `shell_call` the provider runs itself: its `environment` is there and is
/// not `{"type": "local"}` (a container).
fn hosted(environment: Option<&RawValue>) -> bool {
    environment.is_some_and(|raw| {
        !matches!(
            serde_json::from_str::<Obj<EnvHead<'_>>>(raw.get()),
            Ok(env) if s(&env.kind) == Some("local")
        )
    })
}

/// A message, call or reasoning output item.
#[derive(Deserialize)]
struct OutItem<'a> {
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow, default)]
    status: Option<Str<'a>>,
    #[serde(borrow, default)]
    call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    encrypted_content: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<Vec<Obj<Part<'a>>>>,
    #[serde(borrow, default)]
    summary: Option<Vec<Obj<Summary<'a>>>>,
    #[serde(borrow, default)]
    input: Option<Str<'a>>,
    #[serde(borrow, default)]
    action: Option<&'a RawValue>,
    #[serde(borrow, default)]
    operation: Option<&'a RawValue>,
    /// A client tool's arguments: its object, written by `jsontext::dumps`.
    #[serde(skip)]
    client_args: Option<String>,
    /// An apply_patch operation's `diff`.
    #[serde(skip)]
    diff: Option<String>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
}

impl Part<'_> {
    /// The part's text (its `refusal` for a refusal part).
    fn value(&self) -> Option<&str> {
        if self.kind.as_str() == "refusal" {
            s(&self.refusal)
        } else {
            s(&self.text)
        }
    }
}

#[derive(Deserialize)]
struct Summary<'a> {
    #[serde(borrow)]
    text: Str<'a>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Reasoning,
    /// A call item of this kind.
    Call(CallKind),
}

impl Kind {
    fn of(kind: &str) -> Option<Kind> {
        Some(match kind {
            "message" => Kind::Message,
            "reasoning" => Kind::Reasoning,
            "function_call" => Kind::Call(CallKind::Function),
            "custom_tool_call" => Kind::Call(CallKind::Custom),
            "local_shell_call" => Kind::Call(CallKind::LocalShell),
            "computer_call" => Kind::Call(CallKind::Computer),
            "apply_patch_call" => Kind::Call(CallKind::ApplyPatch),
            "shell_call" => Kind::Call(CallKind::Shell),
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::Reasoning => "reasoning",
            Kind::Call(CallKind::Function) => "function_call",
            Kind::Call(CallKind::Custom) => "custom_tool_call",
            Kind::Call(CallKind::LocalShell) => "local_shell_call",
            Kind::Call(CallKind::Computer) => "computer_call",
            Kind::Call(CallKind::ApplyPatch) => "apply_patch_call",
            Kind::Call(CallKind::Shell) => "shell_call",
        }
    }

    /// A client-executed tool's field holding its arguments object.
    const fn client_field(self) -> Option<&'static str> {
        match self {
            Kind::Call(CallKind::LocalShell | CallKind::Computer | CallKind::Shell) => {
                Some("action")
            }
            Kind::Call(CallKind::ApplyPatch) => Some("operation"),
            _ => None,
        }
    }
}

/// A known output item, shape-checked, or the type of another one.
enum Out<'a> {
    Known(Kind, Box<OutItem<'a>>),
    Other(String),
}

fn part_kind(kind: &str) -> Option<ItemKind> {
    match kind {
        "output_text" => Some(ItemKind::Text),
        "refusal" => Some(ItemKind::Refusal),
        _ => None,
    }
}

fn out_item<'a>(raw: &'a RawValue, what: &str) -> Result<Out<'a>, CoreError> {
    let head: ItemHead<'a> = parse(raw.get(), what)?;
    let kind = match Kind::of(head.kind.as_str()) {
        Some(Kind::Call(CallKind::Shell)) if hosted(head.environment) => None,
        other => other,
    };
    let Some(kind) = kind else {
        return Ok(Out::Other(head.kind.as_str().to_owned()));
    };
    let mut item: OutItem<'a> = parse(raw.get(), what)?;
    if let Some(field) = kind.client_field() {
        let payload = if field == "operation" {
            item.operation
        } else {
            item.action
        };
        if let Some(payload) = payload {
            let Ok(node @ Node::Object(_)) = jsontext::parse(payload.get()) else {
                return Err(malformed(what, format!("{field} must be an object")));
            };
            if let (Kind::Call(CallKind::ApplyPatch), Node::Object(members)) = (kind, &node) {
                item.diff = match members.get("diff") {
                    None | Some(Node::Null) => None,
                    Some(Node::String(diff)) => Some(diff.clone()),
                    Some(_) => return Err(malformed(what, "diff must be a string")),
                };
            }
            item.client_args = Some(jsontext::dumps(&node));
        }
    }
    if matches!(kind, Kind::Call(_)) {
        let named = item.name.is_some() || kind.client_field().is_some();
        if item.call_id.is_none() || !named {
            return Err(malformed(
                what,
                format!("a {} item needs call_id and name", kind.name()),
            ));
        }
    }
    if kind == Kind::Message {
        for part in item.content.iter().flatten() {
            if part_kind(part.kind.as_str()).is_some() && part.value().is_none() {
                return Err(malformed(
                    what,
                    format!("a {} part needs its text", part.kind.as_str()),
                ));
            }
        }
    }
    Ok(Out::Known(kind, Box::new(item)))
}

impl OutItem<'_> {
    /// A call's name: a client tool's is its kind.
    fn call_name(&self, kind: Kind) -> &str {
        match kind {
            Kind::Call(call) if kind.client_field().is_some() => call.as_str(),
            _ => s(&self.name).unwrap_or(""),
        }
    }

    /// A call's arguments text as this item gives it (None: not given).
    fn call_args(&self, kind: Kind) -> Option<&str> {
        match kind {
            Kind::Call(CallKind::Function) => s(&self.arguments),
            Kind::Call(CallKind::Custom) => s(&self.input),
            _ => self.client_args.as_deref(),
        }
    }

    /// A final call item's arguments text; a client tool's needs its object.
    fn final_args(&self, kind: Kind, what: &str) -> Result<&str, CoreError> {
        match (self.call_args(kind), kind.client_field()) {
            (None, Some(field)) => Err(malformed(
                what,
                format!("a {} item needs its {field} object", kind.name()),
            )),
            (args, _) => Ok(args.unwrap_or("")),
        }
    }

    /// Only `completed` (or no status at all) counts as finished.
    fn complete(&self) -> bool {
        matches!(s(&self.status), None | Some("completed"))
    }

    /// A reasoning item's text: summary parts joined by a blank line, then its content.
    fn reasoning(&self) -> String {
        let mut text = String::new();
        for (i, part) in self.summary.iter().flatten().enumerate() {
            if i > 0 {
                text.push_str("\n\n");
            }
            text.push_str(part.text.as_str());
        }
        for part in self.content.iter().flatten() {
            text.push_str(part.value().unwrap_or(""));
        }
        text
    }
}

fn part_id(item_id: &str, index: u64) -> String {
    if index == 0 {
        item_id.to_owned()
    } else {
        format!("{item_id}:{index}")
    }
}

#[derive(Deserialize)]
struct ItemEvent<'a> {
    #[serde(default, deserialize_with = "count")]
    output_index: Option<u64>,
    #[serde(borrow)]
    item: &'a RawValue,
}

#[derive(Deserialize)]
struct PartEvent<'a> {
    #[serde(borrow)]
    item_id: Str<'a>,
    #[serde(default, deserialize_with = "count")]
    content_index: Option<u64>,
    #[serde(borrow)]
    part: Obj<Part<'a>>,
}

/// `*.delta` / `*.done` events: the field present depends on the type.
#[derive(Deserialize)]
struct ItemRef<'a> {
    #[serde(borrow)]
    item_id: Str<'a>,
    #[serde(default, deserialize_with = "count")]
    content_index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<Str<'a>>,
    #[serde(borrow, default)]
    text: Option<Str<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Str<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Str<'a>>,
    #[serde(borrow, default)]
    input: Option<Str<'a>>,
    #[serde(borrow, default)]
    diff: Option<Str<'a>>,
}

fn required<'x>(v: &'x Option<Str<'_>>, field: &str, what: &str) -> Result<&'x str, CoreError> {
    s(v).ok_or_else(|| malformed(what, format!("{field} must be a string")))
}

#[derive(Deserialize)]
struct ErrorEvent<'a> {
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

// ------------------------------------------------------------ running hash

/// FNV-1a 64 over the bytes, with their count.
#[derive(Clone, Copy)]
struct Digest {
    length: u64,
    hash: u64,
}

impl Digest {
    const fn new() -> Digest {
        Digest {
            length: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    fn add(&mut self, text: &str) {
        let mut h = self.hash;
        for &b in text.as_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.hash = h;
        self.length += text.len() as u64;
    }

    fn of(text: &str) -> Digest {
        let mut d = Digest::new();
        d.add(text);
        d
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum AccKind {
    Text,
    Refusal,
    Arguments,
    Reasoning,
}

impl AccKind {
    fn name(self) -> &'static str {
        match self {
            AccKind::Text => "text",
            AccKind::Refusal => "refusal",
            AccKind::Arguments => "arguments",
            AccKind::Reasoning => "reasoning",
        }
    }
}

struct Acc {
    canon: String,
    kind: AccKind,
    digest: Digest,
    ended: bool,
}

impl Acc {
    fn new(canon: String, kind: AccKind) -> Acc {
        Acc {
            canon,
            kind,
            digest: Digest::new(),
            ended: false,
        }
    }
}

struct Item {
    kind: Kind,
    parts: BTreeMap<u64, Acc>,
    acc: Option<Acc>,
    /// apply_patch_call: the streamed operation diff.
    diff: Option<Acc>,
    call_id: String,
    name: String,
    summaries: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Terminal {
    Finished,
    Failed,
    Error,
}

/// Responses `response.*` events / `response` bodies -> canonical events.
pub struct OpenAIResponses {
    unknown: BTreeMap<String, u64>,
    seq: Option<u64>,
    items: HashMap<String, Item>,
    order: Vec<String>,
    calls: usize,
    refusals: usize,
    terminal: Option<Terminal>,
    /// A message / call some output said was not completed.
    unfinished: Option<String>,
    /// Completed-only reasoning items: (item id, position among the items).
    placements: Vec<(String, usize)>,
}

impl Default for OpenAIResponses {
    fn default() -> Self {
        OpenAIResponses::new()
    }
}

fn delta_event(acc: &mut Acc, delta: &str, out: &mut Vec<Event>) -> Result<(), CoreError> {
    if acc.ended {
        return Err(CoreError::new(
            Code::DELTA_AFTER_END,
            format!("a delta for {} after it ended", acc.canon),
        ));
    }
    acc.digest.add(delta);
    let item_id = acc.canon.clone();
    let delta = delta.to_owned();
    out.push(match acc.kind {
        AccKind::Text => Event::TextDelta { item_id, delta },
        AccKind::Refusal => Event::RefusalDelta { item_id, delta },
        AccKind::Arguments => Event::ToolArgumentsDelta { item_id, delta },
        AccKind::Reasoning => Event::ReasoningDelta {
            item_id,
            delta,
            signature: None,
        },
    });
    Ok(())
}

/// Compare a final value with what streamed (or take it if nothing did).
fn check(acc: &mut Acc, text: &str, what: &str, out: &mut Vec<Event>) -> Result<(), CoreError> {
    if acc.digest.length == 0 && !text.is_empty() && !acc.ended {
        return delta_event(acc, text, out);
    }
    let d = Digest::of(text);
    if d.length != acc.digest.length || d.hash != acc.digest.hash {
        return Err(CoreError::new(
            Code::OUTPUT_MISMATCH,
            format!(
                "{what}: the streamed {} of {} differs from the final value",
                acc.kind.name(),
                acc.canon
            ),
        ));
    }
    Ok(())
}

fn mismatch(msg: String) -> CoreError {
    CoreError::new(Code::OUTPUT_MISMATCH, msg)
}

/// A streamed apply_patch diff against the operation's (nothing streamed: nothing to check).
fn same_diff(acc: &Acc, diff: Option<&str>, what: &str) -> Result<(), CoreError> {
    let d = Digest::of(diff.unwrap_or(""));
    if acc.digest.length > 0 && (d.length != acc.digest.length || d.hash != acc.digest.hash) {
        return Err(mismatch(format!(
            "{what}: the streamed diff of {} differs from the final value",
            acc.canon
        )));
    }
    Ok(())
}

impl OpenAIResponses {
    pub fn new() -> OpenAIResponses {
        OpenAIResponses {
            placements: Vec::new(),
            unknown: BTreeMap::new(),
            seq: None,
            items: HashMap::new(),
            order: Vec::new(),
            calls: 0,
            refusals: 0,
            terminal: None,
            unfinished: None,
        }
    }

    fn note_status(&mut self, kind: Kind, item: &OutItem<'_>) {
        if !item.complete() && kind != Kind::Reasoning && self.unfinished.is_none() {
            self.unfinished = Some(item.id.as_str().to_owned());
        }
    }

    fn count(&mut self, key: String) {
        super::unknown::count_unknown(&mut self.unknown, &key);
    }

    fn item(&mut self, item_id: &str, what: &str, kind: Kind) -> Result<&mut Item, CoreError> {
        match self.items.get_mut(item_id) {
            None => Err(CoreError::new(
                Code::DELTA_BEFORE_START,
                format!("{what} for item {item_id}, which was never added"),
            )),
            Some(entry) if entry.kind != kind => Err(CoreError::new(
                Code::UNKNOWN_ITEM,
                format!(
                    "{what} for item {item_id}, which is a {}",
                    entry.kind.name()
                ),
            )),
            Some(entry) => Ok(entry),
        }
    }

    fn part(&mut self, item_id: &str, index: u64, what: &str) -> Result<&mut Acc, CoreError> {
        let entry = self.item(item_id, what, Kind::Message)?;
        entry.parts.get_mut(&index).ok_or_else(|| {
            CoreError::new(
                Code::DELTA_BEFORE_START,
                format!("{what} for content part {index} of {item_id}, never added"),
            )
        })
    }

    fn dispatch(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<bool, CoreError> {
        let what = kind;
        match kind {
            "response.created" => {
                let ev: WithRespHead<'_> = parse(data, what)?;
                out.push(Event::ResponseStarted {
                    response_id: s(&ev.response.id).map(str::to_owned),
                    model: s(&ev.response.model).map(str::to_owned),
                });
            }
            "response.in_progress" | "response.queued" => {
                let _: WithRespHead<'_> = parse(data, what)?;
            }
            "response.output_item.added" => {
                let ev: ItemEvent<'_> = parse(data, what)?;
                let _ = ev.output_index;
                self.item_added(out_item(ev.item, what)?, out)?;
            }
            "response.output_item.done" => {
                let ev: ItemEvent<'_> = parse(data, what)?;
                if let Out::Known(k, item) = out_item(ev.item, what)? {
                    match self.items.get(item.id.as_str()) {
                        Some(entry) if entry.kind == k => {}
                        _ => {
                            return Err(mismatch(format!(
                                "{what}: {} {} was never added to the stream",
                                k.name(),
                                item.id.as_str()
                            )))
                        }
                    }
                    self.compare(k, &item, what, out, true)?;
                    self.note_status(k, &item);
                }
            }
            "response.content_part.added" | "response.content_part.done" => {
                let ev: PartEvent<'_> = parse(data, what)?;
                self.part_event(&ev, kind == "response.content_part.added", what, out)?;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let delta = required(&ev.delta, "delta", what)?;
                let want = if kind == "response.output_text.delta" {
                    AccKind::Text
                } else {
                    AccKind::Refusal
                };
                let part = self.part(ev.item_id.as_str(), ev.content_index.unwrap_or(0), what)?;
                if part.kind != want {
                    return Err(CoreError::new(
                        Code::UNKNOWN_ITEM,
                        format!(
                            "{what} for {}, which is a {} part",
                            part.canon,
                            part.kind.name()
                        ),
                    ));
                }
                delta_event(part, delta, out)?;
            }
            "response.output_text.done" | "response.refusal.done" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let text = if kind == "response.output_text.done" {
                    required(&ev.text, "text", what)?
                } else {
                    required(&ev.refusal, "refusal", what)?
                };
                let part = self.part(ev.item_id.as_str(), ev.content_index.unwrap_or(0), what)?;
                check(part, text, what, out)?;
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let delta = kind == "response.function_call_arguments.delta";
                let value = if delta {
                    required(&ev.delta, "delta", what)?
                } else {
                    required(&ev.arguments, "arguments", what)?
                };
                let entry = self.item(ev.item_id.as_str(), what, Kind::Call(CallKind::Function))?;
                let Some(acc) = entry.acc.as_mut() else {
                    return Err(malformed(what, "a function call without its arguments"));
                };
                if delta {
                    delta_event(acc, value, out)?;
                } else {
                    check(acc, value, what, out)?;
                }
            }
            "response.custom_tool_call_input.delta" | "response.custom_tool_call_input.done" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let delta = kind == "response.custom_tool_call_input.delta";
                let value = if delta {
                    required(&ev.delta, "delta", what)?
                } else {
                    required(&ev.input, "input", what)?
                };
                let entry = self.item(ev.item_id.as_str(), what, Kind::Call(CallKind::Custom))?;
                let Some(acc) = entry.acc.as_mut() else {
                    return Err(malformed(what, "a custom call without its input"));
                };
                if delta {
                    delta_event(acc, value, out)?;
                } else {
                    check(acc, value, what, out)?;
                }
            }
            "response.apply_patch_call_operation_diff.delta"
            | "response.apply_patch_call_operation_diff.done" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let delta = kind == "response.apply_patch_call_operation_diff.delta";
                let value = if delta {
                    required(&ev.delta, "delta", what)?
                } else {
                    required(&ev.diff, "diff", what)?
                };
                let item_id = ev.item_id.as_str();
                let entry = self.item(item_id, what, Kind::Call(CallKind::ApplyPatch))?;
                let ended = entry.acc.as_ref().is_some_and(|acc| acc.ended);
                let Some(diff) = entry.diff.as_mut() else {
                    return Err(malformed(what, "an apply_patch call without its diff"));
                };
                if !delta {
                    same_diff(diff, Some(value), what)?;
                } else if ended {
                    return Err(CoreError::new(
                        Code::DELTA_AFTER_END,
                        format!("a delta for {item_id} after it ended"),
                    ));
                } else {
                    diff.digest.add(value);
                }
            }
            "response.reasoning_summary_part.added" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let entry = self.item(ev.item_id.as_str(), what, Kind::Reasoning)?;
                let first = entry.summaries == 0;
                entry.summaries += 1;
                if let (false, Some(acc)) = (first, entry.acc.as_mut()) {
                    delta_event(acc, "\n\n", out)?;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                let delta = required(&ev.delta, "delta", what)?;
                let entry = self.item(ev.item_id.as_str(), what, Kind::Reasoning)?;
                if let Some(acc) = entry.acc.as_mut() {
                    delta_event(acc, delta, out)?;
                }
            }
            "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done" => {
                let ev: ItemRef<'_> = parse(data, what)?;
                self.item(ev.item_id.as_str(), what, Kind::Reasoning)?;
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let ev: WithFinal<'_> = parse(data, what)?;
                self.terminal_event(&ev.response, what, out)?;
            }
            "error" => {
                let ev: ErrorEvent<'_> = parse(data, what)?;
                let failure = match ev.error {
                    Some(raw) => failure(SHAPE, raw, what, ROOT.key("error"))?,
                    None => {
                        let raw: &RawValue = parse(data, what)?;
                        failure(SHAPE, raw, what, ROOT)?
                    }
                };
                self.terminal = Some(Terminal::Error);
                out.push(failure);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn item_added(&mut self, item: Out<'_>, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let (kind, item) = match item {
            Out::Other(kind) => {
                self.count(format!("output_item:{kind}"));
                return Ok(());
            }
            Out::Known(kind, item) => (kind, item),
        };
        let id = item.id.as_str();
        if self.items.contains_key(id) {
            return Err(CoreError::new(
                Code::DUPLICATE_ITEM_ID,
                format!("output item {id} was added twice"),
            ));
        }
        let mut entry = Item {
            kind,
            parts: BTreeMap::new(),
            acc: None,
            diff: None,
            call_id: String::new(),
            name: String::new(),
            summaries: 0,
        };
        match kind {
            Kind::Message => self.order.push(id.to_owned()),
            Kind::Call(call_kind) => {
                self.order.push(id.to_owned());
                entry.call_id = s(&item.call_id).unwrap_or("").to_owned();
                entry.name = item.call_name(kind).to_owned();
                self.calls += 1;
                out.push(Event::ToolCallStarted {
                    item_id: id.to_owned(),
                    call_id: entry.call_id.clone(),
                    name: entry.name.clone(),
                    call_id_generated: false,
                    call_kind,
                });
                if call_kind == CallKind::ApplyPatch {
                    entry.diff = Some(Acc::new(id.to_owned(), AccKind::Arguments));
                }
                let mut acc = Acc::new(id.to_owned(), AccKind::Arguments);
                // a client tool's object is complete only when the item is done
                if kind.client_field().is_none() {
                    if let Some(a) = item.call_args(kind).filter(|a| !a.is_empty()) {
                        delta_event(&mut acc, a, out)?;
                    }
                }
                entry.acc = Some(acc);
            }
            Kind::Reasoning => {
                entry.acc = Some(Acc::new(id.to_owned(), AccKind::Reasoning));
                out.push(Event::ItemStarted {
                    item_id: id.to_owned(),
                    kind: ItemKind::Reasoning,
                });
            }
        }
        self.items.insert(id.to_owned(), entry);
        Ok(())
    }

    fn part_event(
        &mut self,
        ev: &PartEvent<'_>,
        added: bool,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let item_id = ev.item_id.as_str();
        let index = ev.content_index.unwrap_or(0);
        let kind = ev.part.kind.as_str();
        if let Some(entry) = self.items.get(item_id) {
            if entry.kind == Kind::Reasoning && kind == "reasoning_text" {
                return Ok(()); // its deltas arrive as response.reasoning_text.delta
            }
        }
        let text = ev.part.value();
        let canon_kind = part_kind(kind);
        if added {
            let entry = self.item(item_id, what, Kind::Message)?;
            let Some(canon_kind) = canon_kind else {
                self.count(format!("content_part:{kind}"));
                return Ok(());
            };
            if entry.parts.contains_key(&index) {
                return Err(CoreError::new(
                    Code::DUPLICATE_ITEM_ID,
                    format!("content part {index} of {item_id} was added twice"),
                ));
            }
            let acc_kind = if canon_kind == ItemKind::Text {
                AccKind::Text
            } else {
                AccKind::Refusal
            };
            let mut acc = Acc::new(part_id(item_id, index), acc_kind);
            out.push(Event::ItemStarted {
                item_id: acc.canon.clone(),
                kind: canon_kind,
            });
            if let Some(t) = text.filter(|t| !t.is_empty()) {
                delta_event(&mut acc, t, out)?;
            }
            entry.parts.insert(index, acc);
            if canon_kind == ItemKind::Refusal {
                self.refusals += 1;
            }
            return Ok(());
        }
        let entry = self.item(item_id, what, Kind::Message)?;
        let Some(acc) = entry.parts.get_mut(&index) else {
            if canon_kind.is_some() {
                return Err(CoreError::new(
                    Code::DELTA_BEFORE_START,
                    format!("{what} for content part {index} of {item_id}, never added"),
                ));
            }
            self.count(format!("content_part:{kind}"));
            return Ok(());
        };
        let Some(text) = text else {
            return Err(malformed(what, format!("a {kind} part needs its text")));
        };
        check(acc, text, what, out)?;
        if !acc.ended {
            acc.ended = true;
            out.push(Event::ItemEnded {
                item_id: acc.canon.clone(),
            });
        }
        Ok(())
    }

    fn compare(
        &mut self,
        kind: Kind,
        item: &OutItem<'_>,
        what: &str,
        out: &mut Vec<Event>,
        end: bool,
    ) -> Result<(), CoreError> {
        let id = item.id.as_str();
        let Some(entry) = self.items.get_mut(id) else {
            return Err(mismatch(format!(
                "{what}: {} {id} was never added to the stream",
                kind.name()
            )));
        };
        match kind {
            Kind::Call(_) => {
                if s(&item.call_id) != Some(entry.call_id.as_str())
                    || item.call_name(kind) != entry.name.as_str()
                {
                    return Err(mismatch(format!(
                        "{what}: the call_id or name of {id} changed"
                    )));
                }
                let args = item.final_args(kind, what)?;
                if let Some(acc) = entry.acc.as_mut() {
                    check(acc, args, what, out)?;
                    if let Some(diff) = entry.diff.as_ref() {
                        same_diff(diff, item.diff.as_deref(), what)?;
                    }
                    if end && item.complete() && !acc.ended {
                        acc.ended = true;
                        out.push(Event::ItemEnded {
                            item_id: id.to_owned(),
                        });
                    }
                }
            }
            Kind::Message => {
                let mut seen = 0usize;
                for (index, part) in item.content.iter().flatten().enumerate() {
                    if part_kind(part.kind.as_str()).is_none() {
                        continue;
                    }
                    let Some(acc) = entry.parts.get_mut(&(index as u64)) else {
                        return Err(mismatch(format!(
                            "{what}: content part {index} of {id} never streamed"
                        )));
                    };
                    seen += 1;
                    check(acc, part.value().unwrap_or(""), what, out)?;
                    if end && item.complete() && !acc.ended {
                        acc.ended = true;
                        out.push(Event::ItemEnded {
                            item_id: acc.canon.clone(),
                        });
                    }
                }
                if seen != entry.parts.len() {
                    return Err(mismatch(format!(
                        "{what}: a streamed content part of {id} is missing"
                    )));
                }
            }
            Kind::Reasoning => {
                if let Some(acc) = entry.acc.as_mut() {
                    if acc.digest.length == 0 && !acc.ended {
                        let text = item.reasoning();
                        if !text.is_empty() {
                            delta_event(acc, &text, out)?;
                        }
                    }
                    if end && !acc.ended {
                        if let Some(sig) = s(&item.encrypted_content).filter(|x| !x.is_empty()) {
                            out.push(Event::ReasoningDelta {
                                item_id: id.to_owned(),
                                delta: String::new(),
                                signature: Some(sig.to_owned()),
                            });
                        }
                        acc.ended = true;
                        out.push(Event::ItemEnded {
                            item_id: id.to_owned(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn terminal_event(
        &mut self,
        fin: &Final<'_>,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let at = ROOT.key("response");
        let failure = match fin.error {
            Some(raw) => Some(failure(SHAPE, raw, what, at.key("error"))?),
            None => None,
        };
        let mut output = Vec::new();
        for raw in fin.output.iter().flatten() {
            output.push(out_item(raw, what)?);
        }
        let status = s(&fin.status);
        if failure.is_some()
            || what == "response.failed"
            || matches!(status, Some("failed" | "error"))
        {
            self.terminal = Some(Terminal::Failed);
            out.push(failure.unwrap_or_else(default_failure));
            return Ok(());
        }
        let mut seen = std::collections::HashSet::new();
        // how many canonical items the output items before this one make
        let mut position = 0;
        for item in &output {
            if let Out::Known(kind, item) = item {
                let id = item.id.as_str();
                match self.items.get(id) {
                    Some(entry) if entry.kind == *kind => {
                        position += if *kind == Kind::Message {
                            entry.parts.len()
                        } else {
                            1
                        };
                    }
                    // never streamed (OpenRouter): taken from the output
                    None if *kind == Kind::Reasoning => {
                        self.count("completed_only:reasoning".to_owned());
                        self.body_item(*kind, item, out, what)?;
                        self.placements.push((id.to_owned(), position));
                        position += 1;
                        continue;
                    }
                    _ => {
                        return Err(mismatch(format!(
                            "{what}: the output has {} {id}, never streamed",
                            kind.name()
                        )))
                    }
                }
                seen.insert(id.to_owned());
                self.compare(*kind, item, what, out, false)?;
                self.note_status(*kind, item);
            }
        }
        if let Some(missing) = self.order.iter().find(|id| !seen.contains(*id)) {
            return Err(mismatch(format!(
                "{what}: streamed item {missing} is not in the output"
            )));
        }
        self.finish(fin, what == "response.incomplete", out)
    }

    fn finish(
        &mut self,
        fin: &Final<'_>,
        incomplete: bool,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if let Some(u) = &fin.usage {
            out.push(u.event());
        }
        self.terminal = Some(Terminal::Finished);
        let status = s(&fin.status);
        let (reason, raw) =
            if incomplete || status == Some("incomplete") || fin.incomplete_details.is_some() {
                let raw = fin
                    .incomplete_details
                    .as_ref()
                    .and_then(|d| s(&d.reason))
                    .filter(|r| !r.is_empty())
                    .unwrap_or("incomplete");
                let reason = match raw {
                    "max_output_tokens" => FinishReason::Length,
                    "content_filter" => FinishReason::ContentFilter,
                    _ => FinishReason::Unknown,
                };
                (reason, raw)
            } else if status == Some("cancelled") {
                (FinishReason::Cancelled, "cancelled")
            } else if matches!(status, None | Some("completed")) {
                let reason = if self.calls > 0 {
                    FinishReason::ToolCalls
                } else if self.refusals > 0 {
                    FinishReason::Refusal
                } else {
                    FinishReason::Stop
                };
                if let Some(id) = &self.unfinished {
                    return Err(CoreError::new(
                        Code::ITEM_NOT_ENDED,
                        format!("the response completed, but output item {id} was not completed"),
                    ));
                }
                (reason, "completed")
            } else {
                // in_progress, queued or a status this package does not know: never "done"
                (FinishReason::Unknown, status.unwrap_or(""))
            };
        out.push(Event::ResponseFinished {
            finish_reason: reason,
            raw_finish_reason: Some(raw.to_owned()),
        });
        Ok(())
    }

    fn body_item(
        &mut self,
        kind: Kind,
        item: &OutItem<'_>,
        out: &mut Vec<Event>,
        what: &str,
    ) -> Result<(), CoreError> {
        let id = item.id.as_str();
        match kind {
            Kind::Call(call_kind) => {
                let args = item.final_args(kind, what)?;
                self.calls += 1;
                out.push(Event::ToolCallStarted {
                    item_id: id.to_owned(),
                    call_id: s(&item.call_id).unwrap_or("").to_owned(),
                    name: item.call_name(kind).to_owned(),
                    call_id_generated: false,
                    call_kind,
                });
                if let Some(a) = Some(args).filter(|a| !a.is_empty()) {
                    out.push(Event::ToolArgumentsDelta {
                        item_id: id.to_owned(),
                        delta: a.to_owned(),
                    });
                }
                if item.complete() {
                    out.push(Event::ItemEnded {
                        item_id: id.to_owned(),
                    });
                }
            }
            Kind::Message => {
                for (index, part) in item.content.iter().flatten().enumerate() {
                    let Some(canon_kind) = part_kind(part.kind.as_str()) else {
                        self.count(format!("content_part:{}", part.kind.as_str()));
                        continue;
                    };
                    let canon = part_id(id, index as u64);
                    out.push(Event::ItemStarted {
                        item_id: canon.clone(),
                        kind: canon_kind,
                    });
                    let text = part.value().unwrap_or("");
                    if canon_kind == ItemKind::Refusal {
                        self.refusals += 1;
                        if !text.is_empty() {
                            out.push(Event::RefusalDelta {
                                item_id: canon.clone(),
                                delta: text.to_owned(),
                            });
                        }
                    } else if !text.is_empty() {
                        out.push(Event::TextDelta {
                            item_id: canon.clone(),
                            delta: text.to_owned(),
                        });
                    }
                    if item.complete() {
                        out.push(Event::ItemEnded { item_id: canon });
                    }
                }
            }
            Kind::Reasoning => {
                out.push(Event::ItemStarted {
                    item_id: id.to_owned(),
                    kind: ItemKind::Reasoning,
                });
                let text = item.reasoning();
                if !text.is_empty() {
                    out.push(Event::ReasoningDelta {
                        item_id: id.to_owned(),
                        delta: text,
                        signature: None,
                    });
                }
                if let Some(sig) = s(&item.encrypted_content).filter(|x| !x.is_empty()) {
                    out.push(Event::ReasoningDelta {
                        item_id: id.to_owned(),
                        delta: String::new(),
                        signature: Some(sig.to_owned()),
                    });
                }
                out.push(Event::ItemEnded {
                    item_id: id.to_owned(),
                });
            }
        }
        Ok(())
    }
}

fn default_failure() -> Event {
    Event::ResponseFailed {
        code: "failed".to_owned(),
        message: String::new(),
        retryable: false,
        error_type: None,
    }
}

impl Mapper for OpenAIResponses {
    fn map_event(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let head: Head<'_> = parse(data, "response event")?;
        let kind = head.kind.as_str();
        if let Some(terminal) = self.terminal {
            if kind == "response.failed" && terminal == Terminal::Error {
                self.terminal = Some(Terminal::Failed);
                return Ok(());
            }
            return Err(CoreError::new(
                Code::EVENT_AFTER_TERMINAL,
                format!("{kind} after the response ended"),
            ));
        }
        if let Some(seq) = head.sequence_number {
            if let Some(last) = self.seq.filter(|last| seq <= *last) {
                return Err(CoreError::new(
                    Code::SEQUENCE_NOT_MONOTONIC,
                    format!("sequence_number {seq} after {last} ({kind})"),
                ));
            }
            self.seq = Some(seq);
        }
        if !self.dispatch(kind, data, out)? {
            self.count(kind.to_owned());
        }
        Ok(())
    }

    fn end(&mut self, _out: &mut Vec<Event>) -> Result<(), CoreError> {
        Ok(())
    }

    fn map_body(&mut self, body: &str, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let what = "response";
        let fin: Final<'_> = parse(body, what)?;
        let failure = match fin.error {
            Some(raw) => Some(failure(SHAPE, raw, what, ROOT.key("error"))?),
            None => None,
        };
        let mut output = Vec::new();
        for raw in fin.output.iter().flatten() {
            output.push(out_item(raw, what)?);
        }
        out.push(Event::ResponseStarted {
            response_id: s(&fin.id).map(str::to_owned),
            model: s(&fin.model).map(str::to_owned),
        });
        let status = s(&fin.status);
        let failed = matches!(status, Some("failed" | "error"));
        if let Some(f) = failure {
            // an error vetoes whatever the status says
            out.push(f);
            return Ok(());
        }
        if failed {
            out.push(default_failure());
            return Ok(());
        }
        for item in &output {
            match item {
                Out::Other(kind) => self.count(format!("output_item:{kind}")),
                Out::Known(kind, item) => self.body_item(*kind, item, out, what)?,
            }
        }
        if let Some(status @ ("queued" | "in_progress")) = status {
            // background mode: the caller polls the response by its id
            let id = s(&fin.id).unwrap_or("");
            return Err(CoreError::new(
                Code::RESPONSE_NOT_FINISHED,
                format!(
                    "response \"{id}\" is {status}, not finished: poll it by its id until it is"
                ),
            ));
        }
        if status.is_none() {
            return Ok(());
        }
        self.finish(&fin, false, out)
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }

    fn take_placements(&mut self) -> Vec<(String, usize)> {
        std::mem::take(&mut self.placements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(events: &[&str]) -> Result<Vec<Event>, CoreError> {
        let mut m = OpenAIResponses::new();
        let mut out = Vec::new();
        for e in events {
            m.map_event(None, e, &mut out)?;
        }
        Ok(out)
    }

    const CREATED: &str =
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"r","model":"m"}}"#;
    const ADDED: &str = r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":""}}"#;
    const DELTA: &str = r#"{"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc","delta":"{\"a\":1}"}"#;

    #[test]
    fn item_id_and_call_id_are_both_kept() -> Result<(), CoreError> {
        let out = feed_all(&[CREATED, ADDED, DELTA])?;
        assert!(out.contains(&Event::ToolCallStarted {
            item_id: "fc".into(),
            call_id: "c".into(),
            name: "f".into(),
            call_id_generated: false,
            call_kind: CallKind::Function,
        }));
        Ok(())
    }

    #[test]
    fn final_output_must_match_the_deltas() {
        let done = r#"{"type":"response.completed","sequence_number":3,"response":{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":"{\"a\":2}"}]}}"#;
        let err = feed_all(&[CREATED, ADDED, DELTA, done])
            .err()
            .map(|e| e.code);
        assert_eq!(err, Some(Code::OUTPUT_MISMATCH));
    }

    #[test]
    fn sequence_numbers_must_increase() {
        let again = r#"{"type":"response.in_progress","sequence_number":0,"response":{}}"#;
        let err = feed_all(&[CREATED, again]).err().map(|e| e.code);
        assert_eq!(err, Some(Code::SEQUENCE_NOT_MONOTONIC));
    }

    #[test]
    fn builtin_items_of_any_shape_are_counted() -> Result<(), CoreError> {
        let mut m = OpenAIResponses::new();
        let mut out = Vec::new();
        let item = r#"{"type":"response.output_item.added","item":{"type":"tool_search_call","arguments":{"q":1}}}"#;
        m.map_event(None, CREATED, &mut out)?;
        m.map_event(None, item, &mut out)?;
        assert_eq!(
            m.unknown_events().get("output_item:tool_search_call"),
            Some(&1)
        );
        Ok(())
    }

    #[test]
    fn digest_is_incremental() {
        let mut d = Digest::new();
        d.add("ab");
        d.add("c");
        let whole = Digest::of("abc");
        assert_eq!((d.length, d.hash), (whole.length, whole.hash));
    }
}
