//! The fuzz targets' entry into the core pipeline
//! (`decisions::core::pipeline`), the one the bindings drive: so a check the
//! binding has, the fuzz targets have too.

use decisions::core::assemble::Response;
use decisions::core::errors::Code;
use decisions::core::limits::Limits;
use decisions::core::pipeline::{self, Pipeline};
use decisions::core::providers::{mapper_for, Mapper};

/// The mapper of a registered provider id.
pub fn new_mapper(provider: &str, choice: Option<usize>) -> Box<dyn Mapper> {
    match mapper_for(provider, choice) {
        Some(m) => m,
        None => panic!("provider {provider:?} is not registered in core::providers::mapper_for"),
    }
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
    let mut pipe = Pipeline::new(new_mapper(provider, choice), limits, false);
    for piece in pieces {
        if let Err(e) = pipe.feed(piece) {
            assert_eq!(
                pipe.assembler().check_usable().map_err(|e| e.code),
                Err(Code::STREAM_FAILED),
                "a failed pipeline must stay failed"
            );
            return Err(e.code);
        }
    }
    pipe.finish().map(inspect).map_err(|e| e.code)
}

/// `normalize(body, provider=...)`.
pub fn body<T>(
    provider: &str,
    choice: Option<usize>,
    text: &str,
    limits: Limits,
    inspect: impl FnOnce(&Response) -> T,
) -> Result<T, Code> {
    pipeline::normalize(
        provider,
        &mut *new_mapper(provider, choice),
        text,
        limits,
        inspect,
    )
    .map_err(|e| e.code)
}
