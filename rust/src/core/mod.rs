//! The Python-free core: everything `cargo test` and the fuzz targets exercise.

pub mod errors;
pub mod limits;
