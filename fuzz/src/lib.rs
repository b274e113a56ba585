//! Checks shared by the fuzz targets (each target is a thin `fuzz_target!`
//! over one of these), so the same checks can replay regression inputs in
//! `cargo test`.

pub mod assemble;
pub mod json;
pub mod pipeline;
pub mod provider;
pub mod sse;
pub mod structured;
