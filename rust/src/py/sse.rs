//! `decisions._native.SSEDecoder`.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::sync::Arc;

use crate::core::errors::CoreError;
use crate::core::sse::{Decoder, SseEvent};
use crate::py::common::{limits_from, released};
use crate::py::events::{core_err, sse_event, types};

/// The bytes of a `bytes`, `bytearray` or `memoryview` chunk, else TypeError
/// naming `what` (the method) as the pure twin does. Only an immutable
/// `bytes` is read in place; the others are copied first, so `f` may run
/// with the GIL released while another thread changes the caller's buffer.
pub(crate) fn with_bytes<R>(
    chunk: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8]) -> R,
) -> PyResult<R> {
    if let Ok(bytes) = chunk.downcast::<PyBytes>() {
        return Ok(f(bytes.as_bytes()));
    }
    if let Ok(array) = chunk.downcast::<PyByteArray>() {
        return Ok(f(&array.to_vec()));
    }
    if chunk.is_instance_of::<pyo3::types::PyMemoryView>() {
        let copied = chunk.py().get_type::<PyBytes>().call1((chunk,))?;
        let bytes = copied.downcast::<PyBytes>()?;
        return Ok(f(bytes.as_bytes()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{what} takes bytes, not {}",
        chunk.get_type().name()?
    )))
}

/// Incremental `text/event-stream` decoder: `feed` bytes in any chunking, get
/// the same `decisions.types.SSEEvent` list.
#[pyclass(module = "decisions._native")]
pub struct SSEDecoder {
    decoder: Decoder,
    /// The last id given to Python and its str: the events it applies to
    /// share one str, as they share the core's text.
    last_id: Option<(Arc<str>, Py<PyAny>)>,
}

impl SSEDecoder {
    fn events(
        &mut self,
        py: Python<'_>,
        result: Result<(), CoreError>,
        out: Vec<SseEvent>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        result.map_err(|e| core_err(py, e))?;
        let t = types(py)?;
        out.into_iter()
            .map(|mut e| {
                let id = match e.id.take() {
                    None => py.None(),
                    Some(id) => match &self.last_id {
                        Some((same, str)) if Arc::ptr_eq(same, &id) => str.clone_ref(py),
                        _ => {
                            let str = PyString::new(py, &id).into_any().unbind();
                            self.last_id = Some((id, str.clone_ref(py)));
                            str
                        }
                    },
                };
                sse_event(py, t, e, id.into_bound(py))
            })
            .collect()
    }
}

#[pymethods]
impl SSEDecoder {
    #[new]
    #[pyo3(signature = (*, limits = None))]
    fn new(py: Python<'_>, limits: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(SSEDecoder {
            decoder: Decoder::new(limits_from(py, limits)?),
            last_id: None,
        })
    }

    /// Consume a chunk; return the events it completed. A chunk of
    /// `RELEASE_AT` bytes or more is decoded with the GIL released; the
    /// events are built once it is back.
    fn feed(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        self.decoder.check().map_err(|e| core_err(py, e))?;
        let mut out = Vec::new();
        let decoder = &mut self.decoder;
        let result = with_bytes(chunk, "feed()", |bytes| {
            released(py, bytes.len(), || decoder.feed(bytes, &mut out))
        })?;
        self.events(py, result, out)
    }

    /// End of stream: raises `SSE_UNTERMINATED_EVENT` if an event or line is unfinished.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let result = self.decoder.finish();
        self.events(py, result, Vec::new())
    }
}
