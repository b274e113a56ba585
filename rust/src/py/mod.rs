//! The binding layer: Python objects in, core calls, Python objects out.

mod assemble;
mod common;
mod events;
mod json;
mod objects;
mod sse;

use pyo3::prelude::*;

use crate::core::errors::Code;
use crate::core::limits::Limits;

/// Every error code the core can produce, with its layer: `[(code, layer)]`.
#[pyfunction]
fn error_codes() -> Vec<(&'static str, &'static str)> {
    Code::ALL.iter().map(|c| (c.as_str(), c.layer())).collect()
}

/// The core's default limits as `{field: value}` (compared with `decisions.Limits()`).
#[pyfunction]
fn default_limits() -> Vec<(&'static str, usize)> {
    crate::core::limits::FIELD_NAMES
        .iter()
        .copied()
        .zip(Limits::default().values())
        .collect()
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(default_limits, m)?)?;
    json::add_loads(m)?;
    m.add(
        "PROVIDERS",
        pyo3::types::PyTuple::new(m.py(), crate::core::providers::PROVIDERS)?,
    )?;
    m.add_class::<sse::SSEDecoder>()?;
    m.add_class::<objects::Constructor>()?;
    m.add_class::<assemble::StreamAssembler>()?;
    m.add_function(wrap_pyfunction!(assemble::normalize, m)?)?;
    Ok(())
}
