//! What the two OpenAI mappers share (pure twin: `_pure/providers/_openai.py`):
//! the OpenAI-style error object, read with the shape readers of the mapper
//! that meets it, and `Obj`, the object-only wrapper of the Chat mapper's
//! one-pass typed read of its common chunk.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::shape::{Path, Shape, Str};
use crate::core::errors::CoreError;
use crate::core::events::Event;

/// Provider error types / codes that say asking again may succeed.
pub(crate) const RETRYABLE_ERRORS: &[&str] = &[
    "server_error",
    "rate_limit_exceeded",
    "rate_limit_error",
    "overloaded_error",
    "service_unavailable",
    "vector_store_timeout",
    "overloaded", // TGI's error_type
    // an HTTP status as the code (OpenRouter's mid-stream errors, Azure's "429")
    "429",
    "500",
    "502",
    "503",
    "504",
];

#[derive(Deserialize)]
struct ErrorRaw<'a> {
    #[serde(borrow)]
    code: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
}

/// An error code: a string or a 64-bit integer (`-0` is 0, as JSON reads it).
fn code_text(raw: &RawValue) -> Option<String> {
    if let Ok(text) = serde_json::from_str::<Str<'_>>(raw.get()) {
        return Some(text.0.into_owned());
    }
    if raw.get().trim() == "-0" {
        return Some("0".to_owned());
    }
    serde_json::from_str::<i64>(raw.get())
        .map(|n| n.to_string())
        .or_else(|_| serde_json::from_str::<u64>(raw.get()).map(|n| n.to_string()))
        .ok()
}

/// The `ResponseFailed` event an OpenAI-style `{"code", "message", "type"}`
/// error object at `at` stands for: its members checked in that order. A
/// string is the message alone (Hugging Face TGI streams
/// `{"error": "...", "error_type": "..."}`), code `error`.
pub(crate) fn failure(
    shape: Shape,
    raw: &RawValue,
    what: &str,
    at: Path<'_>,
) -> Result<Event, CoreError> {
    if let Ok(text) = serde_json::from_str::<Str<'_>>(raw.get()) {
        return Ok(Event::ResponseFailed {
            code: "error".to_owned(),
            message: text.0.into_owned(),
            retryable: false,
            error_type: None,
        });
    }
    let error: ErrorRaw<'_> = shape.obj(raw, what, at)?;
    let code = match error.code {
        None => None,
        Some(raw) => Some(code_text(raw).ok_or_else(|| shape.malformed(what, at.key("code")))?),
    };
    let message = shape
        .opt_str(error.message, what, at.key("message"))?
        .map(|m| m.into_owned())
        .unwrap_or_default();
    let error_type = shape
        .opt_str(error.kind, what, at.key("type"))?
        .map(|t| t.into_owned());
    let code = code
        .or_else(|| error_type.clone())
        .unwrap_or_else(|| "error".to_owned());
    let retryable = RETRYABLE_ERRORS.contains(&code.as_str())
        || error_type
            .as_deref()
            .is_some_and(|t| RETRYABLE_ERRORS.contains(&t));
    Ok(Event::ResponseFailed {
        code,
        message,
        retryable,
        error_type,
    })
}
