//! Each provider mapper behind the whole chain, as `StreamAssembler` and
//! `normalize` drive it (through [`crate::pipeline`], in the bindings'
//! order): the input is tried as a raw SSE stream (decoder -> envelope check
//! -> mapper -> assembler -> finish) in one chunk and in random chunks, and
//! as a whole body. Checked: no panic; the chunking does not change the outcome
//! (but see the one allowed difference in `check`);
//! the same input gives the same outcome twice; a response has every item
//! ended unless its finish reason truncates, and respects the limits.

use decisions::core::assemble::{Kind, Response};
use decisions::core::errors::Code;
use decisions::core::events::FinishReason;
use decisions::core::limits::Limits;

use crate::pipeline;
use crate::sse::{chunks, Rng};

type Summary = (Vec<(Kind, String, String, String, bool)>, FinishReason);
type Outcome = Result<Summary, Code>;

pub(crate) fn summarise(response: &Response, limits: &Limits) -> Summary {
    let truncating = matches!(
        response.finish_reason,
        FinishReason::Length
            | FinishReason::ContentFilter
            | FinishReason::Refusal
            | FinishReason::Cancelled
            | FinishReason::Error
    );
    let mut total = 0;
    for item in &response.items {
        assert!(
            item.ended || truncating,
            "unended item in a {:?} response",
            response.finish_reason
        );
        total += item.text.len();
        if item.kind == Kind::ToolCall {
            assert!(item.text.len() <= limits.max_call_argument_bytes);
        }
    }
    assert!(total <= limits.max_response_bytes);
    let items = response
        .items
        .iter()
        .map(|i| {
            (
                i.kind,
                i.item_id.clone(),
                i.call_id.clone(),
                i.text.clone(),
                i.ended,
            )
        })
        .collect();
    (items, response.finish_reason)
}

/// The stream path, as `StreamAssembler.feed()` / `finish()` run it.
pub fn stream(provider: &str, choice: Option<usize>, pieces: &[&[u8]], limits: Limits) -> Outcome {
    pipeline::stream(provider, choice, pieces, limits, |r| summarise(r, &limits))
}

/// The whole-body path, as `normalize()` runs it.
pub fn body(provider: &str, choice: Option<usize>, text: &str, limits: Limits) -> Outcome {
    pipeline::body(provider, choice, text, limits, |r| summarise(r, &limits))
}

pub fn check(provider: &str, data: &[u8]) {
    let limits = Limits::default();
    let choice = (data.len() % 3 == 0).then_some(0);
    let whole = stream(provider, choice, &[data], limits);
    let mut rng = Rng::new(data.len() as u64 ^ 0x5DEE_CE66);
    let pieces = chunks(data, &mut rng, 64);
    let chunked = stream(provider, choice, &pieces, limits);
    match (&whole, &chunked) {
        // Allowed difference: a framing error (invalid UTF-8, a limit) in a
        // chunk is raised before the events decoded earlier in that same
        // chunk are mapped (both backends; `feed` returns nothing or raises).
        // Fed in smaller pieces, those events are mapped first and may fail
        // first. Either way the stream fails; only the code differs.
        (Err(code), Err(_)) if code.as_str().starts_with("SSE_") => {}
        _ => assert_eq!(whole, chunked, "chunking changed the outcome"),
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let first = body(provider, choice, text, limits);
        assert_eq!(
            first,
            body(provider, choice, text, limits),
            "the body path is not deterministic"
        );
    }
}
