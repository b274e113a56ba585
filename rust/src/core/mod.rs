//! The Python-free core: everything `cargo test` and the fuzz targets exercise.
//!
//! Input reaches every line here, and a panic would reach Python as
//! `PanicException` (which `except Exception` does not catch): so no
//! `unwrap`, `expect`, `panic!` or slice indexing in the core. `cargo clippy`
//! enforces it; tests may use them (see `clippy.toml`).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod assemble;
pub mod body;
pub mod envelope;
pub mod errors;
pub mod events;
pub mod json;
pub mod jsonarray;
pub mod limits;
pub mod pipeline;
pub mod providers;
pub mod sse;
pub mod tree;
