//! Whole bodies named as bodies: what `normalize` says when a body is not a
//! finished response. The pure twin is `python/decisions/_pure/body.py`.

use crate::core::errors::{Code, CoreError};

/// How many characters of a body that is not JSON an error quotes.
pub const QUOTE_CHARS: usize = 60;

/// The error of a whole body for `error`, the pipeline's error for it: no
/// finish signal is `BODY_NOT_FINISHED`, text that is not JSON is
/// `NOT_A_RESPONSE_BODY` (quoting its start); any other error is kept.
pub fn body_error(body: &str, error: CoreError) -> CoreError {
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
