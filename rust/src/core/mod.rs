//! The Python-free core: everything `cargo test` and the fuzz targets exercise.

pub mod errors;
pub mod events;
pub mod json;
pub mod limits;
pub mod providers;
