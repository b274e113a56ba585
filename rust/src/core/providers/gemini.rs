//! Google Gemini `generateContent` / `streamGenerateContent`. The pure twin
//! (`_pure/providers/gemini.py`) documents the mapping; this file follows it
//! check for check, in the same order.
//!
//! Terminal authority: Gemini sends no end event; the end of the stream (or
//! body) is the terminal. The finish reason is the last `finishReason` seen,
//! except that a veto (a `blockReason`, any finish but `STOP`) is kept
//! whatever follows; none at all is `unknown` (raw None). Content in a chunk
//! without a `finishReason` after one that gave it is `EVENT_AFTER_TERMINAL`.
//! An `error` object fails the response at once; any chunk after it is
//! `EVENT_AFTER_TERMINAL`.
//!
//! Vetoes (the twin's docstring has the table): `error` wins over every
//! candidate, a `blockReason` over any `finishReason`, a `blocked` safety
//! rating of the selected candidate or of `promptFeedback` turns `STOP` into
//! content_filter, and two candidates with one `index` are `MULTIPLE_CHOICES`.
//!
//! A streamed call (`partialArgs`) is bounded as it comes: once a lower bound
//! of its arguments' JSON text passes `max_call_argument_bytes` it is
//! `ARGUMENTS_TOO_LARGE` (see [`Mapper::limit_arguments`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::jsontext::Node;

use super::shape::{located, model_role, Path, Shape, ROOT};
use super::{jsontext, Mapper};
use crate::core::envelope::Seg as Field;
use crate::core::errors::{Code, CoreError};
use crate::core::events::{Event, FinishReason, ItemKind, Usage};
use crate::core::tree::Tree;

/// Why a part with no member (or only null ones) is refused: what it carried is not known.
const EMPTY_PART: &str = "gemini part has no member: what it carried is not known (an SDK that \
     drops the fields it does not know, as google-genai does, leaves such a part), so nothing in \
     the response is decided";

/// Deepest `partialArgs` jsonPath accepted.
pub const MAX_PATH_SEGMENTS: usize = 128;

/// The normalized finish reason of a Gemini `finishReason`.
pub fn finish_reason(raw: &str, has_calls: bool) -> FinishReason {
    let reason = match raw {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "LANGUAGE"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "MODEL_ARMOR" => FinishReason::ContentFilter,
        "MALFORMED_FUNCTION_CALL"
        | "MALFORMED_RESPONSE"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "MISSING_THOUGHT_SIGNATURE" => FinishReason::Error,
        _ => FinishReason::Unknown,
    };
    if reason == FinishReason::Stop && has_calls {
        FinishReason::ToolCalls
    } else {
        reason
    }
}

const RETRYABLE_STATUS: &[&str] = &[
    "RESOURCE_EXHAUSTED",
    "UNAVAILABLE",
    "INTERNAL",
    "DEADLINE_EXCEEDED",
];
const RETRYABLE_CODES: &[u64] = &[429, 500, 502, 503, 504];
const PART_KEYS: &[&str] = &["text", "thought", "thoughtSignature", "functionCall"];
/// Part keys of what Gemini runs itself, and metadata: counted, nothing for
/// the host to do; any other unknown key is `UNSUPPORTED_ITEM`.
const INFORMATIONAL_KEYS: &[&str] = &[
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
    "partMetadata",
    "videoMetadata",
    "audioMetadata",
    "documentMetadata",
    "spreadsheetMetadata",
    "speechMetadata",
    "mediaResolution",
    "mediaProcessing",
];
const VALUE_KEYS: &[&str] = &["stringValue", "numberValue", "boolValue", "nullValue"];

// ------------------------------------------------------------------ wire shapes

#[derive(Deserialize)]
struct ChunkRaw<'a> {
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(rename = "responseId", borrow)]
    response_id: Option<&'a RawValue>,
    #[serde(rename = "modelVersion", borrow)]
    model_version: Option<&'a RawValue>,
    #[serde(rename = "usageMetadata", borrow)]
    usage_metadata: Option<&'a RawValue>,
    #[serde(borrow)]
    candidates: Option<&'a RawValue>,
    #[serde(rename = "promptFeedback", borrow)]
    prompt_feedback: Option<&'a RawValue>,
}

/// The refusal of a chunk with none of the members a chunk carries.
const BARE_CHUNK: &str =
    "gemini chunk has none of candidates, promptFeedback, usageMetadata, modelVersion or error";

#[derive(Deserialize)]
struct CandidateRaw<'a> {
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(rename = "finishReason", borrow)]
    finish_reason: Option<&'a RawValue>,
    #[serde(rename = "safetyRatings", borrow)]
    safety_ratings: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RatingRaw<'a> {
    #[serde(borrow)]
    blocked: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ContentRaw<'a> {
    #[serde(borrow)]
    parts: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FeedbackRaw<'a> {
    #[serde(rename = "blockReason", borrow)]
    block_reason: Option<&'a RawValue>,
    #[serde(rename = "safetyRatings", borrow)]
    safety_ratings: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FunctionCallRaw<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    #[serde(rename = "partialArgs", borrow)]
    partial_args: Option<&'a RawValue>,
    #[serde(rename = "willContinue", borrow)]
    will_continue: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageRaw<'a> {
    #[serde(rename = "promptTokenCount", borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(rename = "candidatesTokenCount", borrow)]
    candidates: Option<&'a RawValue>,
    #[serde(rename = "thoughtsTokenCount", borrow)]
    thoughts: Option<&'a RawValue>,
    #[serde(rename = "cachedContentTokenCount", borrow)]
    cached: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ErrorRaw<'a> {
    #[serde(borrow)]
    code: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
}

/// An object read as its members (presence matters, including `null`).
type Members<'a> = BTreeMap<Cow<'a, str>, &'a RawValue>;

const SHAPE: Shape = Shape("gemini");

/// Whether a `safetyRatings` member (read as part of `what`) holds a rating
/// with `blocked: true`; every rating is read, and a malformed one is
/// `MALFORMED_EVENT` at its path.
fn any_blocked(ratings: Option<&RawValue>, what: &str, at: Path<'_>) -> Result<bool, CoreError> {
    let mut blocked = false;
    for (k, raw) in SHAPE
        .opt_list(ratings, what, at)?
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let rating_at = at.index(k);
        let rating: RatingRaw<'_> = SHAPE.obj(raw, "safetyRating", rating_at)?;
        blocked |= SHAPE.opt_bool(rating.blocked, "safetyRating", rating_at.key("blocked"))?;
    }
    Ok(blocked)
}

fn err(code: Code, message: impl Into<String>) -> CoreError {
    CoreError::new(code, message)
}

fn is_null(raw: &RawValue) -> bool {
    raw.get().trim() == "null"
}

/// A member that is absent or `null` reads as absent (as Python's `dict.get`).
fn member<'a>(members: &Members<'a>, key: &str) -> Option<&'a RawValue> {
    members.get(key).copied().filter(|raw| !is_null(raw))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// The segments of a `partialArgs` jsonPath: `$`, then `.key`, `[n]`,
/// `['key']` or `["key"]`.
fn parse_path(path: &str) -> Result<Vec<Seg>, CoreError> {
    let bad = || {
        err(
            Code::MALFORMED_EVENT,
            format!("gemini partialArgs jsonPath {path} is not a supported path"),
        )
    };
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'$') {
        return Err(bad());
    }
    let mut segments = Vec::new();
    let mut i = 1;
    let n = bytes.len();
    while i < n {
        if segments.len() >= MAX_PATH_SEGMENTS {
            return Err(err(
                Code::MALFORMED_EVENT,
                format!("gemini partialArgs jsonPath is deeper than {MAX_PATH_SEGMENTS} levels"),
            ));
        }
        match bytes.get(i) {
            Some(b'.') => {
                let rest = path.get(i + 1..).ok_or_else(bad)?;
                let len = rest.find(['.', '[']).unwrap_or(rest.len());
                if len == 0 {
                    return Err(bad());
                }
                segments.push(Seg::Key(rest.get(..len).ok_or_else(bad)?.to_owned()));
                i += 1 + len;
            }
            Some(b'[') => match bytes.get(i + 1) {
                Some(&quote @ (b'\'' | b'"')) => {
                    let rest = path.get(i + 2..).ok_or_else(bad)?;
                    let close = [char::from(quote), ']'].iter().collect::<String>();
                    let at = rest.find(close.as_str()).ok_or_else(bad)?;
                    segments.push(Seg::Key(rest.get(..at).ok_or_else(bad)?.to_owned()));
                    i += 2 + at + 2;
                }
                _ => {
                    let rest = path.get(i + 1..).ok_or_else(bad)?;
                    let at = rest.find(']').ok_or_else(bad)?;
                    let digits = rest.get(..at).ok_or_else(bad)?;
                    if digits.is_empty()
                        || digits.len() > 9
                        || !digits.bytes().all(|b| b.is_ascii_digit())
                    {
                        return Err(bad());
                    }
                    segments.push(Seg::Index(digits.parse().map_err(|_| bad())?));
                    i += 1 + at + 1;
                }
            },
            _ => return Err(bad()),
        }
    }
    match segments.first() {
        Some(Seg::Key(_)) => Ok(segments),
        _ => Err(bad()),
    }
}

/// Set `value` at `segments` under `root` (or append to the string there).
fn assign(root: &mut Node, segments: &[Seg], value: Node, append: bool) -> Result<(), CoreError> {
    let conflict = || {
        err(
            Code::MALFORMED_EVENT,
            "gemini partialArgs assign a path that conflicts with an earlier one",
        )
    };
    let Some((last, init)) = segments.split_last() else {
        return Err(conflict());
    };
    let mut node = root;
    for (i, seg) in init.iter().enumerate() {
        let fresh = match segments.get(i + 1) {
            Some(Seg::Key(_)) => Node::Object(BTreeMap::new()),
            _ => Node::Array(Vec::new()),
        };
        node = match seg {
            Seg::Key(key) => {
                let Node::Object(map) = node else {
                    return Err(conflict());
                };
                map.entry(key.clone()).or_insert(fresh)
            }
            Seg::Index(at) => {
                let Node::Array(items) = node else {
                    return Err(conflict());
                };
                if *at > items.len() {
                    return Err(conflict());
                }
                if *at == items.len() {
                    items.push(fresh);
                }
                items.get_mut(*at).ok_or_else(conflict)?
            }
        };
    }
    match last {
        Seg::Key(key) => {
            let Node::Object(map) = node else {
                return Err(conflict());
            };
            if append {
                match (map.get_mut(key), value) {
                    (Some(Node::String(s)), Node::String(more)) => s.push_str(&more),
                    _ => return Err(conflict()),
                }
            } else if map.contains_key(key) {
                return Err(conflict());
            } else {
                map.insert(key.clone(), value);
            }
        }
        Seg::Index(at) => {
            let Node::Array(items) = node else {
                return Err(conflict());
            };
            if append {
                match (items.get_mut(*at), value) {
                    (Some(Node::String(s)), Node::String(more)) => s.push_str(&more),
                    _ => return Err(conflict()),
                }
            } else if *at != items.len() {
                return Err(conflict());
            } else {
                items.push(value);
            }
        }
    }
    Ok(())
}

struct StreamedCall {
    item_id: String,
    call_id: String,
    /// The id the first part gave (None: the call id was generated).
    given: Option<String>,
    args: Node,
    continuing: Option<String>,
    /// A lower bound of the bytes of `args` as JSON text: each string
    /// piece's bytes, each other value 1, each key's bytes.
    size: usize,
}

/// Maps Gemini response chunks and bodies to canonical events.
pub struct GeminiMapper {
    unknown: BTreeMap<String, u64>,
    choice: Option<usize>,
    started: bool,
    terminal: bool,
    response_id: Option<String>,
    items: u64,
    calls: u64,
    open: Option<(ItemKind, String)>,
    call: Option<StreamedCall>,
    /// `max_call_argument_bytes`: a streamed call past it is refused at once.
    max_call_bytes: usize,
    usage: Option<Usage>,
    /// A safety rating of the selected candidate or the prompt said "blocked".
    blocked: bool,
    /// The finish seen so far: (raw, is a `blockReason`); a veto is kept.
    finish_seen: Option<(String, bool)>,
    /// This chunk's candidate gives no `finishReason`, an earlier one did:
    /// it may carry no content.
    after_finish: bool,
    /// A whole body is being read: a shapeless one is the body's
    /// `NOT_A_RESPONSE_BODY` to name, not a chunk's refusal.
    reading_body: bool,
}

impl GeminiMapper {
    pub fn new(choice: Option<usize>) -> GeminiMapper {
        GeminiMapper {
            unknown: BTreeMap::new(),
            choice,
            started: false,
            terminal: false,
            response_id: None,
            items: 0,
            calls: 0,
            open: None,
            call: None,
            max_call_bytes: usize::MAX,
            usage: None,
            blocked: false,
            finish_seen: None,
            after_finish: false,
            reading_body: false,
        }
    }

    fn count(&mut self, key: String) {
        super::unknown::count_unknown(&mut self.unknown, &key);
    }

    fn new_item(&mut self) -> String {
        let id = format!("item_{}", self.items);
        self.items += 1;
        id
    }

    fn close_open(&mut self, out: &mut Vec<Event>) {
        if let Some((_, item_id)) = self.open.take() {
            out.push(Event::ItemEnded { item_id });
        }
    }

    /// The open item of `kind`, opened (closing any other) if needed.
    fn item(&mut self, kind: ItemKind, out: &mut Vec<Event>) -> String {
        if let Some((open_kind, item_id)) = &self.open {
            if *open_kind == kind {
                return item_id.clone();
            }
        }
        self.close_open(out);
        let item_id = self.new_item();
        out.push(Event::ItemStarted {
            item_id: item_id.clone(),
            kind,
            position: None,
        });
        self.open = Some((kind, item_id.clone()));
        item_id
    }

    fn start_call(
        &mut self,
        fc: &FunctionCallRaw<'_>,
        name: String,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(String, String), CoreError> {
        self.close_open(out);
        let given = SHAPE
            .opt_str(fc.id, "functionCall", at.key("id"))?
            .filter(|id| !id.is_empty());
        let (call_id, generated) = match given {
            Some(id) => (id.into_owned(), false),
            None => match &self.response_id {
                Some(rid) => (format!("{rid}:call_{}", self.calls), true),
                None => (format!("call_{}", self.calls), true),
            },
        };
        self.calls += 1;
        let item_id = self.new_item();
        out.push(Event::ToolCallStarted {
            item_id: item_id.clone(),
            call_id: call_id.clone(),
            name,
            call_id_generated: generated,
            call_kind: crate::core::events::CallKind::Function,
        });
        Ok((item_id, call_id))
    }

    fn read_usage(raw: &RawValue) -> Result<Usage, CoreError> {
        let (what, at) = ("usageMetadata", ROOT.key("usageMetadata"));
        let u: UsageRaw<'_> = SHAPE.obj(raw, what, at)?;
        let candidates = SHAPE.opt_count(u.candidates, what, at.key("candidatesTokenCount"))?;
        let thoughts = SHAPE.opt_count(u.thoughts, what, at.key("thoughtsTokenCount"))?;
        let prompt = SHAPE.opt_count(u.prompt, what, at.key("promptTokenCount"))?;
        let cached = SHAPE.opt_count(u.cached, what, at.key("cachedContentTokenCount"))?;
        let output = match (candidates, thoughts) {
            (None, None) => None,
            (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
        };
        Ok(Usage {
            input_tokens: prompt,
            output_tokens: output,
            cached_tokens: cached,
            reasoning_tokens: thoughts,
        })
    }

    fn vetoed(&self) -> bool {
        matches!(&self.finish_seen, Some((raw, block)) if *block || raw != "STOP")
    }

    /// The end of the stream or body: the finish seen last (a veto kept).
    fn finish(&mut self, out: &mut Vec<Event>) {
        self.close_open(out);
        if let Some(usage) = self.usage {
            out.push(Event::Usage(usage));
        }
        let (finish_reason, raw_finish_reason) = match self.finish_seen.take() {
            None => (FinishReason::Unknown, None),
            Some((raw, true)) => (FinishReason::ContentFilter, Some(raw)),
            Some((raw, false)) => {
                let normalized = finish_reason(&raw, self.calls > 0);
                if self.blocked
                    && matches!(normalized, FinishReason::Stop | FinishReason::ToolCalls)
                {
                    (FinishReason::ContentFilter, Some("SAFETY".to_owned()))
                } else {
                    (normalized, Some(raw))
                }
            }
        };
        out.push(Event::ResponseFinished {
            finish_reason,
            raw_finish_reason,
        });
        self.terminal = true;
    }

    fn part(
        &mut self,
        raw: &RawValue,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let what = "part";
        let members: Members<'_> = SHAPE.obj(raw, what, at)?;
        let text = SHAPE.opt_str(member(&members, "text"), what, at.key("text"))?;
        let thought = SHAPE.opt_bool(member(&members, "thought"), what, at.key("thought"))?;
        let signature = SHAPE.opt_str(
            member(&members, "thoughtSignature"),
            what,
            at.key("thoughtSignature"),
        )?;
        let fc_at = at.key("functionCall");
        let fc: Option<FunctionCallRaw<'_>> =
            SHAPE.opt_obj(member(&members, "functionCall"), what, fc_at)?;
        // the keys are in code point order: the first unsupported one is named
        if let Some(key) = members.keys().find(|key| {
            !PART_KEYS.contains(&key.as_ref()) && !INFORMATIONAL_KEYS.contains(&key.as_ref())
        }) {
            return Err(located(
                err(
                    Code::UNSUPPORTED_ITEM,
                    format!(
                        "gemini part with \"{key}\" is not one the package can represent; it \
                         may be a call the host must handle or part of the answer, so nothing \
                         in the response is decided"
                    ),
                ),
                at,
            ));
        }
        if members.values().all(|value| value.get() == "null") {
            return Err(located(err(Code::UNSUPPORTED_ITEM, EMPTY_PART), at));
        }
        for key in members.keys() {
            if !PART_KEYS.contains(&key.as_ref()) {
                self.count(format!("part:{key}"));
            }
        }
        if fc.is_some() && (text.is_some() || thought) {
            return Err(located(
                err(
                    Code::MALFORMED_EVENT,
                    "gemini part holds both a functionCall and text",
                ),
                at,
            ));
        }
        let has_text = text.as_deref().is_some_and(|t| !t.is_empty());
        let has_signature = signature.as_deref().is_some_and(|s| !s.is_empty());
        if self.call.is_some() && fc.is_none() && (has_text || thought || has_signature) {
            return Err(located(
                err(
                    Code::MALFORMED_EVENT,
                    "gemini part interrupts a function call whose arguments are still streaming",
                ),
                at,
            ));
        }
        if self.after_finish && (fc.is_some() || has_text) {
            return Err(located(
                err(
                    Code::EVENT_AFTER_TERMINAL,
                    "gemini content arrived in a chunk without a finishReason after the chunk \
                     that gave one",
                ),
                at,
            ));
        }
        if thought {
            let item_id = self.item(ItemKind::Reasoning, out);
            if has_text || has_signature {
                out.push(Event::ReasoningDelta {
                    item_id,
                    delta: text.map(Cow::into_owned).unwrap_or_default(),
                    signature: signature.map(Cow::into_owned).filter(|s| !s.is_empty()),
                });
            }
            return Ok(());
        }
        if let Some(signature) = signature.filter(|s| !s.is_empty()) {
            self.close_open(out);
            let item_id = self.new_item();
            out.push(Event::ItemStarted {
                item_id: item_id.clone(),
                kind: ItemKind::Reasoning,
                position: None,
            });
            out.push(Event::ReasoningDelta {
                item_id: item_id.clone(),
                delta: String::new(),
                signature: Some(signature.into_owned()),
            });
            out.push(Event::ItemEnded { item_id });
        }
        if let Some(fc) = fc {
            self.function_call(&fc, fc_at, out)?;
        } else if let Some(text) = text.filter(|t| !t.is_empty()) {
            let item_id = self.item(ItemKind::Text, out);
            out.push(Event::TextDelta {
                item_id,
                delta: text.into_owned(),
            });
        }
        Ok(())
    }

    fn function_call(
        &mut self,
        fc: &FunctionCallRaw<'_>,
        at: Path<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        let what = "functionCall";
        let name = SHAPE.opt_str(fc.name, what, at.key("name"))?;
        let args: Option<Node> = match fc.args {
            None => None,
            Some(raw) => match jsontext::parse(raw.get()) {
                Ok(node @ Node::Object(_)) => Some(node),
                _ => return Err(SHAPE.malformed(what, at.key("args"))),
            },
        };
        let partial_at = at.key("partialArgs");
        let partial = SHAPE.opt_list(fc.partial_args, what, partial_at)?;
        let will_continue = SHAPE.opt_bool(fc.will_continue, what, at.key("willContinue"))?;
        if args.is_some() && partial.is_some() {
            // whole arguments and streamed ones: which are the call's is not said
            return Err(located(
                err(
                    Code::MALFORMED_EVENT,
                    "gemini functionCall holds both args and partialArgs",
                ),
                at,
            ));
        }
        let mut call = match self.call.take() {
            None => {
                let Some(name) = name.filter(|n| !n.is_empty()) else {
                    return Err(located(
                        err(
                            Code::MALFORMED_EVENT,
                            "gemini functionCall without a name starts no call",
                        ),
                        at.key("name"),
                    ));
                };
                let (item_id, call_id) = self.start_call(fc, name.into_owned(), at, out)?;
                let given = SHAPE
                    .opt_str(fc.id, what, at.key("id"))?
                    .filter(|id| !id.is_empty())
                    .map(|id| id.into_owned());
                let args = args.unwrap_or_else(|| Node::Object(BTreeMap::new()));
                if !will_continue && partial.as_ref().map_or(true, Vec::is_empty) {
                    out.push(Event::ToolArgumentsDelta {
                        item_id: item_id.clone(),
                        delta: jsontext::dumps(&args),
                    });
                    out.push(Event::ItemEnded { item_id });
                    return Ok(());
                }
                StreamedCall {
                    item_id,
                    call_id,
                    given,
                    args,
                    continuing: None,
                    size: 0,
                }
            }
            Some(call) => {
                if args.is_some() || name.as_deref().is_some_and(|n| !n.is_empty()) {
                    return Err(located(
                        err(
                            Code::MALFORMED_EVENT,
                            "gemini functionCall starts a new call while another is streaming",
                        ),
                        at,
                    ));
                }
                let again = SHAPE.opt_str(fc.id, what, at.key("id"))?;
                if let Some(again) = again.filter(|id| !id.is_empty()) {
                    if call.given.as_deref() != Some(again.as_ref()) {
                        // the result would be paired with another id than the provider's
                        return Err(located(
                            err(
                                Code::MALFORMED_EVENT,
                                format!(
                                    "gemini functionCall names call id \"{again}\" while {} streams",
                                    call.call_id
                                ),
                            ),
                            at.key("id"),
                        ));
                    }
                }
                call
            }
        };
        for (k, entry) in partial.unwrap_or_default().into_iter().enumerate() {
            Self::partial(&mut call, entry, partial_at.index(k))?;
            if call.size > self.max_call_bytes {
                return Err(err(
                    Code::ARGUMENTS_TOO_LARGE,
                    format!(
                        "the arguments of tool call \"{}\" exceed max_call_argument_bytes ({})",
                        call.call_id, self.max_call_bytes
                    ),
                ));
            }
        }
        if will_continue {
            self.call = Some(call);
        } else if let Some(path) = &call.continuing {
            // the rest of that string was lost: the arguments would be cut
            let message = format!(
                "gemini functionCall ends the call while its string at {path} was to continue"
            );
            return Err(located(err(Code::MALFORMED_EVENT, message), at));
        } else {
            out.push(Event::ToolArgumentsDelta {
                item_id: call.item_id.clone(),
                delta: jsontext::dumps(&call.args),
            });
            out.push(Event::ItemEnded {
                item_id: call.item_id,
            });
        }
        Ok(())
    }

    fn partial(call: &mut StreamedCall, raw: &RawValue, at: Path<'_>) -> Result<(), CoreError> {
        let what = "partialArgs entry";
        let entry: Members<'_> = SHAPE.obj(raw, what, at)?;
        let path = SHAPE.req_str(member(&entry, "jsonPath"), what, at.key("jsonPath"))?;
        let present: Vec<&str> = VALUE_KEYS
            .iter()
            .copied()
            .filter(|key| entry.contains_key(*key))
            .collect();
        let [key] = present.as_slice() else {
            return Err(SHAPE.malformed(what, at));
        };
        let value_at = at.key(key);
        let raw_value = entry
            .get(*key)
            .copied()
            .ok_or_else(|| SHAPE.malformed(what, value_at))?;
        let value = match *key {
            "stringValue" => match serde_json::from_str::<String>(raw_value.get()) {
                Ok(text) => Node::String(text),
                Err(_) => return Err(SHAPE.malformed(what, value_at)),
            },
            "numberValue" => match jsontext::number(raw_value.get().trim()) {
                Ok(text) => Node::Number(text),
                Err(_) => return Err(SHAPE.malformed(what, value_at)),
            },
            "boolValue" => match serde_json::from_str::<bool>(raw_value.get()) {
                Ok(b) => Node::Bool(b),
                Err(_) => return Err(SHAPE.malformed(what, value_at)),
            },
            _ => match serde_json::from_str::<Option<String>>(raw_value.get()) {
                Ok(None) => Node::Null,
                Ok(Some(text)) if text == "NULL_VALUE" => Node::Null,
                _ => return Err(SHAPE.malformed(what, value_at)),
            },
        };
        let will_continue =
            SHAPE.opt_bool(member(&entry, "willContinue"), what, at.key("willContinue"))?;
        let append = call.continuing.as_deref() == Some(path.as_ref());
        if append && *key != "stringValue" {
            return Err(SHAPE.malformed(what, value_at));
        }
        let path_at = at.key("jsonPath");
        let segments = parse_path(&path).map_err(|e| located(e, path_at))?;
        let value_bytes = match &value {
            Node::String(text) => text.len(),
            _ => 1,
        };
        let key_bytes = match segments.last() {
            Some(Seg::Key(key)) if !append => key.len(),
            _ => 0,
        };
        assign(&mut call.args, &segments, value, append).map_err(|e| located(e, path_at))?;
        call.size = call.size.saturating_add(value_bytes + key_bytes);
        call.continuing = if will_continue && *key == "stringValue" {
            Some(path.into_owned())
        } else {
            None
        };
        Ok(())
    }

    fn select<'a>(
        &self,
        candidates: &[&'a RawValue],
    ) -> Result<Option<(usize, CandidateRaw<'a>)>, CoreError> {
        let mut chosen = None;
        let mut seen = std::collections::HashSet::new();
        let candidates_at = ROOT.key("candidates");
        for (position, raw) in candidates.iter().enumerate() {
            let at = candidates_at.index(position);
            let candidate: CandidateRaw<'a> = SHAPE.obj(raw, "candidate", at)?;
            let index = SHAPE
                .opt_count(candidate.index, "candidate", at.key("index"))?
                .unwrap_or(position as u64);
            if !seen.insert(index) {
                return Err(err(
                    Code::MULTIPLE_CHOICES,
                    format!("gemini response has candidate {index} more than once"),
                ));
            }
            match self.choice {
                None => {
                    if index != 0 {
                        return Err(err(
                            Code::MULTIPLE_CHOICES,
                            "gemini response has several candidates; select one with choice=",
                        ));
                    }
                    chosen = Some((position, candidate));
                }
                Some(choice) => {
                    if u64::try_from(choice).ok() == Some(index) {
                        chosen = Some((position, candidate));
                    }
                }
            }
        }
        Ok(chosen)
    }

    fn failed(raw: &RawValue) -> Result<Event, CoreError> {
        let what = "error";
        let at = ROOT.key("error");
        let error: ErrorRaw<'_> = SHAPE.obj(raw, what, at)?;
        let code = SHAPE.opt_count(error.code, what, at.key("code"))?;
        let status = SHAPE
            .opt_str(error.status, what, at.key("status"))?
            .map(Cow::into_owned);
        let message = SHAPE
            .opt_str(error.message, what, at.key("message"))?
            .map(Cow::into_owned)
            .unwrap_or_default();
        let retryable = status
            .as_deref()
            .is_some_and(|s| RETRYABLE_STATUS.contains(&s))
            || code.is_some_and(|c| RETRYABLE_CODES.contains(&c));
        let name = match (&status, code) {
            (Some(s), _) if !s.is_empty() => s.clone(),
            (_, Some(c)) => c.to_string(),
            _ => "UNKNOWN".to_owned(),
        };
        Ok(Event::ResponseFailed {
            code: name,
            message,
            retryable,
            error_type: status,
        })
    }
}

/// Where a `functionCall`'s `args` object and its streamed `partialArgs`
/// sit, in a chunk and in a body.
const ARGUMENT_FIELDS: &[&[Field]] = &[
    &[
        Field::Key("candidates"),
        Field::Index,
        Field::Key("content"),
        Field::Key("parts"),
        Field::Index,
        Field::Key("functionCall"),
        Field::Key("args"),
    ],
    &[
        Field::Key("candidates"),
        Field::Index,
        Field::Key("content"),
        Field::Key("parts"),
        Field::Index,
        Field::Key("functionCall"),
        Field::Key("partialArgs"),
    ],
];

impl Mapper for GeminiMapper {
    fn limit_arguments(&mut self, max_bytes: usize) {
        self.max_call_bytes = max_bytes;
    }

    fn array_framing(&self) -> bool {
        true // `streamGenerateContent` without `alt=sse`
    }

    fn argument_fields(&self) -> &'static [&'static [Field]] {
        ARGUMENT_FIELDS
    }

    fn map_event(
        &mut self,
        _event: Option<&str>,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        if !data.trim_start().starts_with('{') {
            return Err(SHAPE.malformed("chunk", ROOT));
        }
        let chunk: ChunkRaw<'_> =
            serde_json::from_str(data).map_err(|_| SHAPE.malformed("chunk", ROOT))?;
        if self.terminal {
            return Err(err(
                Code::EVENT_AFTER_TERMINAL,
                "gemini chunk after the error that ended the response",
            ));
        }
        if let Some(error) = chunk.error {
            let failed = Self::failed(error)?;
            if !self.started {
                // the provider failed before responding: an id-less start first
                self.started = true;
                out.push(Event::ResponseStarted {
                    response_id: None,
                    model: None,
                });
            }
            out.push(failed);
            self.terminal = true;
            return Ok(());
        }
        if !self.reading_body
            && chunk.candidates.is_none()
            && chunk.prompt_feedback.is_none()
            && chunk.usage_metadata.is_none()
            && chunk.model_version.is_none()
        {
            // another server's error object ({"detail": ...}, {"message": ...}) is no chunk
            return Err(located(
                err(Code::MALFORMED_EVENT, BARE_CHUNK),
                ROOT.key("candidates"),
            ));
        }
        let what = "chunk";
        let response_id = SHAPE
            .opt_str(chunk.response_id, what, ROOT.key("responseId"))?
            .map(Cow::into_owned);
        let model = SHAPE
            .opt_str(chunk.model_version, what, ROOT.key("modelVersion"))?
            .map(Cow::into_owned);
        if !self.started {
            self.started = true;
            self.response_id = response_id.clone();
            out.push(Event::ResponseStarted { response_id, model });
        } else if let (Some(rid), Some(first)) = (&response_id, &self.response_id) {
            if rid != first {
                return Err(err(
                    Code::DUPLICATE_START,
                    format!("gemini chunk of response {rid} inside response {first}"),
                ));
            }
        }
        if let Some(raw) = chunk.usage_metadata {
            self.usage = Some(Self::read_usage(raw)?);
        }
        let candidates = SHAPE
            .opt_list(chunk.candidates, what, ROOT.key("candidates"))?
            .unwrap_or_default();
        let feedback_at = ROOT.key("promptFeedback");
        let feedback: Option<FeedbackRaw<'_>> =
            SHAPE.opt_obj(chunk.prompt_feedback, "promptFeedback", feedback_at)?;
        let block_reason = match &feedback {
            Some(f) => SHAPE
                .opt_str(
                    f.block_reason,
                    "promptFeedback",
                    feedback_at.key("blockReason"),
                )?
                .map(Cow::into_owned),
            None => None,
        };
        if let Some(f) = &feedback {
            let ratings_at = feedback_at.key("safetyRatings");
            self.blocked |= any_blocked(f.safety_ratings, "promptFeedback", ratings_at)?;
        }
        let candidate = self.select(&candidates)?;
        let mut finish = None;
        if let Some((position, candidate)) = candidate {
            let candidates_at = ROOT.key("candidates");
            let at = candidates_at.index(position);
            let content_at = at.key("content");
            let content: Option<ContentRaw<'_>> =
                SHAPE.opt_obj(candidate.content, "candidate", content_at)?;
            finish = SHAPE
                .opt_str(candidate.finish_reason, "candidate", at.key("finishReason"))?
                .map(Cow::into_owned);
            // (after a veto, the veto is what refuses the response)
            self.after_finish = finish.is_none() && self.finish_seen.is_some() && !self.vetoed();
            self.blocked |= any_blocked(
                candidate.safety_ratings,
                "candidate",
                at.key("safetyRatings"),
            )?;
            let parts_at = content_at.key("parts");
            let parts = match content {
                Some(content) => {
                    let parts = SHAPE
                        .opt_list(content.parts, "content", parts_at)?
                        .unwrap_or_default();
                    model_role(
                        content.role,
                        "model",
                        "gemini content",
                        content_at.key("role"),
                    )?;
                    parts
                }
                None => Vec::new(),
            };
            for (k, part) in parts.into_iter().enumerate() {
                self.part(part, parts_at.index(k), out)?;
            }
        }
        if !self.vetoed() {
            if let Some(raw) = block_reason {
                // a blocked prompt wins over any finishReason
                self.finish_seen = Some((raw, true));
            } else if let Some(raw) = finish {
                self.finish_seen = Some((raw, false));
            }
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Vec<Event>) -> Result<(), CoreError> {
        if self.started && !self.terminal {
            self.finish(out);
        }
        Ok(())
    }

    fn map_body(
        &mut self,
        body: &str,
        _tree: Option<&Tree<'_>>,
        out: &mut Vec<Event>,
    ) -> Result<(), CoreError> {
        self.reading_body = true;
        if body.trim_start().starts_with('[') {
            let chunks: Vec<&RawValue> =
                serde_json::from_str(body).map_err(|_| SHAPE.malformed("chunk", ROOT))?;
            for chunk in chunks {
                self.map_event(None, chunk.get(), out)?;
            }
        } else {
            self.map_event(None, body, out)?;
        }
        self.end(out)
    }

    fn unknown_events(&self) -> &BTreeMap<String, u64> {
        &self.unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("$.a[0]['b.c'][\"d\"].e").unwrap(),
            vec![
                Seg::Key("a".into()),
                Seg::Index(0),
                Seg::Key("b.c".into()),
                Seg::Key("d".into()),
                Seg::Key("e".into())
            ]
        );
        for bad in [
            "",
            "a",
            "$",
            "$[0]",
            "$..a",
            "$.a[x]",
            "$.a[",
            "$.a['b]",
            "$.a[1234567890]",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn assign_builds_and_appends() {
        let mut root = Node::Object(BTreeMap::new());
        assign(
            &mut root,
            &parse_path("$.a[0].b").unwrap(),
            Node::String("x".into()),
            false,
        )
        .unwrap();
        assign(
            &mut root,
            &parse_path("$.a[0].b").unwrap(),
            Node::String("y".into()),
            true,
        )
        .unwrap();
        assign(
            &mut root,
            &parse_path("$.a[1]").unwrap(),
            Node::Bool(true),
            false,
        )
        .unwrap();
        assert_eq!(jsontext::dumps(&root), r#"{"a":[{"b":"xy"},true]}"#);
        assert!(assign(&mut root, &parse_path("$.a[3]").unwrap(), Node::Null, false).is_err());
        assert!(assign(
            &mut root,
            &parse_path("$.a[0].b").unwrap(),
            Node::Null,
            false
        )
        .is_err());
    }
}
