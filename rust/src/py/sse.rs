//! `decisions._native.SSEDecoder`.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::sync::Arc;

use crate::core::errors::CoreError;
use crate::core::sse::{Decoder, SseEvent};
use crate::py::common::{limits_from, released};
use crate::py::events::{core_err, sse_event, types};

/// The bytes of a `bytes`, `bytearray` or `memoryview` chunk, else TypeError
/// naming `what` (the method) as the pure twin does. `f` gets the bytes and
/// whether it may release the GIL while it reads them. A `bytes` is read in
/// place (it is immutable). A contiguous buffer longer than `limit` is read
/// in place with the GIL held (the core refuses it without reading on:
/// nothing is copied before the limit is checked); any other is copied
/// first, as the pure twin reads it: Python code that runs while `f` works
/// (the first call's imports, a `gc.callbacks` hook or a finalizer during
/// the objects it builds, another thread while the GIL is released) may
/// change the caller's buffer, under text `f` checked as UTF-8 once.
pub(crate) fn with_bytes<R>(
    chunk: &Bound<'_, PyAny>,
    what: &str,
    limit: usize,
    f: impl FnOnce(&[u8], bool) -> R,
) -> PyResult<R> {
    if let Ok(bytes) = chunk.downcast::<PyBytes>() {
        return Ok(f(bytes.as_bytes(), true));
    }
    if chunk.is_instance_of::<PyByteArray>() || chunk.is_instance_of::<pyo3::types::PyMemoryView>()
    {
        let ptr = chunk.as_ptr();
        // SAFETY: buffer access on a live object with the GIL held; the slice
        // is read only while the view is held and the GIL is not released.
        unsafe {
            let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::zeroed();
            if ffi::PyObject_GetBuffer(ptr, view.as_mut_ptr(), ffi::PyBUF_CONTIG_RO) == 0 {
                let mut view = view.assume_init();
                let len = view.len as usize;
                let bytes = if len > 0 {
                    std::slice::from_raw_parts(view.buf.cast::<u8>(), len)
                } else {
                    &[]
                };
                let copied;
                let (bytes, free) = if len > limit {
                    (bytes, false)
                } else {
                    copied = bytes.to_vec();
                    (&copied[..], true)
                };
                let result = if free {
                    ffi::PyBuffer_Release(&mut view);
                    f(bytes, true)
                } else {
                    let result = f(bytes, false);
                    ffi::PyBuffer_Release(&mut view);
                    result
                };
                return Ok(result);
            }
            let _ = PyErr::fetch(chunk.py());
        }
        // Not contiguous: read a copy.
        let copied = chunk.py().get_type::<PyBytes>().call1((chunk,))?;
        let bytes = copied.downcast::<PyBytes>()?;
        return Ok(f(bytes.as_bytes(), true));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{what} takes bytes, not {}",
        chunk.get_type().name()?
    )))
}

/// Incremental `text/event-stream` decoder: `feed` bytes in any chunking, get
/// the same `decisions.types.SSEEvent` list. A chunk that completes events
/// and then holds a framing error returns those events; the error is raised
/// by the next call, as when the chunk comes a byte at a time.
#[pyclass(module = "decisions._native")]
pub struct SSEDecoder {
    decoder: Decoder,
    /// max_stream_bytes: a longer chunk is refused before it is copied.
    max_stream_bytes: usize,
    /// The last id given to Python and its str: the events it applies to
    /// share one str, as they share the core's text.
    last_id: Option<(Arc<str>, Py<PyAny>)>,
    /// A framing error of a chunk that completed events before it: those
    /// events were returned, the error is raised by the next call.
    pending: Option<CoreError>,
}

impl SSEDecoder {
    fn events(
        &mut self,
        py: Python<'_>,
        result: Result<(), CoreError>,
        out: Vec<SseEvent>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        match result {
            Err(error) if out.is_empty() => return Err(core_err(py, error)),
            Err(error) => self.pending = Some(error), // raised after the events before it
            Ok(()) => {}
        }
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
        let limits = limits_from(py, limits)?;
        Ok(SSEDecoder {
            decoder: Decoder::new(limits),
            max_stream_bytes: limits.max_stream_bytes,
            last_id: None,
            pending: None,
        })
    }

    /// Consume a chunk; return the events it completed. A chunk of
    /// `RELEASE_AT` bytes or more is decoded with the GIL released; the
    /// events are built once it is back.
    fn feed(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        if let Some(error) = self.pending.take() {
            return Err(core_err(py, error));
        }
        self.decoder.check().map_err(|e| core_err(py, e))?;
        let mut out = Vec::new();
        let decoder = &mut self.decoder;
        let result = with_bytes(chunk, "feed()", self.max_stream_bytes, |bytes, free| {
            let size = if free { bytes.len() } else { 0 };
            released(py, size, || decoder.feed(bytes, &mut out))
        })?;
        self.events(py, result, out)
    }

    /// End of stream: raises `SSE_UNTERMINATED_EVENT` if an event or line is
    /// unfinished; bytes fed after it are `EVENT_AFTER_TERMINAL`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        if let Some(error) = self.pending.take() {
            return Err(core_err(py, error));
        }
        let result = self.decoder.finish();
        self.events(py, result, Vec::new())
    }
}
