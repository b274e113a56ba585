//! `decisions`: the Rust core of the Python package.
//!
//! [`core`] knows nothing of Python: limits, the strict JSON parser, SSE
//! framing, provider event mapping and stream assembly, with their error
//! codes. `py` (behind the `python` feature) is the thin binding layer that
//! turns core results into Python objects and core errors into the Python
//! exception classes defined in `decisions.errors`.

pub mod core;

#[cfg(feature = "python")]
mod py;
