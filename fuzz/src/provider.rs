//! Each provider mapper behind the whole chain, as `StreamAssembler` and
//! `normalize` drive it (through [`crate::pipeline`], in the bindings'
//! order): the input is tried as a raw SSE stream (decoder -> envelope check
//! -> mapper -> assembler -> finish) in one chunk and in random chunks, and
//! as a whole body. Checked: no panic; the chunking does not change the outcome,
//! nor the first error when a framing fault follows the input in its chunk;
//! the same input gives the same outcome twice; a response has every item
//! ended unless its finish reason truncates, and respects the limits.

use decisions::core::assemble::{Kind, Response};
use decisions::core::errors::{Code, CoreError};
use decisions::core::events::FinishReason;
use decisions::core::limits::Limits;
use decisions::core::pipeline::Pipeline;

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

/// The first error of the stream path: its code, offset and path.
type FirstError = (Code, Option<usize>, Option<String>);

/// [`stream`], with the whole first error (code, offset, path).
fn first_error(
    provider: &str,
    choice: Option<usize>,
    pieces: &[&[u8]],
    limits: Limits,
) -> Result<Summary, FirstError> {
    let mut pipe = Pipeline::new(pipeline::new_mapper(provider, choice), limits, false);
    let error = |e: CoreError| (e.code, e.offset, e.path);
    for piece in pieces {
        pipe.feed(piece).map_err(error)?;
    }
    pipe.finish().map(|r| summarise(r, &limits)).map_err(error)
}

pub fn check(provider: &str, data: &[u8]) {
    let limits = Limits::default();
    let choice = (data.len() % 3 == 0).then_some(0);
    let whole = stream(provider, choice, &[data], limits);
    let mut rng = Rng::new(data.len() as u64 ^ 0x5DEE_CE66);
    let pieces = chunks(data, &mut rng, 64);
    let chunked = stream(provider, choice, &pieces, limits);
    // Events are mapped in byte order: an event complete before a framing
    // error is mapped (and its own error wins) before that error is raised,
    // so no chunking changes the outcome.
    assert_eq!(whole, chunked, "chunking changed the outcome");
    // The input, then a framing fault (invalid UTF-8 past the input, or the
    // stream bound one byte past it) in the same chunk: the same first error
    // (code, offset, path) as fed a byte at a time.
    if data.len() <= 4096 {
        let faulted = [data, b"\ndata: \xFF\n\n".as_slice()].concat();
        let bounded = Limits {
            max_stream_bytes: data.len() + 1,
            ..limits
        };
        for (input, limits) in [(&faulted[..], limits), (&faulted[..], bounded)] {
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            assert_eq!(
                first_error(provider, choice, &[input], limits),
                first_error(provider, choice, &bytes, limits),
                "an event before a framing fault in one chunk was not mapped first"
            );
        }
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
