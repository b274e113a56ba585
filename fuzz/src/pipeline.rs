//! The chain exactly as the bindings run it (`rust/src/py/assemble.rs`):
//! SSE decoder -> `check_envelope` -> `mapper.map_event` (a mapper's
//! `MALFORMED_EVENT` on data that is not JSON renamed as the binding renames
//! it) -> assembler, then at the end decoder finish -> `mapper.end` ->
//! assembler finish. The whole-body path is `check_envelope` ->
//! `mapper.map_body` -> assembler. Every fuzz target that drives a provider
//! goes through here, so a check the binding adds (or drops) is one edit.

use decisions::core::assemble::{check_envelope, Assembler, Response, DONE};
use decisions::core::errors::{Code, CoreError};
use decisions::core::events::Event;
use decisions::core::limits::Limits;
use decisions::core::providers::{mapper_for, Mapper};
use decisions::core::sse::Decoder;
use serde::de::IgnoredAny;

/// The mapper of a registered provider id.
pub fn new_mapper(provider: &str, choice: Option<usize>) -> Box<dyn Mapper> {
    match mapper_for(provider, choice) {
        Some(m) => m,
        None => panic!("provider {provider:?} is not registered in core::providers::mapper_for"),
    }
}

/// `not_json` of the binding: data that is not JSON at all is the plumbing's
/// own `MALFORMED_EVENT` ("event data is not valid JSON").
fn not_json(error: CoreError, data: &str) -> CoreError {
    if error.code == Code::MALFORMED_EVENT && data != DONE && serde_json::from_str::<IgnoredAny>(data).is_err() {
        return CoreError::new(Code::MALFORMED_EVENT, "event data is not valid JSON");
    }
    error
}

fn apply_all(assembler: &mut Assembler, mapped: &mut Vec<Event>) -> Result<(), CoreError> {
    let mut result = Ok(());
    for event in mapped.drain(..) {
        result = assembler.apply(event);
        if result.is_err() {
            break;
        }
    }
    mapped.clear();
    result
}

/// `StreamAssembler.feed(piece)` for each piece, then `finish()`: the
/// response, or the error code `feed` or `finish` raised. `inspect` sees the
/// response before it is summarised.
pub fn stream<T>(
    provider: &str,
    choice: Option<usize>,
    pieces: &[&[u8]],
    limits: Limits,
    inspect: impl FnOnce(&Response) -> T,
) -> Result<T, Code> {
    let mut mapper = new_mapper(provider, choice);
    let mut decoder = Decoder::new(limits);
    let mut assembler = Assembler::new(limits);
    let mut sse = Vec::new();
    let mut mapped = Vec::new();
    for piece in pieces {
        sse.clear();
        let mut result = decoder.feed(piece, &mut sse);
        if result.is_ok() {
            for event in &sse {
                result = check_envelope(&event.data)
                    .and_then(|()| {
                        let data = &event.data;
                        mapper.map_event(event.event.as_deref(), data, &mut mapped).map_err(|e| not_json(e, data))
                    })
                    .and_then(|()| apply_all(&mut assembler, &mut mapped));
                if result.is_err() {
                    break;
                }
            }
        }
        mapped.clear();
        if let Err(e) = result {
            let code = assembler.fail(e).code;
            assert_eq!(
                assembler.check_usable().map_err(|e| e.code),
                Err(Code::STREAM_FAILED),
                "a failed assembler must stay failed"
            );
            return Err(code);
        }
    }
    if !assembler.is_settled() {
        let end = decoder
            .finish()
            .and_then(|()| mapper.end(&mut mapped))
            .and_then(|()| apply_all(&mut assembler, &mut mapped));
        if let Err(e) = end {
            return Err(assembler.fail(e).code);
        }
    }
    let unknown = mapper.unknown_events().clone();
    assembler.finish(&unknown).map(inspect).map_err(|e| e.code)
}

/// `normalize(body, provider=...)`.
pub fn body<T>(
    provider: &str,
    choice: Option<usize>,
    text: &str,
    limits: Limits,
    inspect: impl FnOnce(&Response) -> T,
) -> Result<T, Code> {
    let mut mapper = new_mapper(provider, choice);
    let mut events = Vec::new();
    check_envelope(text)
        .and_then(|()| mapper.map_body(text, &mut events).map_err(|e| not_json(e, text)))
        .map_err(|e| e.code)?;
    let mut assembler = Assembler::new(limits);
    for event in events {
        assembler.apply(event).map_err(|e| e.code)?;
    }
    assembler.finish(mapper.unknown_events()).map(inspect).map_err(|e| e.code)
}
