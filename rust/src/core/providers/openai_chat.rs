//! OpenAI Chat Completions (also the wire format of OpenAI-compatible
//! servers: vLLM, llama.cpp, Ollama, Groq, DeepSeek, Mistral, xAI, Cerebras).
//! Mirrors `decisions/_pure/providers/openai_chat.py`, whose docstring states
//! the rules: terminal authority (the selected choice's `finish_reason`;
//! `[DONE]` alone finishes nothing), generated item and call ids, index reuse,
//! finish-reason normalization.
//!
//! The template of [`super`]: a chunk or body is read as raw members, each
//! checked with the shape readers when it is reached; the whole chunk is
//! checked before any of it is acted on.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::openai_common::{failure, RETRYABLE_ERRORS};
use super::shape::{invalid, located, model_role, Path, Shape, ROOT};
use super::DONE;
use crate::core::assemble::{PlainBody, PlainCall};
use crate::core::errors::{Code, CoreError};
use crate::core::events::{Event, FinishReason, ItemKind, Usage};
use crate::core::providers::Mapper;
use crate::core::tree::{Node, Tree, Value};

const SHAPE: Shape = Shape("openai-chat");

/// The name of a chunk in the mapper's other errors.
const CHUNK: &str = "chat.completion.chunk";
/// The name of a body in the mapper's other errors.
const BODY: &str = "chat.completion";

// ------------------------------------------------------------ raw members

/// A chunk or a whole body.
#[derive(Deserialize)]
struct TopRaw<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    choices: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    error_type: Option<&'a RawValue>,
    #[serde(borrow)]
    prompt_filter_results: Option<&'a RawValue>,
    /// Azure's name for `prompt_filter_results` before API version 2023-10-01.
    #[serde(borrow)]
    prompt_annotations: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ChoiceRaw<'a> {
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    finish_reason: Option<&'a RawValue>,
    #[serde(borrow)]
    content_filter_results: Option<&'a RawValue>,
    /// `content_filter_results` as Azure has also spelt it in stream chunks.
    #[serde(borrow)]
    content_filter_result: Option<&'a RawValue>,
}

/// One `prompt_filter_results` (or `prompt_annotations`) entry.
#[derive(Deserialize)]
struct PromptFilterRaw<'a> {
    #[serde(borrow)]
    content_filter_results: Option<&'a RawValue>,
}

/// One entry of a content-filter category (or of its `details`).
#[derive(Deserialize)]
struct FilterEntryRaw<'a> {
    #[serde(borrow)]
    filtered: Option<&'a RawValue>,
    #[serde(borrow)]
    details: Option<&'a RawValue>,
    /// Not null: this category was not screened.
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// What one content-filter annotation says: `filtered: true` at `path`
/// (`ran`), or an `error` at `path`, the filter did not run. A filter that
/// withheld output wins over one that did not run.
#[derive(Clone)]
pub(super) struct Annotation {
    pub(super) path: String,
    pub(super) ran: bool,
}

/// The annotation that wins of two: a filter hit over a filter that did
/// not run, else the earlier.
pub(super) fn first(one: Option<Annotation>, other: Option<Annotation>) -> Option<Annotation> {
    match (&one, &other) {
        (None, _) => other,
        (Some(a), Some(b)) if b.ran && !a.ran => other,
        _ => one,
    }
}

/// A chunk's `delta`, or a body's `message`.
#[derive(Deserialize)]
struct DeltaRaw<'a> {
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    refusal: Option<&'a RawValue>,
    #[serde(borrow)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(borrow)]
    reasoning: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow)]
    function_call: Option<&'a RawValue>,
    #[serde(borrow)]
    audio: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallRaw<'a> {
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    function: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FnRaw<'a> {
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct PartRaw<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    thinking: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TextRaw<'a> {
    #[serde(borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageRaw<'a> {
    #[serde(borrow)]
    prompt_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    completion_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    prompt_tokens_details: Option<&'a RawValue>,
    #[serde(borrow)]
    completion_tokens_details: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct PromptDetailsRaw<'a> {
    #[serde(borrow)]
    cached_tokens: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CompletionDetailsRaw<'a> {
    #[serde(borrow)]
    reasoning_tokens: Option<&'a RawValue>,
}

// ------------------------------------------------------------ the tree
// A body or chunk read from its tree (see `crate::core::tree`), built in the
// pass that checked the envelope rule: used only when every member has its
// documented type; anything else goes the checked way below, which names the
// failure exactly as the pure twin does.

/// A member of a body's tree that must be a string when present.
fn tree_str<'t>(node: Value<'t>, key: &str) -> Result<Option<Cow<'t, str>>, ()> {
    match node.get(key) {
        None => Ok(None),
        Some(value) => value.str().map(|s| Some(Cow::Borrowed(s))).ok_or(()),
    }
}

/// A member of a body's tree that must be a count when present (see
/// [`super::shape::count_text`]: the tree's `-0` is another number, and
/// declines).
fn tree_count(node: Value<'_>, key: &str) -> Result<Option<u64>, ()> {
    match node.get(key).map(|value| value.node()) {
        None => Ok(None),
        Some(Node::Count(n)) => Ok(Some(n)),
        Some(_) => Err(()),
    }
}

/// A member of a body's tree that must be an array of objects when present.
fn tree_objects<'t>(
    node: Value<'t>,
    key: &str,
) -> Result<impl Iterator<Item = Value<'t>> + 't, ()> {
    let items = match node.get(key) {
        None => None,
        Some(value) => Some(value.items().ok_or(())?),
    };
    let items = items.into_iter().flatten();
    if items.clone().all(|item| item.is_object()) {
        Ok(items)
    } else {
        Err(())
    }
}

/// A member of a body's tree that must be an object when present.
fn tree_object<'t>(node: Value<'t>, key: &str) -> Result<Option<Value<'t>>, ()> {
    match node.get(key) {
        None => Ok(None),
        Some(object) if object.is_object() => Ok(Some(object)),
        Some(_) => Err(()),
    }
}

/// `usage` read from a body's tree, as [`usage`] reads it from text.
fn tree_usage(u: Value<'_>) -> Result<Event, ()> {
    if !u.is_object() {
        return Err(());
    }
    let prompt = tree_object(u, "prompt_tokens_details")?;
    let completion = tree_object(u, "completion_tokens_details")?;
    Ok(Event::Usage(Usage {
        input_tokens: tree_count(u, "prompt_tokens")?,
        output_tokens: tree_count(u, "completion_tokens")?,
        cached_tokens: match prompt {
            Some(p) => tree_count(p, "cached_tokens")?,
            None => None,
        },
        reasoning_tokens: match completion {
            Some(c) => tree_count(c, "reasoning_tokens")?,
            None => None,
        },
    }))
}

/// A body's or chunk's top members and choices as [`top`] and [`choice`]
/// read them (`member` is the choices' `message` or `delta`), read from its
/// tree when every member has its documented type and the body or chunk is a
/// common one. Anything else (a member of another type, Mistral's content
/// parts, a legacy `function_call`, an `error`, a filter's results, a call of
/// another type) declines: it takes the checked way, which names the field.
fn tree_read<'t>(body: Value<'t>, member: &str) -> Option<(Top<'t>, Vec<Choice<'t>>)> {
    if !body.is_object() {
        return None;
    }
    if body.get("error").is_some()
        || body.get("prompt_filter_results").is_some()
        || body.get("prompt_annotations").is_some()
    {
        return None;
    }
    let usage = match body.get("usage") {
        Some(u) => Some(tree_usage(u).ok()?),
        None => None,
    };
    let mut choices = Vec::new();
    for (position, c) in tree_objects(body, "choices").ok()?.enumerate() {
        if c.get("content_filter_results").is_some() || c.get("content_filter_result").is_some() {
            return None;
        }
        // the other mode's member: the checked way refuses it
        let other = if member == "delta" {
            "message"
        } else {
            "delta"
        };
        if c.get(other).is_some() {
            return None;
        }
        let parts = match tree_object(c, member).ok()? {
            None => None,
            Some(m) => {
                if m.get("function_call").is_some() || m.get("audio").is_some() {
                    return None;
                }
                // another party's message: the checked way refuses it
                if !matches!(
                    tree_str(m, "role").ok()?.as_deref(),
                    None | Some("assistant")
                ) {
                    return None;
                }
                let rc = tree_str(m, "reasoning_content")
                    .ok()?
                    .filter(|r| !r.is_empty());
                let r = tree_str(m, "reasoning").ok()?.filter(|r| !r.is_empty());
                if matches!((&rc, &r), (Some(a), Some(b)) if a != b) {
                    return None;
                }
                let mut tool_calls = Vec::new();
                for (position, call) in tree_objects(m, "tool_calls").ok()?.enumerate() {
                    if !matches!(
                        tree_str(call, "type").ok()?.as_deref(),
                        None | Some("" | "function")
                    ) {
                        return None;
                    }
                    let (name, arguments) = match tree_object(call, "function").ok()? {
                        Some(f) => (tree_str(f, "name").ok()?, tree_str(f, "arguments").ok()?),
                        None => (None, None),
                    };
                    tool_calls.push(CallPart {
                        position,
                        index: tree_count(call, "index").ok()?.unwrap_or(position as u64),
                        id: tree_str(call, "id").ok()?,
                        name,
                        arguments,
                    });
                }
                Some(Parts {
                    content: tree_str(m, "content")
                        .ok()?
                        .map(|t| (false, t))
                        .into_iter()
                        .collect(),
                    refusal: tree_str(m, "refusal").ok()?,
                    reasoning: rc.or(r),
                    tool_calls,
                    function_call: None,
                })
            }
        };
        choices.push(Choice {
            position,
            index: tree_count(c, "index").ok()?,
            parts,
            finish: tree_str(c, "finish_reason").ok()?,
            filtered: None,
        });
    }
    let top = Top {
        id: tree_str(body, "id").ok()?,
        model: tree_str(body, "model").ok()?,
        choices: Vec::new(),
        bare: usage.is_none() && body.get("choices").is_none(),
        usage,
        failure: None,
        prompt_filtered: None,
    };
    Some((top, choices))
}

// ------------------------------------------------------------ checked shapes

/// The members a chunk and a body share, checked in this order: `id`,
/// `model`, `choices` (an array), `usage` (and its event), `error` (and its
/// failure).
struct Top<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    choices: Vec<&'a RawValue>,
    usage: Option<Event>,
    failure: Option<Event>,
    /// What `prompt_filter_results`, then `prompt_annotations`, say (see [`Annotation`]).
    prompt_filtered: Option<Annotation>,
    /// None of `choices`, `usage`, `error`, `prompt_filter_results` and
    /// `prompt_annotations` is there (or each is null): a chunk that says
    /// nothing a chunk says.
    bare: bool,
}

fn top<'a>(data: &'a str, what: &str) -> Result<Top<'a>, CoreError> {
    if !data.trim_start().starts_with('{') {
        return Err(SHAPE.malformed(what, ROOT));
    }
    let raw: TopRaw<'a> = serde_json::from_str(data).map_err(|_| SHAPE.malformed(what, ROOT))?;
    let bare = raw.choices.is_none()
        && raw.usage.is_none()
        && raw.error.is_none()
        && raw.prompt_filter_results.is_none()
        && raw.prompt_annotations.is_none();
    let id = SHAPE.opt_str(raw.id, what, ROOT.key("id"))?;
    let model = SHAPE.opt_str(raw.model, what, ROOT.key("model"))?;
    let choices = SHAPE
        .opt_list(raw.choices, what, ROOT.key("choices"))?
        .unwrap_or_default();
    let usage = match raw.usage {
        Some(raw) => Some(usage(raw, what, ROOT.key("usage"))?),
        None => None,
    };
    let failure = match raw.error {
        Some(error) => {
            let mut failed = failure(SHAPE, error, what, ROOT.key("error"))?;
            // a string error (TGI) names its kind beside it: `"error_type": "overloaded"`
            if error.get().starts_with('"') {
                if let Some(kind) = SHAPE.opt_str(raw.error_type, what, ROOT.key("error_type"))? {
                    if let Event::ResponseFailed {
                        retryable,
                        error_type,
                        ..
                    } = &mut failed
                    {
                        *retryable = RETRYABLE_ERRORS.contains(&kind.as_ref());
                        *error_type = Some(kind.into_owned());
                    }
                }
            }
            Some(failed)
        }
        None => None,
    };
    let mut prompt_filtered = None;
    let members = [
        (raw.prompt_filter_results, "prompt_filter_results"),
        (raw.prompt_annotations, "prompt_annotations"),
    ];
    for (member, name) in members {
        let prompt_at = ROOT.key(name);
        let entries = SHAPE.opt_list(member, what, prompt_at)?;
        for (position, entry) in entries.unwrap_or_default().into_iter().enumerate() {
            let at = prompt_at.index(position);
            let p: PromptFilterRaw<'_> = SHAPE.obj(entry, what, at)?;
            let results_at = at.key("content_filter_results");
            if let Some(results) = p.content_filter_results {
                let note = filtered(SHAPE, results, what, results_at)?;
                prompt_filtered = first(prompt_filtered, note);
            }
        }
    }
    Ok(Top {
        id,
        model,
        choices,
        usage,
        failure,
        prompt_filtered,
        bare,
    })
}

/// The path of the first category of Azure's `content_filter_results` at
/// `at` that says `filtered: true` (categories in sorted order), else the
/// path of its first `error` (the filter did not run), or None (see
/// [`Annotation`]). Every category is an object (its `details` entries too)
/// or a list of objects, whose `filtered` is a boolean when present; the
/// results' own `error`, when not null, is an object.
pub(super) fn filtered(
    shape: Shape,
    raw: &RawValue,
    what: &str,
    at: Path<'_>,
) -> Result<Option<Annotation>, CoreError> {
    if !super::shape::is_object(raw) {
        return Err(shape.malformed(what, at));
    }
    let results: BTreeMap<String, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|_| shape.malformed(what, at))?;
    let base = at.render();
    let mut hit = None;
    let mut unscreened = None;
    for (category, value) in results {
        let where_ = format!("{base}.{category}");
        if category == "error" {
            if value.get() != "null" {
                if !super::shape::is_object(value) {
                    return Err(malformed_at(shape, what, &where_));
                }
                unscreened.get_or_insert(where_);
            }
            continue;
        }
        let mut entries: Vec<(String, &RawValue)> = Vec::new();
        if super::shape::is_array(value) {
            let list: Vec<&RawValue> = serde_json::from_str(value.get())
                .map_err(|_| malformed_at(shape, what, &where_))?;
            for (i, entry) in list.into_iter().enumerate() {
                entries.push((format!("{where_}[{i}]"), entry));
            }
        } else {
            let e = filter_entry(shape, value, what, &where_)?;
            entries.push((where_.clone(), value));
            if let Some(details) = e.details {
                if !super::shape::is_array(details) {
                    return Err(malformed_at(shape, what, &format!("{where_}.details")));
                }
                let list: Vec<&RawValue> = serde_json::from_str(details.get())
                    .map_err(|_| malformed_at(shape, what, &format!("{where_}.details")))?;
                for (i, entry) in list.into_iter().enumerate() {
                    entries.push((format!("{where_}.details[{i}]"), entry));
                }
            }
        }
        for (place, entry) in entries {
            let e = filter_entry(shape, entry, what, &place)?;
            let yes = match e.filtered {
                None => false,
                Some(f) => serde_json::from_str::<bool>(f.get())
                    .map_err(|_| malformed_at(shape, what, &format!("{place}.filtered")))?,
            };
            if e.error.is_some() && unscreened.is_none() {
                unscreened = Some(format!("{place}.error"));
            }
            if yes && hit.is_none() {
                hit = Some(place);
            }
        }
    }
    Ok(match (hit, unscreened) {
        (Some(path), _) => Some(Annotation { path, ran: true }),
        (None, Some(path)) => Some(Annotation { path, ran: false }),
        (None, None) => None,
    })
}

/// The error of a filter that did not run (an `error` at `place`): the
/// output was not screened, and asking again may get it screened.
pub(super) fn unscreened(place: &str) -> CoreError {
    let mut error = CoreError::new(
        Code::PROVIDER_ERROR,
        "the content filter did not run, so the output was not screened",
    );
    error.path = Some(place.to_owned());
    error.retryable = Some(true);
    error
}

/// One content-filter entry, an object, at the rendered path `place`.
fn filter_entry<'a>(
    shape: Shape,
    raw: &'a RawValue,
    what: &str,
    place: &str,
) -> Result<FilterEntryRaw<'a>, CoreError> {
    if !super::shape::is_object(raw) {
        return Err(malformed_at(shape, what, place));
    }
    serde_json::from_str(raw.get()).map_err(|_| malformed_at(shape, what, place))
}

/// The shape error of the field at the rendered path `place`.
fn malformed_at(shape: Shape, what: &str, place: &str) -> CoreError {
    let mut error = shape.malformed(what, ROOT);
    error.path = Some(place.to_owned());
    error
}

/// Chat `usage` -> canonical usage: the details objects, then the counts.
fn usage(raw: &RawValue, what: &str, at: Path<'_>) -> Result<Event, CoreError> {
    let u: UsageRaw<'_> = SHAPE.obj(raw, what, at)?;
    let prompt_at = at.key("prompt_tokens_details");
    let prompt: Option<PromptDetailsRaw<'_>> =
        SHAPE.opt_obj(u.prompt_tokens_details, what, prompt_at)?;
    let completion_at = at.key("completion_tokens_details");
    let completion: Option<CompletionDetailsRaw<'_>> =
        SHAPE.opt_obj(u.completion_tokens_details, what, completion_at)?;
    let input_tokens = SHAPE.opt_count(u.prompt_tokens, what, at.key("prompt_tokens"))?;
    let output_tokens = SHAPE.opt_count(u.completion_tokens, what, at.key("completion_tokens"))?;
    let cached_tokens = match prompt {
        Some(p) => SHAPE.opt_count(p.cached_tokens, what, prompt_at.key("cached_tokens"))?,
        None => None,
    };
    let reasoning_tokens = match completion {
        Some(c) => SHAPE.opt_count(
            c.reasoning_tokens,
            what,
            completion_at.key("reasoning_tokens"),
        )?,
        None => None,
    };
    Ok(Event::Usage(Usage {
        input_tokens,
        output_tokens,
        cached_tokens,
        reasoning_tokens,
    }))
}

/// One choice: `index`, its `delta` (`message` in a body), `finish_reason`,
/// then what the delta carries.
struct Choice<'a> {
    /// Where it sits in `choices`.
    position: usize,
    index: Option<u64>,
    parts: Option<Parts<'a>>,
    finish: Option<Cow<'a, str>>,
    /// What its `content_filter_results`, then `content_filter_result`, say (see [`Annotation`]).
    filtered: Option<Annotation>,
}

/// Why a choice carrying the other mode's member is refused (a chunk's
/// `message`, a body's `delta`).
fn other_mode(body: bool) -> &'static str {
    if body {
        "a response body's choice carries a delta, which only a stream chunk has, not its message"
    } else {
        "a chunk's choice carries a whole message, which only a response body has, not a delta"
    }
}

fn choice<'a>(
    raw: &'a RawValue,
    position: usize,
    body: bool,
    what: &str,
) -> Result<Choice<'a>, CoreError> {
    let choices_at = ROOT.key("choices");
    let at = choices_at.index(position);
    let c: ChoiceRaw<'a> = SHAPE.obj(raw, what, at)?;
    let index = SHAPE.opt_count(c.index, what, at.key("index"))?;
    let (field, name, other, other_name) = if body {
        (c.message, "message", c.delta, "delta")
    } else {
        (c.delta, "delta", c.message, "message")
    };
    // what the other mode's member would carry is never read: refused, not dropped
    if other.is_some_and(|raw| raw.get().trim() != "null") {
        return Err(invalid(what, other_mode(body), at.key(other_name)));
    }
    let delta_at = at.key(name);
    let delta: Option<DeltaRaw<'a>> = SHAPE.opt_obj(field, what, delta_at)?;
    let finish = SHAPE.opt_str(c.finish_reason, what, at.key("finish_reason"))?;
    let mut filtered_by = None;
    let members = [
        (c.content_filter_results, "content_filter_results"),
        (c.content_filter_result, "content_filter_result"),
    ];
    for (member, name) in members {
        if let Some(raw) = member {
            filtered_by = first(filtered_by, filtered(SHAPE, raw, what, at.key(name))?);
        }
    }
    let filtered = filtered_by;
    let parts = match delta {
        Some(d) => Some(parts(&d, what, delta_at)?),
        None => None,
    };
    Ok(Choice {
        position,
        index,
        parts,
        finish,
        filtered,
    })
}

/// One tool call of a delta: its index (or position), id, function name and
/// arguments, and where it sits in `tool_calls`.
struct CallPart<'a> {
    position: usize,
    index: u64,
    id: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
}

/// A legacy `function_call`: its name and arguments.
type NameAndArguments<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>);

/// What one delta (or a body's message) carries, shape-checked.
#[derive(Default)]
struct Parts<'a> {
    /// Content pieces in order: (is reasoning, text).
    content: Vec<(bool, Cow<'a, str>)>,
    refusal: Option<Cow<'a, str>>,
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Vec<CallPart<'a>>,
    function_call: Option<NameAndArguments<'a>>,
}

impl Parts<'_> {
    fn has_content(&self) -> bool {
        self.content.iter().any(|(_, t)| !t.is_empty())
            || self.refusal.as_ref().is_some_and(|r| !r.is_empty())
            || self.reasoning.as_ref().is_some_and(|r| !r.is_empty())
            || !self.tool_calls.is_empty()
            || self.function_call.is_some()
    }
}

/// `content`: a string, or (Mistral) an array of `text` / `thinking` parts.
fn content<'a>(
    raw: &'a RawValue,
    what: &str,
    at: Path<'_>,
    out: &mut Vec<(bool, Cow<'a, str>)>,
) -> Result<(), CoreError> {
    if !super::shape::is_array(raw) {
        out.push((false, SHAPE.req_str(Some(raw), what, at)?));
        return Ok(());
    }
    let list = SHAPE.opt_list(Some(raw), what, at)?.unwrap_or_default();
    for (i, raw) in list.into_iter().enumerate() {
        let part_at = at.index(i);
        let part: PartRaw<'a> = SHAPE.obj(raw, what, part_at)?;
        let kind = SHAPE.req_str(part.kind, what, part_at.key("type"))?;
        let text = SHAPE.opt_str(part.text, what, part_at.key("text"))?;
        let thinking_at = part_at.key("thinking");
        let mut thinking = Vec::new();
        let subs = SHAPE
            .opt_list(part.thinking, what, thinking_at)?
            .unwrap_or_default();
        for (j, raw) in subs.into_iter().enumerate() {
            let sub_at = thinking_at.index(j);
            let sub: TextRaw<'a> = SHAPE.obj(raw, what, sub_at)?;
            let text = SHAPE.opt_str(sub.text, what, sub_at.key("text"))?;
            thinking.push(text.unwrap_or(Cow::Borrowed("")));
        }
        match kind.as_ref() {
            "text" => match text {
                Some(t) => out.push((false, t)),
                None => return Err(SHAPE.malformed(what, part_at.key("text"))),
            },
            "thinking" => out.extend(thinking.into_iter().map(|t| (true, t))),
            other => {
                return Err(invalid(
                    what,
                    format!("content part type \"{other}\" is not known"),
                    part_at.key("type"),
                ))
            }
        }
    }
    Ok(())
}

/// A delta's members in order: `role` (the model's, when not null),
/// `content`, `refusal`, `reasoning_content`, `reasoning`, `tool_calls`,
/// `function_call`.
fn parts<'a>(d: &DeltaRaw<'a>, what: &str, at: Path<'_>) -> Result<Parts<'a>, CoreError> {
    model_role(d.role, "assistant", what, at.key("role"))?;
    let mut parts = Parts::default();
    if let Some(raw) = d.content {
        content(raw, what, at.key("content"), &mut parts.content)?;
    }
    parts.refusal = SHAPE.opt_str(d.refusal, what, at.key("refusal"))?;
    let rc = SHAPE
        .opt_str(d.reasoning_content, what, at.key("reasoning_content"))?
        .filter(|r| !r.is_empty());
    let r = SHAPE
        .opt_str(d.reasoning, what, at.key("reasoning"))?
        .filter(|r| !r.is_empty());
    if let (Some(a), Some(b)) = (&rc, &r) {
        if a != b {
            return Err(invalid(
                what,
                "reasoning and reasoning_content disagree",
                at.key("reasoning"),
            ));
        }
    }
    parts.reasoning = rc.or(r);
    let calls_at = at.key("tool_calls");
    let calls = SHAPE
        .opt_list(d.tool_calls, what, calls_at)?
        .unwrap_or_default();
    for (position, raw) in calls.into_iter().enumerate() {
        let call_at = calls_at.index(position);
        let call: CallRaw<'a> = SHAPE.obj(raw, what, call_at)?;
        let index = SHAPE.opt_count(call.index, what, call_at.key("index"))?;
        let fn_at = call_at.key("function");
        let function: Option<FnRaw<'a>> = SHAPE.opt_obj(call.function, what, fn_at)?;
        let id = SHAPE.opt_str(call.id, what, call_at.key("id"))?;
        let kind = SHAPE.opt_str(call.kind, what, call_at.key("type"))?;
        if let Some(kind) = kind.filter(|k| !k.is_empty() && k != "function") {
            // a custom tool's call, or one the package does not know
            return Err(located(
                CoreError::new(
                    Code::UNSUPPORTED_ITEM,
                    format!(
                        "{what}: a tool call of type \"{kind}\" is not one the package can \
                         represent; it may be a call the host must handle, so nothing in the \
                         response is decided"
                    ),
                ),
                call_at,
            ));
        }
        let (name, arguments) = match function {
            Some(f) => (
                SHAPE.opt_str(f.name, what, fn_at.key("name"))?,
                SHAPE.opt_str(f.arguments, what, fn_at.key("arguments"))?,
            ),
            None => (None, None),
        };
        parts.tool_calls.push(CallPart {
            position,
            index: index.unwrap_or(position as u64),
            id,
            name,
            arguments,
        });
    }
    let fc_at = at.key("function_call");
    let fc: Option<FnRaw<'a>> = SHAPE.opt_obj(d.function_call, what, fc_at)?;
    if let Some(f) = fc {
        parts.function_call = Some((
            SHAPE.opt_str(f.name, what, fc_at.key("name"))?,
            SHAPE.opt_str(f.arguments, what, fc_at.key("arguments"))?,
        ));
    }
    if d.audio.is_some() {
        // an answer the package cannot represent: never a half answer
        return Err(located(
            CoreError::new(
                Code::UNSUPPORTED_ITEM,
                format!(
                    "{what}: an audio answer is not one the package can represent; \
                     the answer would be cut, so nothing in the response is decided"
                ),
            ),
            at.key("audio"),
        ));
    }
    Ok(parts)
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

/// `choice{n}.`, the start of every item id.
fn choice_prefix(choice: u64) -> String {
    let mut id = String::with_capacity(32);
    id.push_str("choice");
    id.push_str(itoa::Buffer::new().format(choice));
    id.push('.');
    id
}

/// The start of a function call (the only kind a Chat call has).
fn function_call_started(item_id: String, call_id: String, name: &str, generated: bool) -> Event {
    Event::ToolCallStarted {
        item_id,
        call_id,
        name: name.to_owned(),
        call_id_generated: generated,
        call_kind: crate::core::events::CallKind::Function,
    }
}

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
    /// The path of the first `filtered: true` annotation.
    filtered: Option<String>,
}

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
            filtered: None,
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
        let mut id = choice_prefix(self.choice);
        id.push_str(name);
        *field = Some(id.clone());
        self.open.push(id.clone());
        out.push(Event::ItemStarted {
            item_id: id.clone(),
            kind,
            position: None,
        });
        id
    }

    /// Apply a checked delta; its tool calls too unless `with_calls` (a body
    /// starts each of its calls itself). `at` is where the delta sits.
    fn apply(
        &mut self,
        parts: &Parts<'_>,
        with_calls: bool,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if let Some(r) = &parts.reasoning {
            let id = self.open_item(0, out);
            out.push(Event::ReasoningDelta {
                item_id: id,
                delta: r.clone().into_owned(),
                signature: None,
            });
        }
        for (reasoning, text) in &parts.content {
            if text.is_empty() {
                continue;
            }
            let slot = if *reasoning { 0 } else { 1 };
            let item_id = self.open_item(slot, out);
            let delta = text.clone().into_owned();
            out.push(if *reasoning {
                Event::ReasoningDelta {
                    item_id,
                    delta,
                    signature: None,
                }
            } else {
                Event::TextDelta { item_id, delta }
            });
        }
        if let Some(r) = parts.refusal.as_deref().filter(|r| !r.is_empty()) {
            let id = self.open_item(2, out);
            out.push(Event::RefusalDelta {
                item_id: id,
                delta: r.to_owned(),
            });
        }
        if with_calls {
            let calls_at = at.key("tool_calls");
            for call in &parts.tool_calls {
                let call_at = calls_at.index(call.position);
                let fn_at = call_at.key("function");
                self.tool_delta(call, fn_at.key("name"), out)?;
            }
        }
        if let Some((name, arguments)) = &parts.function_call {
            let fc_at = at.key("function_call");
            self.legacy_delta(
                name.as_deref(),
                arguments.as_deref(),
                fc_at.key("name"),
                out,
            )?;
        }
        Ok(())
    }

    /// A new call; `at` is where its name sits (a call must have one).
    fn new_call(
        &mut self,
        call_id: Option<&str>,
        name: Option<&str>,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Call, CoreError> {
        let (item_id, call_id, generated, name) = self.call_names(call_id, name, at)?;
        out.push(function_call_started(
            item_id.clone(),
            call_id.clone(),
            name,
            generated,
        ));
        Ok(Call {
            item_id,
            call_id,
            name: name.to_owned(),
        })
    }

    /// The item id, call id (and whether it was generated) and name of a
    /// new call, which is opened; `at` is where its name sits (a call must
    /// have one).
    fn call_names<'n>(
        &mut self,
        call_id: Option<&str>,
        name: Option<&'n str>,
        at: Path<'_>,
    ) -> Result<(String, String, bool, &'n str), CoreError> {
        let name = match name {
            Some(n) if !n.is_empty() => n,
            _ => {
                return Err(invalid(
                    CHUNK,
                    "a tool call starts without a function name",
                    at,
                ))
            }
        };
        let k = self.ncalls;
        self.ncalls += 1;
        let mut item_id = choice_prefix(self.choice);
        item_id.push_str("tool_calls[");
        item_id.push_str(itoa::Buffer::new().format(k));
        item_id.push(']');
        let (call_id, generated) = match call_id {
            Some(c) if !c.is_empty() => (c.to_owned(), false),
            _ => match &self.response_id {
                Some(rid) => (format!("{rid}.call_{k}"), true),
                None => (format!("call_{k}"), true),
            },
        };
        self.open.push(item_id.clone());
        Ok((item_id, call_id, generated, name))
    }

    fn tool_delta(
        &mut self,
        part: &CallPart<'_>,
        name_at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let index = part.index;
        let call_id = part.id.as_deref();
        let name = part.name.as_deref();
        let reuse = match self.calls.get(&index) {
            None => true,
            Some(call) => call_id.is_some_and(|c| !c.is_empty() && c != call.call_id),
        };
        if reuse {
            // a new index, or the index reused by another call: a new call
            if let Some(old) = self.calls.remove(&index) {
                self.close(&old.item_id, out);
            }
            let call = self.new_call(call_id, name, name_at, out)?;
            self.calls.insert(index, call);
        } else if let Some(call) = self.calls.get(&index) {
            if let Some(n) = name.filter(|n| !n.is_empty() && *n != call.name) {
                return Err(CoreError::new(
                    Code::CALL_NAME_CHANGED,
                    format!(
                        "tool call {} was named \"{}\", then \"{n}\"",
                        call.call_id, call.name
                    ),
                ));
            }
        }
        let arguments = part.arguments.as_deref().filter(|a| !a.is_empty());
        if let (Some(a), Some(call)) = (arguments, self.calls.get(&index)) {
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
        name_at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if self.legacy.is_none() {
            let call = self.new_call(None, name, name_at, out)?;
            self.legacy = Some(call);
        } else if let Some(call) = &self.legacy {
            if let Some(n) = name.filter(|n| !n.is_empty() && *n != call.name) {
                return Err(CoreError::new(
                    Code::CALL_NAME_CHANGED,
                    format!(
                        "function call {} was named \"{}\", then \"{n}\"",
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

    /// A `filtered: true` annotation at `place`: the finish will be
    /// `content_filter`; after the finish, `CONTENT_FILTERED` at once. A
    /// filter that did not run: `PROVIDER_ERROR` at once, unless a filter
    /// already withheld output.
    fn filter(&mut self, note: &Annotation) -> Result<(), CoreError> {
        let place = note.path.as_str();
        if !note.ran {
            if self.filtered.is_some() {
                return Ok(());
            }
            return Err(unscreened(place));
        }
        if self.finished {
            let mut error = CoreError::new(
                Code::CONTENT_FILTERED,
                "the content filter withheld output after the finish_reason",
            );
            error.path = Some(place.to_owned());
            return Err(error);
        }
        if self.filtered.is_none() {
            self.filtered = Some(place.to_owned());
        }
        Ok(())
    }

    fn finish_with(&mut self, raw: &str, out: &mut Vec<Event>) {
        let mut reason = match raw {
            _ if self.filtered.is_some() => FinishReason::ContentFilter,
            "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Unknown,
        };
        if reason == FinishReason::Stop && self.refusal.is_some() {
            reason = FinishReason::Refusal;
        }
        // a finish_reason ends the choice: its items end with it, except
        // where the reason cuts them (length, content_filter); an unknown one
        // ends them too, so the response is refused by its finish reason
        // (UNKNOWN_FINISH_REASON), not named an item left open
        if matches!(
            reason,
            FinishReason::Stop
                | FinishReason::ToolCalls
                | FinishReason::Refusal
                | FinishReason::Unknown
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

    /// A chunk read the checked way, then acted on.
    fn chunk(&mut self, data: &str, out: &mut Vec<Event>) -> Result<(), CoreError> {
        // the whole chunk is shape-checked before any of it is acted on
        let top = top(data, CHUNK)?;
        let mut choices = Vec::with_capacity(top.choices.len());
        for (position, raw) in top.choices.iter().enumerate() {
            choices.push(choice(raw, position, false, CHUNK)?);
        }
        self.read_chunk(top, choices, out)
    }

    /// A chunk's members and choices, shape-checked, acted on.
    fn read_chunk(
        &mut self,
        top: Top<'_>,
        choices: Vec<Choice<'_>>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if top.bare {
            // another server's error object ({"object": "error", ...}, {"detail": ...}) is no chunk
            return Err(invalid(
                CHUNK,
                "the chunk has no choices, usage or error",
                ROOT.key("choices"),
            ));
        }
        no_repeated_choice(choices.iter().map(|c| c.index.unwrap_or(0)), "chunk")?;
        let rid = top.id.as_deref().filter(|r| !r.is_empty());
        if !self.started
            && (rid.is_some()
                || !choices.is_empty()
                || top.usage.is_some()
                || top.failure.is_some())
        {
            let model = top.model.as_deref().filter(|m| !m.is_empty());
            self.start(rid, model, out);
        }
        if let Some(f) = top.failure {
            // an error vetoes whatever the chunk's choices say
            out.push(f);
            return Ok(());
        }
        if let Some(place) = &top.prompt_filtered {
            self.filter(place)?;
        }
        let choices_at = ROOT.key("choices");
        for choice in &choices {
            let index = choice.index.unwrap_or(0);
            if index != self.choice {
                if self.choice_given {
                    continue;
                }
                return Err(CoreError::new(
                    Code::MULTIPLE_CHOICES,
                    format!(
                        "the stream has choice {index}, where only choice 0 is read without choice=; pass choice= to select one"
                    ),
                ));
            }
            if let Some(place) = &choice.filtered {
                self.filter(place)?;
            }
            let terminal = self.finished;
            if let Some(parts) = &choice.parts {
                if terminal && parts.has_content() {
                    return Err(CoreError::new(
                        Code::EVENT_AFTER_TERMINAL,
                        "content arrived after the choice's finish_reason",
                    ));
                }
                let at = choices_at.index(choice.position);
                self.apply(parts, true, at.key("delta"), out)?;
            }
            if let Some(finish) = &choice.finish {
                if terminal {
                    return Err(CoreError::new(
                        Code::EVENT_AFTER_TERMINAL,
                        "a second finish_reason for the same choice",
                    ));
                }
                self.finish_with(finish, out);
            }
        }
        if let Some(u) = top.usage {
            out.push(u);
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
        self.chunk(data, out)
    }

    fn map_tree_event(
        &mut self,
        _event: Option<&str>,
        data: &str,
        tree: &Tree<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if self.done {
            return Err(CoreError::new(
                Code::EVENT_AFTER_TERMINAL,
                "an event arrived after data: [DONE]",
            ));
        }
        match tree_read(tree.root(), "delta") {
            Some((top, choices)) => self.read_chunk(top, choices, out),
            None => self.chunk(data, out),
        }
    }

    fn end(&mut self, _out: &mut Vec<Event>) -> Result<(), CoreError> {
        Ok(())
    }

    fn reads_tree(&self) -> bool {
        true
    }

    fn map_body(
        &mut self,
        body: &str,
        tree: Option<&Tree<'_>>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let (top, mut choices) = match tree.and_then(|tree| tree_read(tree.root(), "message")) {
            Some(read) => read,
            None => {
                let top = top(body, BODY)?;
                let mut choices = Vec::with_capacity(top.choices.len());
                for (position, raw) in top.choices.iter().enumerate() {
                    choices.push(choice(raw, position, true, BODY)?);
                }
                (top, choices)
            }
        };
        self.start(
            top.id.as_deref().filter(|r| !r.is_empty()),
            top.model.as_deref().filter(|m| !m.is_empty()),
            out,
        );
        if let Some(f) = top.failure {
            // an error vetoes whatever the choices say
            out.push(f);
            return Ok(());
        }
        let choices_at = ROOT.key("choices");
        if choices.is_empty() {
            return Err(invalid(BODY, "the body has no choices", choices_at));
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
            .map(|c| c.index.unwrap_or(c.position as u64))
            .collect();
        if indexes.iter().filter(|i| **i == self.choice).count() > 1 {
            return Err(CoreError::new(
                Code::MULTIPLE_CHOICES,
                format!("the body has choice {} more than once", self.choice),
            ));
        }
        let Some(selected) = indexes
            .iter()
            .position(|i| *i == self.choice)
            .map(|at| choices.swap_remove(at))
        else {
            return Err(CoreError::new(
                Code::MULTIPLE_CHOICES,
                format!(
                    "choice {} is not among the choices {indexes:?}",
                    self.choice
                ),
            ));
        };
        let at = choices_at.index(selected.position);
        let Some(finish) = &selected.finish else {
            return Err(invalid(
                BODY,
                "the selected choice has no finish_reason",
                at.key("finish_reason"),
            ));
        };
        for place in [&top.prompt_filtered, &selected.filtered]
            .into_iter()
            .flatten()
        {
            self.filter(place)?;
        }
        if let Some(mut parts) = selected.parts {
            let message_at = at.key("message");
            self.apply(&parts, false, message_at, out)?;
            let calls_at = message_at.key("tool_calls");
            out.reserve(2 * parts.tool_calls.len() + 2);
            for call in std::mem::take(&mut parts.tool_calls) {
                let call_at = calls_at.index(call.position);
                let fn_at = call_at.key("function");
                let (item_id, call_id, generated, name) =
                    self.call_names(call.id.as_deref(), call.name.as_deref(), fn_at.key("name"))?;
                let arguments = call.arguments.filter(|a| !a.is_empty());
                out.push(function_call_started(
                    item_id.clone(),
                    call_id,
                    name,
                    generated,
                ));
                if let Some(a) = arguments {
                    out.push(Event::ToolArgumentsDelta {
                        item_id,
                        delta: a.into_owned(),
                    });
                }
            }
        }
        if let Some(u) = top.usage {
            out.push(u);
        }
        self.finish_with(finish, out);
        Ok(())
    }

    fn plain_body(&self, tree: &Tree<'_>) -> Option<PlainBody> {
        let (top, mut choices) = tree_read(tree.root(), "message")?;
        let choice = choices.pop().filter(|_| choices.is_empty())?;
        if choice.index.unwrap_or(choice.position as u64) != self.choice {
            return None;
        }
        let raw = choice.finish?;
        let reason = match raw.as_ref() {
            "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            _ => return None,
        };
        let parts = choice.parts?;
        if parts.reasoning.is_some() || parts.refusal.is_some() || parts.function_call.is_some() {
            return None;
        }
        let rid = top.id.filter(|r| !r.is_empty()).map(Cow::into_owned);
        let prefix = choice_prefix(self.choice);
        let text = match parts.content.into_iter().next() {
            Some((false, t)) if !t.is_empty() => Some((format!("{prefix}content"), t.into_owned())),
            Some((false, _)) | None => None,
            Some((true, _)) => return None,
        };
        let mut calls = Vec::with_capacity(parts.tool_calls.len());
        for (k, call) in parts.tool_calls.into_iter().enumerate() {
            let name = call.name.filter(|n| !n.is_empty())?;
            let mut item_id = String::with_capacity(prefix.len() + 16);
            item_id.push_str(&prefix);
            item_id.push_str("tool_calls[");
            item_id.push_str(itoa::Buffer::new().format(k));
            item_id.push(']');
            let (call_id, generated) = match call.id.filter(|c| !c.is_empty()) {
                Some(c) => (c.into_owned(), false),
                None => match &rid {
                    Some(rid) => (format!("{rid}.call_{k}"), true),
                    None => (format!("call_{k}"), true),
                },
            };
            calls.push(PlainCall {
                item_id,
                call_id,
                name: name.into_owned(),
                arguments: call.arguments.map(Cow::into_owned).unwrap_or_default(),
                call_id_generated: generated,
            });
        }
        if text.is_none() && calls.is_empty() {
            return None; // read as nothing: whose body it is, is for the pipeline to say
        }
        let usage = match top.usage {
            Some(Event::Usage(usage)) => Some(usage),
            Some(_) => return None,
            None => None,
        };
        Some(PlainBody {
            head: (
                rid,
                top.model.filter(|m| !m.is_empty()).map(Cow::into_owned),
            ),
            text,
            calls,
            finish: (reason, raw.into_owned()),
            usage,
        })
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::assemble::{body_response, Assembler};
    use crate::core::limits::Limits;

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

    /// A body's events and error, read from its tree and from its text.
    fn both_ways(body: &str) -> [Result<Vec<Event>, String>; 2] {
        let tree = crate::core::tree::parse(body, &crate::core::limits::Limits::default());
        assert!(tree.is_some(), "{body}");
        [tree.as_ref(), None].map(|tree| {
            let mut out = Vec::new();
            OpenAIChat::new(None)
                .map_body(body, tree, &mut out)
                .map(|()| out)
                .map_err(|e| format!("{e:?}"))
        })
    }

    /// Chat bodies of every shape the tree reader takes or declines.
    fn bodies() -> Vec<String> {
        let message = |m: &str| {
            format!(
                r#"{{"id":"r","model":"m","choices":[{{"index":0,"message":{m},"finish_reason":"tool_calls"}}]}}"#
            )
        };
        let call =
            r#"{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}"#;
        let mut bodies: Vec<String> = [
            r#"{"content":"hi \u00e9","refusal":null,"tool_calls":null}"#,
            r#"{"role":"user","content":"hi"}"#,
            r#"{"role":null,"content":"hi"}"#,
            r#"{"role":7,"content":"hi"}"#,
            r#"{"content":null,"reasoning_content":"r","reasoning":"r"}"#,
            r#"{"content":null,"reasoning_content":"r","reasoning":"s"}"#,
            r#"{"content":null,"reasoning_content":"","reasoning":"s"}"#,
            r#"{"content":"a","refusal":"no"}"#,
            r#"{"content":[{"type":"text","text":"a"}]}"#,
            r#"{"content":1}"#,
            r#"{"function_call":{"name":"f","arguments":"{}"}}"#,
            r#"{"function_call":null,"audio":null}"#,
            r#"{"audio":{"id":"x"}}"#,
            r#"{"tool_calls":{}}"#,
            r#"{"tool_calls":[1]}"#,
            r#"[]"#,
            "null",
        ]
        .iter()
        .map(|m| message(m))
        .collect();
        for variant in [
            call.to_owned(),
            call.replace(r#""type":"function""#, r#""type":"custom""#),
            call.replace(r#""type":"function""#, r#""type":"""#),
            call.replace(r#""type":"function""#, r#""type":null"#),
            call.replace(r#""type":"function""#, r#""type":1"#),
            call.replace(r#""id":"c""#, r#""id":"c","index":-0"#),
            call.replace(r#""id":"c""#, r#""id":"c","index":1.0"#),
            call.replace(r#""id":"c""#, r#""id":"c","index":3"#),
            call.replace(r#""id":"c""#, r#""id":null"#),
            call.replace(r#""id":"c""#, r#""id":7"#),
            call.replace(r#""name":"f""#, r#""name":null"#),
            call.replace(r#""arguments":"{\"a\": 1}""#, r#""arguments":{"a":1}"#),
            r#"{"id":"c","function":null}"#.to_owned(),
        ] {
            bodies.push(message(&format!(
                r#"{{"content":null,"tool_calls":[{variant},{call}]}}"#
            )));
        }
        let whole = message(&format!(r#"{{"tool_calls":[{call}]}}"#));
        for (from, to) in [
            (r#""id":"r""#, r#""id":1"#),
            (r#""id":"r""#, r#""id":null"#),
            (r#""model":"m""#, r#""model":["m"]"#),
            (r#""index":0"#, r#""index":"0""#),
            (r#""index":0"#, r#""index":-1"#),
            (r#""finish_reason":"tool_calls""#, r#""finish_reason":null"#),
            (
                r#""finish_reason":"tool_calls""#,
                r#""finish_reason":"length""#,
            ),
            (
                r#""finish_reason":"tool_calls""#,
                r#""finish_reason":"tool_calls","content_filter_results":{}"#,
            ),
            (
                r#""finish_reason":"tool_calls""#,
                r#""finish_reason":"tool_calls","content_filter_results":null"#,
            ),
            (
                r#""choices":["#,
                r#""error":null,"prompt_filter_results":null,"choices":["#,
            ),
            (r#""choices":["#, r#""error":{"message":"x"},"choices":["#),
            (
                r#""choices":["#,
                r#""prompt_filter_results":[],"choices":["#,
            ),
            (
                r#""choices":["#,
                r#""prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":true}}}],"choices":["#,
            ),
            (
                r#""finish_reason":"tool_calls""#,
                r#""finish_reason":"tool_calls","content_filter_results":{"hate":{"filtered":true}}"#,
            ),
            (
                r#""choices":["#,
                r#""usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":0}},"choices":["#,
            ),
            (
                r#""choices":["#,
                r#""usage":{"prompt_tokens":1.5},"choices":["#,
            ),
            (
                r#""choices":["#,
                r#""usage":{"prompt_tokens_details":null,"completion_tokens":null},"choices":["#,
            ),
            (
                r#""choices":["#,
                r#""usage":{"prompt_tokens_details":1},"choices":["#,
            ),
            (r#""choices":["#, r#""usage":[],"choices":["#),
            (r#""choices":[{"#, r#""choices":[{"index":1},{"#),
            (r#""choices":["#, r#""choices":null,"c":["#),
            (r#""choices":["#, r#""choices":{},"c":["#),
            (r#""choices":["#, r#""choices":[1],"c":["#),
        ] {
            bodies.push(whole.replacen(from, to, 1));
        }
        bodies.push(whole);
        bodies
    }

    #[test]
    fn a_body_reads_alike_from_its_tree_and_its_text() {
        for body in &bodies() {
            let [tree, text] = both_ways(body);
            assert_eq!(tree, text, "{body}");
        }
    }

    /// A body's response read as a plain body (None when it is not one),
    /// and the response or error its events give the assembler.
    fn plain_and_events(body: &str, limits: Limits) -> (Option<String>, Result<String, String>) {
        let tree = crate::core::tree::parse(body, &limits).expect("a tree");
        let mapper = OpenAIChat::new(None);
        let plain = mapper
            .plain_body(&tree)
            .and_then(|plain| body_response(&limits, plain, mapper.unknown_events()))
            .map(|response| format!("{response:?}"));
        let mut mapper = OpenAIChat::new(None);
        let mut out = Vec::new();
        let events = mapper
            .map_body(body, Some(&tree), &mut out)
            .and_then(|()| {
                let mut assembler = Assembler::new(limits);
                out.into_iter().try_for_each(|e| assembler.apply(e))?;
                assembler
                    .finish(mapper.unknown_events())
                    .map(|response| format!("{response:?}"))
            })
            .map_err(|e| format!("{e:?}"));
        (plain, events)
    }

    #[test]
    fn a_message_of_another_role_is_never_a_plain_body() {
        let body = r#"{"id":"r","model":"m","choices":[{"index":0,"message":{"role":"user","content":"hi"},"finish_reason":"stop"}]}"#;
        let (plain, events) = plain_and_events(body, Limits::default());
        assert_eq!(plain, None);
        let error = events.expect_err("refused");
        assert!(error.contains("MALFORMED_EVENT"), "{error}");
        assert!(error.contains("$.choices[0].message.role"), "{error}");
        for got in both_ways(body) {
            assert_eq!(got.expect_err("refused"), error);
        }
    }

    #[test]
    fn a_plain_body_gives_the_response_its_events_give() {
        let body = |message: &str, finish: &str| {
            format!(
                r#"{{"id":"r","model":"m","choices":[{{"index":0,"message":{message},"finish_reason":"{finish}"}}],"usage":{{"prompt_tokens":3}}}}"#
            )
        };
        let call = |id: &str, arguments: &str| {
            format!(
                r#"{{"id":"{id}","type":"function","function":{{"name":"f","arguments":"{arguments}"}}}}"#
            )
        };
        let two = format!(
            r#"{{"content":null,"tool_calls":[{},{}]}}"#,
            call("a", "{}"),
            call("b", r#"{\"x\": 1}"#)
        );
        let mut plain = Vec::new();
        for finish in [
            "stop",
            "tool_calls",
            "function_call",
            "length",
            "content_filter",
        ] {
            plain.push(body(&two, finish));
            plain.push(body(r#"{"content":"hi"}"#, finish));
            plain.push(body(
                &format!(r#"{{"content":"hi","tool_calls":[{}]}}"#, call("", "")),
                finish,
            ));
        }
        plain.push(body(&two, "tool_calls").replace(r#""id":"r","#, ""));
        plain.push(body(&two, "tool_calls").replace(r#""id":"a""#, r#""id":null"#));
        // each a plain body, and what its events give
        for text in &plain {
            let (fast, events) = plain_and_events(text, Limits::default());
            assert_eq!(
                fast.as_ref(),
                Some(events.as_ref().expect("a response")),
                "{text}"
            );
        }
        // not plain, or refused by the assembler: declined, never another answer
        let mut declined = vec![
            body(&two.replace(r#""id":"b""#, r#""id":"a""#), "tool_calls"),
            body(&two, "unknown"),
            body(r#"{"content":""}"#, "stop"),
            body(r#"{"content":null,"tool_calls":[]}"#, "stop"),
            body(r#"{"content":"a","refusal":"no"}"#, "stop"),
            body(r#"{"content":"hi","reasoning_content":"r"}"#, "stop"),
        ];
        declined.extend(bodies());
        for text in &declined {
            let (fast, events) = plain_and_events(text, Limits::default());
            if let Some(fast) = fast {
                assert_eq!(Ok(fast), events, "{text}");
            }
        }
        for text in &declined[..6] {
            assert_eq!(plain_and_events(text, Limits::default()).0, None, "{text}");
        }
        // each assembler limit, just met and just broken
        let text = body(&two, "tool_calls");
        let bound = |limits: Limits| plain_and_events(&text, limits);
        for (at, over) in [
            (
                Limits {
                    max_calls_per_response: 2,
                    ..Limits::default()
                },
                Limits {
                    max_calls_per_response: 1,
                    ..Limits::default()
                },
            ),
            (
                Limits {
                    max_items_per_response: 2,
                    ..Limits::default()
                },
                Limits {
                    max_items_per_response: 1,
                    ..Limits::default()
                },
            ),
            (
                Limits {
                    max_call_argument_bytes: 8,
                    ..Limits::default()
                },
                Limits {
                    max_call_argument_bytes: 7,
                    ..Limits::default()
                },
            ),
            (
                Limits {
                    max_response_bytes: 10,
                    ..Limits::default()
                },
                Limits {
                    max_response_bytes: 9,
                    ..Limits::default()
                },
            ),
            (
                Limits {
                    max_stream_events: 9,
                    ..Limits::default()
                },
                Limits {
                    max_stream_events: 8,
                    ..Limits::default()
                },
            ),
        ] {
            let (fast, events) = bound(at);
            assert_eq!(
                fast.as_ref(),
                Some(events.as_ref().expect("a response")),
                "{at:?}"
            );
            let (fast, events) = bound(over);
            assert_eq!(fast, None, "{over:?}");
            assert!(events.is_err(), "{over:?}");
        }
    }

    /// A stream's events and error, each chunk read from its tree and from its text.
    fn stream_both_ways(chunks: &[String]) -> [Vec<Result<Vec<Event>, String>>; 2] {
        let limits = crate::core::limits::Limits::default();
        [true, false].map(|trees| {
            let mut m = OpenAIChat::new(None);
            chunks
                .iter()
                .map(|data| {
                    let mut out = Vec::new();
                    let tree = crate::core::tree::parse(data, &limits).filter(|_| trees);
                    match &tree {
                        Some(tree) => m.map_tree_event(None, data, tree, &mut out),
                        None => m.map_event(None, data, &mut out),
                    }
                    .map(|()| out)
                    .map_err(|e| format!("{e:?}"))
                })
                .collect()
        })
    }

    #[test]
    fn a_stream_reads_alike_from_its_trees_and_its_text() {
        let start = chunk(
            r#"{"role":"assistant","tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}"#,
            "null",
        );
        let finish = chunk("{}", r#""tool_calls""#);
        let variants = [
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"\u00e9"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"type":"custom","function":{"arguments":"x"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":-0,"function":{"arguments":"x"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":1,"id":"d","function":{"name":"g","arguments":"{}"}}]}"#, "null"),
            chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":1}}]}"#, "null"),
            chunk(r#"{"content":"text","tool_calls":null}"#, "null"),
            chunk(r#"{"content":[{"type":"text","text":"a"}]}"#, "null"),
            chunk(r#"{"refusal":"no"}"#, "null"),
            chunk(r#"{"reasoning_content":"r","reasoning":"s"}"#, "null"),
            chunk(r#"{"function_call":{"name":"f"}}"#, "null"),
            chunk(r#"{"audio":{}}"#, "null"),
            chunk(r#"{"role":"tool","content":"text"}"#, "null"),
            chunk(r#"{"role":null,"content":"text"}"#, "null"),
            chunk("{}", r#""stop""#),
            chunk("null", "null"),
            chunk("[]", "null"),
            r#"{"id":"r","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#.to_owned(),
            r#"{"id":"r","choices":[],"usage":{"prompt_tokens":-1}}"#.to_owned(),
            r#"{"id":"r","usage":null}"#.to_owned(),
            r#"{"object":"error","message":"overloaded"}"#.to_owned(),
            r#"{"error":{"message":"x","type":"server_error"}}"#.to_owned(),
            r#"{"id":"r","choices":[{"index":0,"delta":{},"content_filter_results":{"hate":{"filtered":true}}}]}"#.to_owned(),
            r#"{"id":"r","choices":[{"index":1,"delta":{"content":"b"}}]}"#.to_owned(),
            r#"{"id":"r","choices":[{"index":0,"delta":{}},{"index":0,"delta":{}}]}"#.to_owned(),
            r#"{"id":"r","choices":{}}"#.to_owned(),
            r#"{"id":7,"choices":[]}"#.to_owned(),
            "[1]".to_owned(),
        ];
        for variant in &variants {
            for chunks in [
                vec![variant.clone()],
                vec![start.clone(), variant.clone(), finish.clone()],
                vec![start.clone(), finish.clone(), variant.clone()],
            ] {
                let [trees, texts] = stream_both_ways(&chunks);
                assert_eq!(trees, texts, "{chunks:?}");
            }
        }
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
