//! Shared binding helpers: reading `decisions.Limits`, raising the Python
//! error classes of `decisions.errors`.

#![allow(dead_code)]

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyDict;

use crate::core::errors::Code;
use crate::core::limits::{Limits, FIELD_NAMES};

static LIMITS_CLASS: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
static NEW_ERROR: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
static LIMITS_CHECKED: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

fn import_attr(
    py: Python<'_>,
    cell: &'static GILOnceCell<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<Py<PyAny>> {
    cell.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import(module)?.getattr(name)?.unbind())
    })
    .map(|obj| obj.clone_ref(py))
}

/// Read a `decisions.Limits` (or `None` for the defaults) into the core struct.
pub(crate) fn limits_from(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Limits> {
    Ok(limits_checked(py, obj)?.0)
}

/// A `decisions.Limits` (or `None` for the defaults) as the core struct,
/// beside the object its values were read from: `decisions.limits.checked`
/// of it (the pure twin reads the same), which refuses a field that is not
/// a positive int (ValueError) and answers a subclass's properties once.
pub(crate) fn limits_checked<'py>(
    py: Python<'py>,
    obj: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Limits, Option<Bound<'py, PyAny>>)> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok((Limits::default(), None));
    };
    let class = import_attr(py, &LIMITS_CLASS, "decisions.limits", "Limits")?;
    if !obj.is_instance(class.bind(py))? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "limits must be a decisions.Limits, not {}",
            obj.get_type().name()?
        )));
    }
    let checked = import_attr(py, &LIMITS_CHECKED, "decisions.limits", "checked")?
        .bind(py)
        .call1((obj,))?;
    let mut values = [0usize; FIELD_NAMES.len()];
    for (slot, name) in values.iter_mut().zip(FIELD_NAMES) {
        // each is a positive int now: one beyond usize is a bound no input
        // reaches, as usize::MAX is
        *slot = match checked.getattr(name)?.extract::<usize>() {
            Ok(value) => value,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) => usize::MAX,
            Err(e) => return Err(e),
        };
    }
    Ok((Limits::from_values(values), Some(checked)))
}

/// The Python exception for `code`, built by `decisions.errors.new_error` so
/// both backends construct errors the same way. `fields` are keyword
/// arguments of the error class (`offset`, `retryable`, `path`, ...).
pub(crate) fn new_error(
    py: Python<'_>,
    code: Code,
    message: Option<&str>,
    fields: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let factory = import_attr(py, &NEW_ERROR, "decisions.errors", "new_error")?;
        let err = factory.bind(py).call((code.as_str(), message), fields)?;
        Ok(PyErr::from_value(err))
    };
    build().unwrap_or_else(|e| e)
}

/// Input size (bytes) from which a call runs its Rust-only work with the GIL
/// released. Releasing costs ~0.1 µs when no other thread wants the GIL, and
/// a hand-over (a wake-up of the waiting thread, then waiting to get it back)
/// when one does; the pipeline's work is ~7 ns per byte (OpenAI Chat stream,
/// 8-byte deltas). Measured on 2 shared cores, always-release / keep-the-GIL
/// time, side by side (medians): one thread 1.02x at 256 B, 1.006x at 2 KiB;
/// two threads 1.21x at 256 B, 1.02x at 1 KiB, 0.73x at 2 KiB, 0.88x at
/// 4 KiB. So below 2 KiB a feed keeps the GIL: small feeds cost what they
/// cost before, and large ones let other threads run.
pub(crate) const RELEASE_AT: usize = 2048;

/// `work()`, with the GIL released when `size` (bytes of input) reaches
/// [`RELEASE_AT`]. `work` can hold no Python object (`Send` keeps them out).
/// The caller's `&mut self` stays borrowed meanwhile, so another thread
/// calling into the same object is refused by PyO3's borrow check
/// (`RuntimeError: Already borrowed`) instead of racing.
pub(crate) fn released<T: Send>(py: Python<'_>, size: usize, work: impl FnOnce() -> T + Send) -> T {
    if size >= RELEASE_AT {
        py.allow_threads(work)
    } else {
        work()
    }
}
