//! The Python-free core: everything `cargo test` and the fuzz targets exercise.
//!
//! Input must never reach a panic here: `make lint` (clippy) denies unwrap,
//! expect, panic and slice indexing outside tests.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

pub mod errors;
pub mod events;
pub mod limits;
pub mod providers;
