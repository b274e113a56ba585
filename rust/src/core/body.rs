//! Whole bodies named as bodies: what `normalize` says when a body is not a
//! finished response. The pure twin is `python/decisions/_pure/body.py`; the
//! rule that tells a provider from a body's shape is the one of
//! `python/decisions/providers.py` (`candidates`, `looks_like`), and a test
//! feeds both backends the same bodies to check they agree.

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::core::assemble::is_event_type;
use crate::core::errors::{Code, CoreError};

/// How many characters of a body that is not JSON an error quotes.
pub const QUOTE_CHARS: usize = 60;

/// Whether `start` (a body's first characters) begins as an event stream
/// does: a `data`, `event`, `id` or `retry` field, or a comment.
fn event_stream(start: &str) -> bool {
    start
        .split_once(':')
        .is_some_and(|(name, _)| matches!(name, "" | "data" | "event" | "id" | "retry"))
}

/// The provider ids in `PROVIDERS` order, then `"canonical"`, with the
/// title each is called by in messages.
const TITLES: [(&str, &str); 5] = [
    ("openai-chat", "OpenAI Chat Completions"),
    ("openai-responses", "OpenAI Responses"),
    ("anthropic", "Anthropic Messages"),
    ("gemini", "Google Gemini"),
    ("canonical", "canonical"),
];

const ANTHROPIC_TYPES: [&str; 7] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "ping",
];

/// The top-level members of an object that the rule reads.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<&'a RawValue>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    choices: bool,
    #[serde(default, deserialize_with = "present")]
    content: bool,
    #[serde(default, deserialize_with = "present")]
    candidates: bool,
    #[serde(rename = "promptFeedback", default, deserialize_with = "present")]
    prompt_feedback: bool,
    #[serde(rename = "usageMetadata", default, deserialize_with = "present")]
    usage_metadata: bool,
    #[serde(rename = "modelVersion", default, deserialize_with = "present")]
    model_version: bool,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
}

/// The string a raw value is, if it is one.
fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok())
}

/// Every provider whose wire shape the JSON object `text` matches, as
/// `candidates` of `python/decisions/providers.py` tells it (`stream` adds
/// `"canonical"` for a canonical event). Not an object: none.
fn candidates(text: &str, stream: bool) -> Vec<&'static str> {
    let Ok(shape) = serde_json::from_str::<Shape<'_>>(text) else {
        return Vec::new();
    };
    let kind = string(shape.ty);
    let kind = kind.as_deref();
    let object = string(shape.object);
    let object = object.as_deref();
    let mut found = Vec::new();
    if matches!(object, Some("chat.completion" | "chat.completion.chunk")) || shape.choices {
        found.push("openai-chat");
    }
    if object == Some("response") || kind.is_some_and(|k| k.starts_with("response.")) {
        found.push("openai-responses");
    }
    let error_object = shape.error.is_some_and(|e| e.get().starts_with('{'));
    if kind.is_some_and(|k| ANTHROPIC_TYPES.contains(&k))
        || (kind == Some("message") && shape.content)
        || (kind == Some("error") && error_object)
    {
        found.push("anthropic");
    }
    if shape.candidates || shape.prompt_feedback || shape.usage_metadata || shape.model_version {
        found.push("gemini");
    }
    if stream && kind.is_some_and(is_event_type) {
        found.push("canonical");
    }
    found
}

fn title(name: &str) -> &'static str {
    TITLES
        .iter()
        .find(|(id, _)| *id == name)
        .map_or("", |(_, title)| title)
}

fn with_article(title: &str) -> String {
    let article = if title.starts_with(['A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {title}")
}

/// What the whole `body` given to `provider` looks like when its shape is
/// another provider's and not `provider`'s ("an Anthropic Messages
/// response", "a JSON array of canonical events"); else None. A JSON array is
/// told by its first element, read as a stream event.
pub fn looks_like(provider: &str, body: &str) -> Option<String> {
    let array = body.trim_start().starts_with('[');
    let found = if array {
        let first = serde_json::from_str::<Vec<&RawValue>>(body).ok()?;
        candidates(first.first()?.get(), true)
    } else {
        candidates(body, false)
    };
    if found.is_empty() || found.contains(&provider) {
        return None;
    }
    Some(if array {
        let titles: Vec<&str> = found.iter().map(|name| title(name)).collect();
        format!("a JSON array of {} events", titles.join(" or "))
    } else {
        let titles: Vec<String> = found.iter().map(|name| with_article(title(name))).collect();
        format!("{} response", titles.join(" or "))
    })
}

/// `NOT_A_RESPONSE_BODY` when the body given to `provider` is recognisably
/// another provider's (see [`looks_like`]).
pub fn foreign_body(provider: &str, body: &str) -> Option<CoreError> {
    looks_like(provider, body).map(|what| {
        CoreError::new(
            Code::NOT_A_RESPONSE_BODY,
            format!("the body is not a response of provider '{provider}': this looks like {what}"),
        )
    })
}

/// What the whole `body` given to `provider` is when it has no provider's
/// shape at all (an object with none of the members any provider's response
/// has, an array whose first element is no provider's event); else None. An
/// empty array is a stream with no chunk yet, not finished rather than
/// shapeless.
pub fn shapeless(provider: &str, body: &str) -> Option<String> {
    let text = body.trim_start();
    if text.starts_with('[') {
        let items = serde_json::from_str::<Vec<&RawValue>>(body).ok()?;
        return match items.first() {
            None => None,
            Some(first) if candidates(first.get(), true).is_empty() => {
                Some("it is a JSON array of no provider's events".to_string())
            }
            Some(_) => None,
        };
    }
    (text.starts_with('{') && candidates(body, false).is_empty()).then(|| {
        format!(
            "it has none of the members {} response has",
            with_article(title(provider))
        )
    })
}

/// `NOT_A_RESPONSE_BODY` when the body given to `provider`, read as nothing
/// or without a finish signal, has no provider's shape at all (see
/// [`shapeless`]).
pub fn shapeless_body(provider: &str, body: &str) -> Option<CoreError> {
    shapeless(provider, body).map(|what| {
        CoreError::new(
            Code::NOT_A_RESPONSE_BODY,
            format!("the body is not a response of provider '{provider}': {what}"),
        )
    })
}

/// The error of a whole body for `error`, the pipeline's error for it: a body
/// the mapper of `provider` (None: the envelope rule failed first) could not
/// read that looks like another provider's is `NOT_A_RESPONSE_BODY` saying
/// what it looks like, as is one without a finish signal that has no
/// provider's shape at all; no finish signal is otherwise `BODY_NOT_FINISHED`, text that is
/// not JSON is `NOT_A_RESPONSE_BODY` (quoting its start); any other error is
/// kept.
pub fn body_error(provider: Option<&str>, body: &str, error: CoreError) -> CoreError {
    if let Some(provider) = provider {
        if matches!(error.code, Code::MALFORMED_EVENT | Code::NO_TERMINAL_EVENT) {
            let foreign = foreign_body(provider, body).or_else(|| {
                (error.code == Code::NO_TERMINAL_EVENT)
                    .then(|| shapeless_body(provider, body))
                    .flatten()
            });
            if let Some(foreign) = foreign {
                return foreign;
            }
        }
    }
    match error.code {
        Code::NO_TERMINAL_EVENT => CoreError::new(
            Code::BODY_NOT_FINISHED,
            "the body is not a finished response: it has no finish signal",
        ),
        Code::MALFORMED_EVENT
            if error.path.is_none() && error.message == "event data is not valid JSON" =>
        {
            let start: String = body.trim_start().chars().take(QUOTE_CHARS).collect();
            let what = if start.starts_with('<') {
                "an HTML or XML page"
            } else if event_stream(&start) {
                "an event stream (a stream is read with StreamAssembler)"
            } else {
                "text"
            };
            CoreError::new(
                Code::NOT_A_RESPONSE_BODY,
                format!("the body is not JSON but {what}: \"{start}\""),
            )
        }
        _ => error,
    }
}
