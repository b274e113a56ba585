//! `decisions`: the Rust core of the Python package.
//!
//! [`core`] knows nothing of Python: limits, the strict JSON parser, SSE
//! framing, provider event mapping and stream assembly, with their error
//! codes. `py` (behind the `python` feature) is the thin binding layer that
//! turns core results into Python objects and core errors into the Python
//! exception classes defined in `decisions.errors`.

pub mod core;

/// The built extension's allocator: a body or a stream allocates many small
/// strings and vectors, which mimalloc serves from thread-local free lists.
/// Nothing allocated here is freed by Python or the other way round.
#[cfg(feature = "extension-module")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(feature = "python")]
mod py;
