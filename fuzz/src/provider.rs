//! Each provider mapper behind the whole chain, as `StreamAssembler` and
//! `normalize` drive it: the input is tried as a raw SSE stream (decoder ->
//! mapper -> assembler -> finish) in one chunk and in random chunks, and as a
//! whole body. Checked: no panic; the chunking does not change the outcome
//! (but see the one allowed difference in `check`);
//! the same input gives the same outcome twice; a response has every item
//! ended unless its finish reason truncates, and respects the limits.

use decisions::core::assemble::{Assembler, Kind, Response};
use decisions::core::errors::{Code, CoreError};
use decisions::core::events::FinishReason;
use decisions::core::limits::Limits;
use decisions::core::providers::{mapper_for, Mapper};
use decisions::core::sse::Decoder;

use crate::sse::{chunks, Rng};

type Summary = (Vec<(Kind, String, String, String, bool)>, FinishReason);
type Outcome = Result<Summary, Code>;

fn new_mapper(provider: &str, choice: Option<usize>) -> Box<dyn Mapper> {
    match mapper_for(provider, choice) {
        Some(m) => m,
        None => panic!("provider {provider:?} is not registered in core::providers::mapper_for"),
    }
}

fn summarise(response: &Response, limits: &Limits) -> Summary {
    let truncating = matches!(
        response.finish_reason,
        FinishReason::Length | FinishReason::ContentFilter | FinishReason::Refusal | FinishReason::Cancelled | FinishReason::Error
    );
    let mut total = 0;
    for item in &response.items {
        assert!(item.ended || truncating, "unended item in a {:?} response", response.finish_reason);
        total += item.text.len();
        if item.kind == Kind::ToolCall {
            assert!(item.text.len() <= limits.max_call_argument_bytes);
        }
    }
    assert!(total <= limits.max_response_bytes);
    let items = response
        .items
        .iter()
        .map(|i| (i.kind, i.item_id.clone(), i.call_id.clone(), i.text.clone(), i.ended))
        .collect();
    (items, response.finish_reason)
}

fn finish(assembler: &mut Assembler, mapper: &dyn Mapper, limits: &Limits) -> Outcome {
    match assembler.finish(mapper.unknown_events()) {
        Ok(response) => Ok(summarise(response, limits)),
        Err(e) => Err(e.code),
    }
}

/// The stream path, as `StreamAssembler.feed()` / `finish()` run it.
pub fn stream(provider: &str, choice: Option<usize>, pieces: &[&[u8]], limits: Limits) -> Outcome {
    let mut mapper = new_mapper(provider, choice);
    let mut decoder = Decoder::new(limits);
    let mut assembler = Assembler::new(limits);
    let mut sse = Vec::new();
    let mut mapped = Vec::new();
    let mut step = |piece: &[u8], mapper: &mut Box<dyn Mapper>, assembler: &mut Assembler| -> Result<(), CoreError> {
        sse.clear();
        decoder.feed(piece, &mut sse)?;
        for event in &sse {
            mapped.clear();
            mapper.map_event(event.event.as_deref(), &event.data, &mut mapped)?;
            for e in mapped.drain(..) {
                assembler.apply(e)?;
            }
        }
        Ok(())
    };
    for piece in pieces {
        if let Err(e) = step(piece, &mut mapper, &mut assembler) {
            let code = assembler.fail(e).code;
            assert_eq!(assembler.check_usable().map_err(|e| e.code), Err(Code::STREAM_FAILED));
            return Err(code);
        }
    }
    if !assembler.is_settled() {
        let mut tail = Vec::new();
        let end = decoder.finish().and_then(|()| mapper.end(&mut tail)).and_then(|()| {
            tail.into_iter().try_for_each(|e| assembler.apply(e))
        });
        if let Err(e) = end {
            return Err(assembler.fail(e).code);
        }
    }
    finish(&mut assembler, mapper.as_ref(), &limits)
}

/// The whole-body path, as `normalize()` runs it.
pub fn body(provider: &str, choice: Option<usize>, text: &str, limits: Limits) -> Outcome {
    let mut mapper = new_mapper(provider, choice);
    let mut events = Vec::new();
    mapper.map_body(text, &mut events).map_err(|e| e.code)?;
    let mut assembler = Assembler::new(limits);
    for e in events {
        assembler.apply(e).map_err(|e| e.code)?;
    }
    finish(&mut assembler, mapper.as_ref(), &limits)
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
        assert_eq!(first, body(provider, choice, text, limits), "the body path is not deterministic");
    }
}
