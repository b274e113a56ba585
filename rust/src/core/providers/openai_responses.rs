//! OpenAI Responses API. Mirrors `decisions/_pure/providers/openai_responses.py`,
//! whose docstring states the rules: identity (item id, `call_id`, content
//! part ids), terminal authority, the output check, builtin tools, and the
//! vetoes: an `error` object on any terminal `response` or body fails it;
//! `failed`/`error` fail, `incomplete` or any `incomplete_details` object
//! give the incomplete reason, `cancelled` cancels, and `in_progress`,
//! `queued`, `""` or an unknown status finish as unknown: only `completed`
//! (or no status on `response.completed`) is done; a head event's
//! `response` is read as a terminal's, and one that already says failed,
//! cancelled or incomplete decides the response then; a failure before
//! `response.created` is preceded by a response start. An output item whose
//! status is not `completed` (or absent) is unfinished, and a done response
//! holding an unfinished message or call is `ITEM_NOT_ENDED`. An entry of
//! a response object's `content_filters` (Azure OpenAI) with `blocked: true`
//! or a `filtered: true` in its `content_filter_results` (read as Chat's
//! are), on a head event, the terminal or a body, makes the finish
//! `content_filter` whatever the status says; an `error` there (the filter
//! did not run) is `PROVIDER_ERROR` unless a verdict withheld it. A terminal
//! output that lists the streamed items in another order (or one twice) is
//! `OUTPUT_MISMATCH`, as is a restatement that contradicts the stream: a
//! content part of another type, an `arguments.done` of another `name`, an
//! event at another `output_index` than its item's. An SSE event named for
//! another type than its data's (`event: response.failed` framing a
//! `response.completed`) is `MALFORMED_EVENT` at `$.type`.
//!
//! The template of [`super`]: an event is read once as raw members (every
//! member any event type reads), each checked with the shape readers when it
//! is reached, in the order of the pure twin, so a `MALFORMED_EVENT` names
//! the JSON path of its field with the same message on both backends. Unknown
//! event types are only counted. Output items are read for their `type`
//! first, so a builtin tool's item of any shape is counted, never rejected;
//! an item of any other type (unknown, `mcp_approval_request`, a client-run
//! `tool_search_call`) is `UNSUPPORTED_ITEM` at its path, since the host
//! might have to act on it.
//!
//! The output check keeps, per item, a running byte length and BLAKE2b-128
//! hash of the deltas (the pure twin's `hashlib.blake2b`); final values are
//! hashed once when they arrive.
//!
//! Calls of every kind (function, custom, and the client-executed local_shell,
//! computer, apply_patch and shell) share one path: a custom call's input is
//! its arguments text, a client tool's `action` / `operation` object is
//! written by `jsontext::dumps` (as the pure twin's `jsontext.dumps`) when
//! its item is done, and a `shell_call` with a non-local `environment` is the
//! provider's own (counted, not a call).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::blake2b::Blake2b128;
use super::jsontext::{self, Node};
use super::openai_chat::{filtered, first, unscreened, Annotation};
use super::openai_common::failure;
use super::shape::{count_text, invalid, is_object, located, model_role, Path, Shape, Str, ROOT};
use crate::core::errors::{Code, CoreError};
use crate::core::events::{CallKind, Event, FinishReason, ItemKind, Usage};
use crate::core::providers::Mapper;
use crate::core::tree::Tree;

const SHAPE: Shape = Shape("openai-responses");

/// The name of an event in its shape errors before its type is known.
const EVENT: &str = "response event";

// ------------------------------------------------------------ raw members

/// Every top-level member an event type reads.
#[derive(Deserialize)]
struct EventRaw<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    sequence_number: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
    #[serde(borrow)]
    output_index: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    item_id: Option<&'a RawValue>,
    #[serde(borrow)]
    content_index: Option<&'a RawValue>,
    #[serde(borrow)]
    part: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    refusal: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    diff: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The `response` of a head event (`response.created` / `in_progress` /
/// `queued`), of a terminal event, or a whole body.
#[derive(Deserialize)]
struct FinalRaw<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    incomplete_details: Option<&'a RawValue>,
    #[serde(borrow)]
    content_filters: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct DetailsRaw<'a> {
    #[serde(borrow)]
    reason: Option<&'a RawValue>,
}

/// One entry of a response's `content_filters` (Azure OpenAI).
#[derive(Deserialize)]
struct FilterRaw<'a> {
    #[serde(borrow)]
    blocked: Option<&'a RawValue>,
    #[serde(borrow)]
    content_filter_results: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageRaw<'a> {
    #[serde(borrow)]
    input_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    output_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    input_tokens_details: Option<&'a RawValue>,
    #[serde(borrow)]
    output_tokens_details: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct InDetailsRaw<'a> {
    #[serde(borrow)]
    cached_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct OutDetailsRaw<'a> {
    #[serde(borrow)]
    reasoning_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ItemRaw<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    environment: Option<&'a RawValue>,
    #[serde(borrow)]
    execution: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    call_id: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    action: Option<&'a RawValue>,
    #[serde(borrow)]
    operation: Option<&'a RawValue>,
    #[serde(borrow)]
    encrypted_content: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
    #[serde(borrow)]
    pending_safety_checks: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct PartRaw<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    refusal: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SummaryRaw<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EnvRaw<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
}

// ------------------------------------------------------------ checked shapes

/// Responses `usage` at `at` -> canonical usage: the details objects, then the counts.
fn usage(raw: &RawValue, what: &str, at: Path<'_>) -> Result<Event, CoreError> {
    let u: UsageRaw<'_> = SHAPE.obj(raw, what, at)?;
    let in_at = at.key("input_tokens_details");
    let inp: Option<InDetailsRaw<'_>> = SHAPE.opt_obj(u.input_tokens_details, what, in_at)?;
    let out_at = at.key("output_tokens_details");
    let outp: Option<OutDetailsRaw<'_>> = SHAPE.opt_obj(u.output_tokens_details, what, out_at)?;
    let input_tokens = SHAPE.opt_count(u.input_tokens, what, at.key("input_tokens"))?;
    let output_tokens = SHAPE.opt_count(u.output_tokens, what, at.key("output_tokens"))?;
    let cached_tokens = match inp {
        Some(d) => SHAPE.opt_count(d.cached_tokens, what, in_at.key("cached_tokens"))?,
        None => None,
    };
    let reasoning_tokens = match outp {
        Some(d) => SHAPE.opt_count(d.reasoning_tokens, what, out_at.key("reasoning_tokens"))?,
        None => None,
    };
    Ok(Event::Usage(Usage {
        input_tokens,
        output_tokens,
        cached_tokens,
        reasoning_tokens,
    }))
}

/// What the `content_filters` (at `at`) of a response object say (Azure
/// OpenAI's verdicts on the prompt and the completion; see Chat's
/// [`Annotation`]): a verdict that withheld it, a `blocked: true` or a
/// `filtered: true` in an entry's `content_filter_results` (read as Chat's
/// are; an entry's `blocked` first), else an `error` in those results (the
/// filter did not run), else None. The list, when not null, holds objects
/// whose `blocked` is a boolean when present and whose
/// `content_filter_results` is null or Chat's shape.
fn blocked(
    raw: Option<&RawValue>,
    what: &str,
    at: Path<'_>,
) -> Result<Option<Annotation>, CoreError> {
    let mut note = None;
    let list = SHAPE.opt_list(raw, what, at)?.unwrap_or_default();
    for (index, entry) in list.into_iter().enumerate() {
        let place = at.index(index);
        let filter: FilterRaw<'_> = SHAPE.obj(entry, what, place)?;
        let verdict = place.key("blocked");
        if SHAPE.opt_bool(filter.blocked, what, verdict)? {
            let hit = Annotation {
                path: verdict.render(),
                ran: true,
            };
            note = first(note, Some(hit));
        }
        if let Some(results) = filter.content_filter_results {
            let at = place.key("content_filter_results");
            note = first(note, filtered(SHAPE, results, what, at)?);
        }
    }
    Ok(note)
}

/// A terminal event's `response` (or a whole body), checked.
struct Final<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    status: Option<Cow<'a, str>>,
    output: Vec<Out<'a>>,
    usage: Option<Event>,
    failure: Option<Event>,
    incomplete: bool,
    reason: Option<Cow<'a, str>>,
    /// What its `content_filters` say.
    blocked: Option<Annotation>,
}

/// The members in order: `id`, `model`, `status`, `output`, `usage`,
/// `error`, `incomplete_details`, `content_filters`.
fn read_final<'a>(r: FinalRaw<'a>, what: &str, at: Path<'_>) -> Result<Final<'a>, CoreError> {
    let id = SHAPE.opt_str(r.id, what, at.key("id"))?;
    let model = SHAPE.opt_str(r.model, what, at.key("model"))?;
    let status = SHAPE.opt_str(r.status, what, at.key("status"))?;
    let output_at = at.key("output");
    let raw_output = SHAPE
        .opt_list(r.output, what, output_at)?
        .unwrap_or_default();
    let mut output = Vec::with_capacity(raw_output.len());
    for (index, raw) in raw_output.into_iter().enumerate() {
        output.push(out_item(raw, what, output_at.index(index))?);
    }
    let usage = match r.usage {
        Some(raw) => Some(usage(raw, what, at.key("usage"))?),
        None => None,
    };
    let failure = match r.error {
        Some(raw) => Some(failure(SHAPE, raw, what, at.key("error"))?),
        None => None,
    };
    let details_at = at.key("incomplete_details");
    let details: Option<DetailsRaw<'a>> = SHAPE.opt_obj(r.incomplete_details, what, details_at)?;
    let reason = match &details {
        Some(d) => SHAPE.opt_str(d.reason, what, details_at.key("reason"))?,
        None => None,
    };
    let blocked = blocked(r.content_filters, what, at.key("content_filters"))?;
    Ok(Final {
        id,
        model,
        status,
        output,
        usage,
        failure,
        incomplete: details.is_some(),
        reason,
        blocked,
    })
}

/// A shell_call the provider runs itself: its `environment` is there and is
/// not `{"type": "local"}` (a container).
fn hosted(environment: Option<&RawValue>) -> bool {
    environment.is_some_and(|raw| {
        let local = is_object(raw)
            && serde_json::from_str::<EnvRaw<'_>>(raw.get())
                .ok()
                .and_then(|env| env.kind)
                .and_then(|kind| serde_json::from_str::<Str<'_>>(kind.get()).ok())
                .is_some_and(|kind| kind.as_str() == "local");
        !local
    })
}

/// A message content part of a type the mapper cannot represent: the answer
/// would be cut, so it is `UNSUPPORTED_ITEM` at `at`.
/// A content part restated (at `at`) as another type than it streamed as (a
/// refusal as text, or the reverse) changes the answer: `OUTPUT_MISMATCH` at its `type`.
fn same_part_kind(acc: &Acc, kind: &str, what: &str, at: Path<'_>) -> Result<(), CoreError> {
    let streamed = if acc.kind == AccKind::Refusal {
        "refusal"
    } else {
        "output_text"
    };
    if kind == streamed {
        return Ok(());
    }
    let mut error = mismatch(format!(
        "{what}: {} streamed as part type \"{streamed}\", not \"{kind}\"",
        acc.canon
    ));
    error.path = Some(at.key("type").render());
    Err(error)
}

fn unsupported_part(kind: &str, item_id: &str, at: Path<'_>) -> CoreError {
    let mut error = CoreError::new(
        Code::UNSUPPORTED_ITEM,
        format!(
            "content part of type \"{kind}\" in message {item_id} is not one the package can \
             represent; the answer would be cut, so nothing in the response is decided"
        ),
    );
    error.path = Some(at.render());
    error
}

/// Items the provider runs or records itself, with nothing for the host to
/// do (a hosted `shell_call`, a `tool_search_call` not run by the client).
const INFORMATIONAL_ITEMS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "shell_call_output",
    "tool_search_output",
    "compaction",
];

/// A message, call or reasoning output item, checked.
struct OutItem<'a> {
    id: Cow<'a, str>,
    status: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
    input: Option<Cow<'a, str>>,
    encrypted_content: Option<Cow<'a, str>>,
    /// Content parts: (type, its text or refusal).
    parts: Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>,
    summary: Vec<Cow<'a, str>>,
    /// A client tool's arguments: its object, written by `jsontext::dumps`.
    client_args: Option<String>,
    /// An apply_patch operation's `diff`.
    diff: Option<String>,
}

/// A content part at `at`: its type, then `text`, then `refusal`; the value
/// is the refusal of a refusal part, else the text.
fn read_part<'a>(
    raw: &'a RawValue,
    what: &str,
    at: Path<'_>,
) -> Result<(Cow<'a, str>, Option<Cow<'a, str>>), CoreError> {
    let part: PartRaw<'a> = SHAPE.obj(raw, what, at)?;
    let kind = SHAPE.req_str(part.kind, what, at.key("type"))?;
    let text = SHAPE.opt_str(part.text, what, at.key("text"))?;
    let refusal = SHAPE.opt_str(part.refusal, what, at.key("refusal"))?;
    let value = if kind == "refusal" { refusal } else { text };
    Ok((kind, value))
}

/// The field holding a part's value (`refusal` for a refusal part).
fn value_field(kind: &str) -> &'static str {
    if kind == "refusal" {
        "refusal"
    } else {
        "text"
    }
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

/// The output item at `at`: its `type` first; a known one's members in the
/// order `id`, `status`, `call_id`, `name`, `arguments`, `input`, the client
/// tool's object (and an apply_patch `diff`), `encrypted_content`,
/// `content`, `summary`, then a call's `pending_safety_checks`.
fn out_item<'a>(raw: &'a RawValue, what: &str, at: Path<'_>) -> Result<Out<'a>, CoreError> {
    let raw_item: ItemRaw<'a> = SHAPE.obj(raw, what, at)?;
    let type_name = SHAPE.req_str(raw_item.kind, what, at.key("type"))?;
    let kind = match Kind::of(&type_name) {
        Some(Kind::Call(CallKind::Shell)) if hosted(raw_item.environment) => None,
        other => other,
    };
    let Some(kind) = kind else {
        let client = raw_item
            .execution
            .and_then(|raw| serde_json::from_str::<Str<'_>>(raw.get()).ok())
            .is_some_and(|e| e.as_str() == "client");
        let informational = match type_name.as_ref() {
            "shell_call" => true,
            "tool_search_call" => !client,
            other => INFORMATIONAL_ITEMS.contains(&other),
        };
        if !informational {
            let mut error = CoreError::new(
                Code::UNSUPPORTED_ITEM,
                format!(
                    "output item of type \"{}\" is not one the package can represent; \
                     it may be a call the host must handle, so nothing in the response is decided",
                    type_name.as_ref()
                ),
            );
            error.path = Some(at.render());
            return Err(error);
        }
        return Ok(Out::Other(type_name.into_owned()));
    };
    let id = SHAPE.req_str(raw_item.id, what, at.key("id"))?;
    let status = SHAPE.opt_str(raw_item.status, what, at.key("status"))?;
    let call_id = SHAPE.opt_str(raw_item.call_id, what, at.key("call_id"))?;
    let name = SHAPE.opt_str(raw_item.name, what, at.key("name"))?;
    let arguments = SHAPE.opt_str(raw_item.arguments, what, at.key("arguments"))?;
    let input = SHAPE.opt_str(raw_item.input, what, at.key("input"))?;
    let mut client_args = None;
    let mut diff = None;
    if let Some(field) = kind.client_field() {
        let payload = if field == "operation" {
            raw_item.operation
        } else {
            raw_item.action
        };
        let field_at = at.key(field);
        if let Some(payload) = payload {
            let node = match jsontext::parse(payload.get()) {
                Ok(node @ Node::Object(_)) => node,
                _ => return Err(SHAPE.malformed(what, field_at)),
            };
            if let (Kind::Call(CallKind::ApplyPatch), Node::Object(members)) = (kind, &node) {
                diff = match members.get("diff") {
                    None | Some(Node::Null) => None,
                    Some(Node::String(diff)) => Some(diff.clone()),
                    Some(_) => return Err(SHAPE.malformed(what, field_at.key("diff"))),
                };
            }
            client_args = Some(jsontext::dumps(&node));
        }
    }
    let encrypted_content = SHAPE.opt_str(
        raw_item.encrypted_content,
        what,
        at.key("encrypted_content"),
    )?;
    let content_at = at.key("content");
    let mut parts = Vec::new();
    let raw_parts = SHAPE.opt_list(raw_item.content, what, content_at)?;
    for (index, raw) in raw_parts.unwrap_or_default().into_iter().enumerate() {
        parts.push(read_part(raw, what, content_at.index(index))?);
    }
    let summary_at = at.key("summary");
    let mut summary = Vec::new();
    let raw_summary = SHAPE.opt_list(raw_item.summary, what, summary_at)?;
    for (index, raw) in raw_summary.unwrap_or_default().into_iter().enumerate() {
        let part_at = summary_at.index(index);
        let part: SummaryRaw<'a> = SHAPE.obj(raw, what, part_at)?;
        summary.push(SHAPE.req_str(part.text, what, part_at.key("text"))?);
    }
    if matches!(kind, Kind::Call(_)) {
        let needs = format!("a {} item needs call_id and name", kind.name());
        if matches!(call_id.as_deref(), None | Some("")) {
            // an empty call_id pairs with no result
            return Err(invalid(what, needs, at.key("call_id")));
        }
        if name.is_none() && kind.client_field().is_none() {
            return Err(invalid(what, needs, at.key("name")));
        }
        let checks_at = at.key("pending_safety_checks");
        let checks = SHAPE.opt_list(raw_item.pending_safety_checks, what, checks_at)?;
        if checks.is_some_and(|checks| !checks.is_empty()) {
            // a computer_call the provider's safety checks flagged: a person must confirm it
            // and the next request acknowledge each check, which no decision carries
            return Err(located(
                CoreError::new(
                    Code::UNSUPPORTED_ITEM,
                    format!(
                        "{what}: {} {id} has pending safety checks, which the host must show a \
                         person and acknowledge before the call runs; the package cannot carry \
                         them, so nothing in the response is decided",
                        kind.name()
                    ),
                ),
                checks_at,
            ));
        }
    }
    if kind == Kind::Message {
        for (index, (part, value)) in parts.iter().enumerate() {
            if part_kind(part).is_some() && value.is_none() {
                return Err(invalid(
                    what,
                    format!("a {part} part needs its text"),
                    content_at.index(index).key(value_field(part)),
                ));
            }
        }
        model_role(raw_item.role, "assistant", what, at.key("role"))?;
    }
    Ok(Out::Known(
        kind,
        Box::new(OutItem {
            id,
            status,
            call_id,
            name,
            arguments,
            input,
            encrypted_content,
            parts,
            summary,
            client_args,
            diff,
        }),
    ))
}

impl OutItem<'_> {
    /// A call's name: a client tool's is its kind.
    fn call_name(&self, kind: Kind) -> &str {
        match kind {
            Kind::Call(call) if kind.client_field().is_some() => call.as_str(),
            _ => self.name.as_deref().unwrap_or(""),
        }
    }

    /// A call's arguments text as this item gives it (None: not given).
    fn call_args(&self, kind: Kind) -> Option<&str> {
        match kind {
            Kind::Call(CallKind::Function) => self.arguments.as_deref(),
            Kind::Call(CallKind::Custom) => self.input.as_deref(),
            _ => self.client_args.as_deref(),
        }
    }

    /// A final call item's arguments text; a client tool's needs its object
    /// (the item is at `at`).
    fn final_args(&self, kind: Kind, what: &str, at: Path<'_>) -> Result<&str, CoreError> {
        match (self.call_args(kind), kind.client_field()) {
            (None, Some(field)) => Err(invalid(
                what,
                format!("a {} item needs its {field} object", kind.name()),
                at.key(field),
            )),
            (args, _) => Ok(args.unwrap_or("")),
        }
    }

    /// Only `completed` (or no status at all) counts as finished.
    fn complete(&self) -> bool {
        matches!(self.status.as_deref(), None | Some("completed"))
    }

    /// A reasoning item's text: summary parts joined by a blank line, then its content.
    fn reasoning(&self) -> String {
        let mut text = self.summary.join("\n\n");
        for (_, value) in &self.parts {
            text.push_str(value.as_deref().unwrap_or(""));
        }
        text
    }

    /// The item's `encrypted_content`, when not empty.
    fn signature(&self) -> Option<&str> {
        self.encrypted_content.as_deref().filter(|x| !x.is_empty())
    }
}

fn part_id(item_id: &str, index: u64) -> String {
    if index == 0 {
        item_id.to_owned()
    } else {
        format!("{item_id}:{index}")
    }
}

/// A `*.delta` / `*.done` event's item reference.
struct Ref<'a> {
    item_id: Cow<'a, str>,
    index: u64,
    /// The required string field asked for.
    value: Cow<'a, str>,
}

/// `item_id`, `content_index`, `output_index`, then every string field such events may carry
/// (`delta`, `text`, `refusal`, `arguments`, `input`, `diff`), whichever one
/// the type uses; `field` (when given) is required.
fn ref_event<'a>(
    ev: &EventRaw<'a>,
    what: &str,
    field: Option<&'static str>,
) -> Result<Ref<'a>, CoreError> {
    let item_id = SHAPE.req_str(ev.item_id, what, ROOT.key("item_id"))?;
    let index = SHAPE
        .opt_count(ev.content_index, what, ROOT.key("content_index"))?
        .unwrap_or(0);
    SHAPE.opt_count(ev.output_index, what, ROOT.key("output_index"))?;
    let mut value = None;
    for (key, raw) in [
        ("delta", ev.delta),
        ("text", ev.text),
        ("refusal", ev.refusal),
        ("arguments", ev.arguments),
        ("input", ev.input),
        ("diff", ev.diff),
    ] {
        let read = SHAPE.opt_str(raw, what, ROOT.key(key))?;
        if Some(key) == field {
            value = read;
        }
    }
    let value = match (field, value) {
        (None, _) => Cow::Borrowed(""),
        (Some(_), Some(value)) => value,
        (Some(key), None) => return Err(SHAPE.malformed(what, ROOT.key(key))),
    };
    Ok(Ref {
        item_id,
        index,
        value,
    })
}

// ------------------------------------------------------------ running hash

/// A running BLAKE2b-128 over the bytes, with their count.
#[derive(Clone)]
struct Digest {
    length: u64,
    hash: Blake2b128,
}

impl Digest {
    fn new() -> Digest {
        Digest {
            length: 0,
            hash: Blake2b128::new(),
        }
    }

    fn add(&mut self, text: &str) {
        self.hash.update(text.as_bytes());
        self.length += text.len() as u64;
    }

    fn of(text: &str) -> Digest {
        let mut d = Digest::new();
        d.add(text);
        d
    }

    /// Whether the two saw the same bytes.
    fn same(&self, other: &Digest) -> bool {
        self.length == other.length && self.hash.digest() == other.hash.digest()
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
    /// The `output_index` it was added at (None: not given).
    place: Option<u64>,
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
    /// Whether a response start was given (by `response.created`, or before a failure that came first).
    started: bool,
    /// A message / call some output said was not completed.
    unfinished: Option<String>,
    /// What the head events' `content_filters` said.
    blocked: Option<Annotation>,
    /// Completed-only reasoning items: (item id, position among the items).
    placements: Vec<(String, usize)>,
    /// The `output_index` of the event being mapped (None: not a count).
    place: Option<u64>,
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
    if !Digest::of(text).same(&acc.digest) {
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

/// An event whose `output_index` (`place`) is not the one its item was added at names two
/// items (a client that reads the index would apply it to the other): `OUTPUT_MISMATCH` there.
fn same_place(
    entry: &Item,
    place: Option<u64>,
    item_id: &str,
    what: &str,
) -> Result<(), CoreError> {
    match (place, entry.place) {
        (Some(place), Some(added)) if place != added => {
            let mut error = mismatch(format!(
                "{what}: output_index {place} is not that of {item_id}, added at {added}"
            ));
            error.path = Some(ROOT.key("output_index").render());
            Err(error)
        }
        _ => Ok(()),
    }
}

fn mismatch(msg: String) -> CoreError {
    CoreError::new(Code::OUTPUT_MISMATCH, msg)
}

/// A streamed apply_patch diff against the operation's (nothing streamed: nothing to check).
fn same_diff(acc: &Acc, diff: Option<&str>, what: &str) -> Result<(), CoreError> {
    if acc.digest.length > 0 && !Digest::of(diff.unwrap_or("")).same(&acc.digest) {
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
            started: false,
            unfinished: None,
            blocked: None,
            place: None,
        }
    }

    /// A failure that came before `response.created` is the provider's: a
    /// response start (with what the failure names of it) goes first, so it
    /// reaches the caller as the failure, not as an event before the start.
    fn start_failed(&mut self, id: Option<&str>, model: Option<&str>, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::ResponseStarted {
                response_id: id.map(str::to_owned),
                model: model.map(str::to_owned),
            });
        }
    }

    fn note_status(&mut self, kind: Kind, item: &OutItem<'_>) {
        if !item.complete() && kind != Kind::Reasoning && self.unfinished.is_none() {
            self.unfinished = Some(item.id.as_ref().to_owned());
        }
    }

    fn count(&mut self, key: String) {
        super::unknown::count_unknown(&mut self.unknown, &key);
    }

    fn item(&mut self, item_id: &str, what: &str, kind: Kind) -> Result<&mut Item, CoreError> {
        let place = self.place;
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
            Some(entry) => {
                same_place(entry, place, item_id, what)?;
                Ok(entry)
            }
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
        ev: &EventRaw<'_>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<bool, CoreError> {
        let what = kind;
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                let at = ROOT.key("response");
                let raw: FinalRaw<'_> = SHAPE.req_obj(ev.response, what, at)?;
                let head = read_final(raw, what, at)?;
                self.blocked = first(self.blocked.take(), head.blocked.clone());
                if let Some(note) = self.blocked.as_ref().filter(|note| !note.ran) {
                    return Err(unscreened(&note.path));
                }
                if kind == "response.created" {
                    self.started = true;
                    out.push(Event::ResponseStarted {
                        response_id: head.id.clone().map(Cow::into_owned),
                        model: head.model.clone().map(Cow::into_owned),
                    });
                }
                self.head_verdict(&head, out)?;
            }
            "response.output_item.added" | "response.output_item.done" => {
                SHAPE.opt_count(ev.output_index, what, ROOT.key("output_index"))?;
                let at = ROOT.key("item");
                let Some(raw) = ev.item else {
                    return Err(SHAPE.malformed(what, at));
                };
                let item = out_item(raw, what, at)?;
                if kind == "response.output_item.added" {
                    self.item_added(item, out)?;
                } else if let Out::Known(k, item) = item {
                    match self.items.get(item.id.as_ref()) {
                        Some(entry) if entry.kind == k => {
                            same_place(entry, self.place, &item.id, what)?;
                        }
                        _ => {
                            return Err(mismatch(format!(
                                "{what}: {} {} was never added to the stream",
                                k.name(),
                                item.id
                            )))
                        }
                    }
                    self.compare(k, &item, what, out, true, at)?;
                    self.note_status(k, &item);
                }
            }
            "response.content_part.added" | "response.content_part.done" => {
                let item_id = SHAPE.req_str(ev.item_id, what, ROOT.key("item_id"))?;
                let index = SHAPE
                    .opt_count(ev.content_index, what, ROOT.key("content_index"))?
                    .unwrap_or(0);
                SHAPE.opt_count(ev.output_index, what, ROOT.key("output_index"))?;
                let at = ROOT.key("part");
                let Some(raw) = ev.part else {
                    return Err(SHAPE.malformed(what, at));
                };
                let (part, text) = read_part(raw, what, at)?;
                let added = kind == "response.content_part.added";
                self.part_event(&item_id, index, (&part, text.as_deref()), added, what, out)?;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let r = ref_event(ev, what, Some("delta"))?;
                let want = if kind == "response.output_text.delta" {
                    AccKind::Text
                } else {
                    AccKind::Refusal
                };
                let part = self.part(&r.item_id, r.index, what)?;
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
                delta_event(part, &r.value, out)?;
            }
            "response.output_text.done" | "response.refusal.done" => {
                let field = if kind == "response.output_text.done" {
                    "text"
                } else {
                    "refusal"
                };
                let r = ref_event(ev, what, Some(field))?;
                let part = self.part(&r.item_id, r.index, what)?;
                check(part, &r.value, what, out)?;
            }
            "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.delta"
            | "response.custom_tool_call_input.done" => {
                let delta = kind.ends_with(".delta");
                let (call, field) = if kind.starts_with("response.function_call") {
                    (CallKind::Function, "arguments")
                } else {
                    (CallKind::Custom, "input")
                };
                let r = ref_event(ev, what, Some(if delta { "delta" } else { field }))?;
                let name = if kind == "response.function_call_arguments.done" {
                    SHAPE.opt_str(ev.name, what, ROOT.key("name"))?
                } else {
                    None
                };
                let entry = self.item(&r.item_id, what, Kind::Call(call))?;
                if let Some(name) = name.filter(|name| *name != entry.name) {
                    // the call would run as another tool
                    let mut error = mismatch(format!(
                        "{what}: call {} was added as \"{}\", not \"{name}\"",
                        r.item_id, entry.name
                    ));
                    error.path = Some(ROOT.key("name").render());
                    return Err(error);
                }
                let Some(acc) = entry.acc.as_mut() else {
                    return Err(invalid(
                        what,
                        "a call without its arguments",
                        ROOT.key("item_id"),
                    ));
                };
                if delta {
                    delta_event(acc, &r.value, out)?;
                } else {
                    check(acc, &r.value, what, out)?;
                }
            }
            "response.apply_patch_call_operation_diff.delta"
            | "response.apply_patch_call_operation_diff.done" => {
                let delta = kind == "response.apply_patch_call_operation_diff.delta";
                let r = ref_event(ev, what, Some(if delta { "delta" } else { "diff" }))?;
                let item_id = r.item_id.as_ref();
                let entry = self.item(item_id, what, Kind::Call(CallKind::ApplyPatch))?;
                let ended = entry.acc.as_ref().is_some_and(|acc| acc.ended);
                let Some(diff) = entry.diff.as_mut() else {
                    return Err(invalid(
                        what,
                        "an apply_patch call without its diff",
                        ROOT.key("item_id"),
                    ));
                };
                if !delta {
                    same_diff(diff, Some(&r.value), what)?;
                } else if ended {
                    return Err(CoreError::new(
                        Code::DELTA_AFTER_END,
                        format!("a delta for {item_id} after it ended"),
                    ));
                } else {
                    diff.digest.add(&r.value);
                }
            }
            "response.reasoning_summary_part.added" => {
                let r = ref_event(ev, what, None)?;
                let entry = self.item(&r.item_id, what, Kind::Reasoning)?;
                let first = entry.summaries == 0;
                entry.summaries += 1;
                if let (false, Some(acc)) = (first, entry.acc.as_mut()) {
                    delta_event(acc, "\n\n", out)?;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let r = ref_event(ev, what, Some("delta"))?;
                let entry = self.item(&r.item_id, what, Kind::Reasoning)?;
                if let Some(acc) = entry.acc.as_mut() {
                    delta_event(acc, &r.value, out)?;
                }
            }
            "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done" => {
                let r = ref_event(ev, what, None)?;
                self.item(&r.item_id, what, Kind::Reasoning)?;
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let at = ROOT.key("response");
                let raw: FinalRaw<'_> = SHAPE.req_obj(ev.response, what, at)?;
                let fin = read_final(raw, what, at)?;
                self.terminal_event(&fin, what, out)?;
            }
            "error" => {
                let failure = match ev.error {
                    Some(raw) => failure(SHAPE, raw, what, ROOT.key("error"))?,
                    None => {
                        let raw: &RawValue =
                            serde_json::from_str(data).map_err(|_| SHAPE.malformed(what, ROOT))?;
                        failure(SHAPE, raw, what, ROOT)?
                    }
                };
                self.terminal = Some(Terminal::Error);
                // the provider failed before it started the response: an id-less start first
                self.start_failed(None, None, out);
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
        let id = item.id.as_ref();
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
            place: self.place,
        };
        match kind {
            Kind::Message => self.order.push(id.to_owned()),
            Kind::Call(call_kind) => {
                self.order.push(id.to_owned());
                entry.call_id = item.call_id.as_deref().unwrap_or("").to_owned();
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
                    position: None,
                });
            }
        }
        self.items.insert(id.to_owned(), entry);
        Ok(())
    }

    /// A `content_part.added` / `.done` event: its part's type and value.
    fn part_event(
        &mut self,
        item_id: &str,
        index: u64,
        (kind, text): (&str, Option<&str>),
        added: bool,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if let Some(entry) = self.items.get(item_id) {
            if entry.kind == Kind::Reasoning && kind == "reasoning_text" {
                return Ok(()); // its deltas arrive as response.reasoning_text.delta
            }
        }
        let canon_kind = part_kind(kind);
        if added {
            let entry = self.item(item_id, what, Kind::Message)?;
            let Some(canon_kind) = canon_kind else {
                return Err(unsupported_part(kind, item_id, ROOT.key("part")));
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
                position: None,
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
            return Err(unsupported_part(kind, item_id, ROOT.key("part")));
        };
        same_part_kind(acc, kind, what, ROOT.key("part"))?;
        let Some(text) = text else {
            return Err(invalid(
                what,
                format!("a {kind} part needs its text"),
                ROOT.key("part").key(value_field(kind)),
            ));
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
        at: Path<'_>,
    ) -> Result<(), CoreError> {
        let id = item.id.as_ref();
        let Some(entry) = self.items.get_mut(id) else {
            return Err(mismatch(format!(
                "{what}: {} {id} was never added to the stream",
                kind.name()
            )));
        };
        match kind {
            Kind::Call(_) => {
                if item.call_id.as_deref() != Some(entry.call_id.as_str())
                    || item.call_name(kind) != entry.name.as_str()
                {
                    return Err(mismatch(format!(
                        "{what}: the call_id or name of {id} changed"
                    )));
                }
                let args = item.final_args(kind, what, at)?;
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
                for (index, (part, value)) in item.parts.iter().enumerate() {
                    if part_kind(part).is_none() {
                        // a part the stream never carried: the answer would be cut
                        return Err(unsupported_part(part, id, at.key("content").index(index)));
                    }
                    let Some(acc) = entry.parts.get_mut(&(index as u64)) else {
                        return Err(mismatch(format!(
                            "{what}: content part {index} of {id} never streamed"
                        )));
                    };
                    seen += 1;
                    same_part_kind(acc, part, what, at.key("content").index(index))?;
                    check(acc, value.as_deref().unwrap_or(""), what, out)?;
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
                        if let Some(sig) = item.signature() {
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

    /// A head whose `response` already says it is over decides the response
    /// now, whatever later events say: an `error` or a `failed` / `error`
    /// status fails it (a `response.failed` that follows confirms it), a
    /// `cancelled` / `incomplete` status or an `incomplete_details` object
    /// finishes it as the terminal's would.
    fn head_verdict(&mut self, head: &Final<'_>, out: &mut Vec<Event>) -> Result<(), CoreError> {
        let status = head.status.as_deref();
        if head.failure.is_some() || matches!(status, Some("failed" | "error")) {
            self.terminal = Some(Terminal::Error);
            self.start_failed(head.id.as_deref(), head.model.as_deref(), out);
            out.push(head.failure.clone().unwrap_or_else(default_failure));
            Ok(())
        } else if head.incomplete || matches!(status, Some("cancelled" | "incomplete")) {
            self.finish(head, false, out)
        } else {
            Ok(())
        }
    }

    fn terminal_event(
        &mut self,
        fin: &Final<'_>,
        what: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let status = fin.status.as_deref();
        if fin.failure.is_some()
            || what == "response.failed"
            || matches!(status, Some("failed" | "error"))
        {
            self.terminal = Some(Terminal::Failed);
            self.start_failed(fin.id.as_deref(), fin.model.as_deref(), out);
            out.push(fin.failure.clone().unwrap_or_else(default_failure));
            return Ok(());
        }
        let output_at = ROOT.key("response");
        let output_at = output_at.key("output");
        let mut seen = std::collections::HashSet::new();
        // how many canonical items the output items before this one make
        let mut position = 0;
        for (index, item) in fin.output.iter().enumerate() {
            if let Out::Known(kind, item) = item {
                let at = output_at.index(index);
                let id = item.id.as_ref();
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
                        self.body_item(*kind, item, out, what, at)?;
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
                self.compare(*kind, item, what, out, false, at)?;
                self.note_status(*kind, item);
            }
        }
        if let Some(missing) = self.order.iter().find(|id| !seen.contains(*id)) {
            return Err(mismatch(format!(
                "{what}: streamed item {missing} is not in the output"
            )));
        }
        // another order (the calls would run in it) or an item listed twice
        let streamed: std::collections::HashSet<&str> =
            self.order.iter().map(String::as_str).collect();
        let listed = fin.output.iter().filter_map(|item| match item {
            Out::Known(_, item) if streamed.contains(item.id.as_ref()) => Some(item.id.as_ref()),
            _ => None,
        });
        if !listed.eq(self.order.iter().map(String::as_str)) {
            return Err(mismatch(format!(
                "{what}: the output does not list the streamed items in stream order"
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
        // a filter that did not run, unless one withheld the response: refused, whatever else it says
        let blocked = match first(self.blocked.clone(), fin.blocked.clone()) {
            Some(note) if !note.ran => return Err(unscreened(&note.path)),
            note => note.is_some(),
        };
        if let Some(u) = &fin.usage {
            out.push(u.clone());
        }
        self.terminal = Some(Terminal::Finished);
        let status = fin.status.as_deref();
        let (mut reason, raw) = if incomplete || status == Some("incomplete") || fin.incomplete {
            let raw = fin
                .reason
                .as_deref()
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
            if let Some(id) = self.unfinished.as_ref().filter(|_| !blocked) {
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
        if blocked {
            // a filter that blocked the prompt or the output: whatever the status says
            reason = FinishReason::ContentFilter;
        }
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
        at: Path<'_>,
    ) -> Result<(), CoreError> {
        let id = item.id.as_ref();
        match kind {
            Kind::Call(call_kind) => {
                let args = item.final_args(kind, what, at)?;
                self.calls += 1;
                out.push(Event::ToolCallStarted {
                    item_id: id.to_owned(),
                    call_id: item.call_id.as_deref().unwrap_or("").to_owned(),
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
                for (index, (part, value)) in item.parts.iter().enumerate() {
                    let Some(canon_kind) = part_kind(part) else {
                        let content_at = at.key("content");
                        return Err(unsupported_part(part, id, content_at.index(index)));
                    };
                    let canon = part_id(id, index as u64);
                    out.push(Event::ItemStarted {
                        item_id: canon.clone(),
                        kind: canon_kind,
                        position: None,
                    });
                    let text = value.as_deref().unwrap_or("");
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
                    position: None,
                });
                let text = item.reasoning();
                if !text.is_empty() {
                    out.push(Event::ReasoningDelta {
                        item_id: id.to_owned(),
                        delta: text,
                        signature: None,
                    });
                }
                if let Some(sig) = item.signature() {
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
        event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if !data.trim_start().starts_with('{') {
            return Err(SHAPE.malformed(EVENT, ROOT));
        }
        let ev: EventRaw<'_> =
            serde_json::from_str(data).map_err(|_| SHAPE.malformed(EVENT, ROOT))?;
        let kind = SHAPE.req_str(ev.kind, EVENT, ROOT.key("type"))?;
        let seq = SHAPE.opt_count(ev.sequence_number, EVENT, ROOT.key("sequence_number"))?;
        let kind = kind.as_ref();
        if let Some(name) = event.filter(|name| *name != "message" && *name != kind) {
            // the SSE event's name is the type (`event: response.failed`): two types are two events
            return Err(located(
                CoreError::new(
                    Code::MALFORMED_EVENT,
                    format!("responses SSE event {name} carries data of type {kind}"),
                ),
                ROOT.key("type"),
            ));
        }
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
        if let Some(seq) = seq {
            if let Some(last) = self.seq.filter(|last| seq <= *last) {
                return Err(CoreError::new(
                    Code::SEQUENCE_NOT_MONOTONIC,
                    format!("sequence_number {seq} after {last} ({kind})"),
                ));
            }
            self.seq = Some(seq);
        }
        // a handler refuses an output_index that is not a count (`-0` is one: 0)
        self.place = ev.output_index.and_then(|raw| count_text(raw.get()));
        if !self.dispatch(kind, &ev, data, out)? {
            self.count(kind.to_owned());
        }
        Ok(())
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
        let what = "response";
        if !body.trim_start().starts_with('{') {
            return Err(SHAPE.malformed(what, ROOT));
        }
        let raw: FinalRaw<'_> =
            serde_json::from_str(body).map_err(|_| SHAPE.malformed(what, ROOT))?;
        let fin = read_final(raw, what, ROOT)?;
        out.push(Event::ResponseStarted {
            response_id: fin.id.as_deref().map(str::to_owned),
            model: fin.model.as_deref().map(str::to_owned),
        });
        let status = fin.status.as_deref();
        if let Some(f) = &fin.failure {
            // an error vetoes whatever the status says
            out.push(f.clone());
            return Ok(());
        }
        if matches!(status, Some("failed" | "error")) {
            out.push(default_failure());
            return Ok(());
        }
        let output_at = ROOT.key("output");
        for (index, item) in fin.output.iter().enumerate() {
            match item {
                Out::Other(kind) => self.count(format!("output_item:{kind}")),
                Out::Known(kind, item) => {
                    self.body_item(*kind, item, out, what, output_at.index(index))?
                }
            }
        }
        if let Some(status @ ("queued" | "in_progress")) = status {
            // background mode: the caller polls the response by its id
            let id = fin.id.as_deref().unwrap_or("");
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
    fn an_output_index_written_minus_zero_is_zero() {
        let added = ADDED.replace(r#""output_index":0"#, r#""output_index":1"#);
        let delta = DELTA.replace(r#""item_id""#, r#""output_index":-0,"item_id""#);
        let err = feed_all(&[CREATED, &added, &delta]).err();
        assert_eq!(
            err.map(|e| (e.code, e.path)),
            Some((Code::OUTPUT_MISMATCH, Some("$.output_index".to_owned())))
        );
        let delta = DELTA.replace(r#""item_id""#, r#""output_index":1,"item_id""#);
        assert!(feed_all(&[CREATED, &added, &delta]).is_ok());
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
    fn malformed_fields_name_their_path() {
        let cases = [
            (
                r#"{"type":"response.output_text.delta","item_id":"m","delta":1}"#,
                "$.delta",
                "openai-responses response.output_text.delta does not have the documented shape",
            ),
            (
                r#"{"type":"response.completed","response":{"output":[{"type":"message","id":"m","content":[{"type":"output_text","text":[]}]}]}}"#,
                "$.response.output[0].content[0].text",
                "openai-responses response.completed does not have the documented shape",
            ),
            (
                r#"{"type":"response.output_item.added","item":{"type":"function_call","id":"f","name":"n"}}"#,
                "$.item.call_id",
                "response.output_item.added: a function_call item needs call_id and name",
            ),
            (
                r#"{"type":"response.completed","response":{"usage":{"input_tokens_details":{"cached_tokens":-1}}}}"#,
                "$.response.usage.input_tokens_details.cached_tokens",
                "openai-responses response.completed does not have the documented shape",
            ),
        ];
        for (event, path, message) in cases {
            let err = feed_all(&[event]).err();
            assert_eq!(
                err.map(|e| (e.code, e.path, e.message)),
                Some((
                    Code::MALFORMED_EVENT,
                    Some(path.to_owned()),
                    message.to_owned()
                )),
                "{event}"
            );
        }
    }

    #[test]
    fn digest_is_incremental() {
        let mut d = Digest::new();
        d.add("ab");
        d.add("c");
        assert!(d.same(&Digest::of("abc")));
        assert!(!d.same(&Digest::of("abd")));
    }
}
