//! `decisions._native.StreamAssembler` and `normalize`: the core
//! [`Pipeline`] (SSE decoder -> envelope rule -> provider mapper ->
//! assembler) with Python types in and out, and the provider `"canonical"`
//! for canonical events themselves.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};

use crate::core::assemble::{CanonicalMapper, Kind, Response, Status};
use crate::core::errors::{Code, CoreError};
use crate::core::events::CallKind;
use crate::core::limits::Limits;
use crate::core::pipeline::{self, Pipeline};
use crate::core::providers::{mapper_for, Mapper, PROVIDERS};
use crate::py::common::{limits_checked, released, RELEASE_AT};
use crate::py::events::{core_err, event_to_py, kw, obj, response_to_py, types};
use crate::py::sse::with_bytes;

const CANONICAL: &str = "canonical";

fn mapper(
    provider: &Bound<'_, PyAny>,
    choice: Option<usize>,
) -> PyResult<(String, Box<dyn Mapper>)> {
    let Ok(name) = provider.downcast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "provider must be a str, not {}",
            provider.get_type().name()?
        )));
    };
    // a str that is not UTF-8 (a lone surrogate) names no provider
    let name = name.to_str().unwrap_or_default().to_string();
    if name == CANONICAL {
        return Ok((name, Box::new(CanonicalMapper::default())));
    }
    match mapper_for(&name, choice) {
        Some(mapper) => Ok((name, mapper)),
        None => {
            let known: Vec<&str> = PROVIDERS.iter().copied().chain([CANONICAL]).collect();
            Err(PyValueError::new_err(format!(
                "unknown provider {}; known: {}",
                provider.repr()?,
                known.join(", ")
            )))
        }
    }
}

fn options<'py>(
    py: Python<'py>,
    limits: Option<&Bound<'py, PyAny>>,
    choice: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Limits, Option<Bound<'py, PyAny>>, Option<usize>)> {
    let (limits, checked) = limits_checked(py, limits)?;
    let choice = match choice.filter(|c| !c.is_none()) {
        None => None,
        Some(c) => {
            let value = if c.is_exact_instance_of::<pyo3::types::PyInt>() {
                c.extract::<u32>().ok()
            } else {
                None
            };
            match value {
                Some(v) => Some(v as usize),
                None => {
                    // an int is shown, anything else by its type: a value's repr may recurse
                    let shown = if c.is_exact_instance_of::<pyo3::types::PyInt>() {
                        c.repr()?.to_string()
                    } else {
                        c.get_type().name()?.to_string()
                    };
                    return Err(PyValueError::new_err(format!(
                        "choice must be an int from 0 to 2**32 - 1, or None, not {shown}"
                    )));
                }
            }
        }
    };
    Ok((limits, checked, choice))
}

fn malformed(message: &str) -> CoreError {
    CoreError::new(Code::MALFORMED_EVENT, message)
}

/// JSON text of a dict/list payload (`decisions._payload.payload_text`, as
/// in the pure twin): `MALFORMED_EVENT` when it is not JSON or the text is
/// not UTF-8 (a lone surrogate); any other exception (raised by the
/// payload's own code) propagates, as in the pure twin. None, before any of
/// it is written, for a payload whose text would pass `limit` bytes.
fn dumps(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    limit: usize,
) -> PyResult<Option<Result<String, CoreError>>> {
    let t = types(py)?;
    let text = match t.payload_text.bind(py).call1((value, limit)) {
        Ok(text) => text,
        Err(e) if e.is_instance(py, t.output_error.bind(py)) => {
            return Ok(Some(Err(malformed(
                "event payload is not JSON-serialisable",
            ))))
        }
        Err(e) => return Err(e),
    };
    if text.is_none() {
        return Ok(None);
    }
    Ok(Some(
        text_of(text.downcast::<PyString>()?).map(str::to_owned),
    ))
}

/// The UTF-8 text of a str, else `MALFORMED_EVENT` (a lone surrogate).
fn text_of<'a>(text: &'a Bound<'_, PyString>) -> Result<&'a str, CoreError> {
    text.to_str()
        .map_err(|_| malformed("event data is not valid UTF-8"))
}

/// Whether the str `text` has more than `limit` bytes of UTF-8, told from
/// its characters before CPython builds its UTF-8 form (and keeps it on the
/// str for the str's lifetime); a str with a lone surrogate is read as
/// before, and refused as not UTF-8 first, as in the pure twin.
fn str_too_large(text: &Bound<'_, PyString>, limit: usize) -> bool {
    use crate::py::json::{str_utf8_size, utf8_over};
    // SAFETY: a live str, with the GIL held (the caller has `text`). Its
    // length and kind settle most strs at once (no pass over the characters).
    unsafe {
        utf8_over(text.as_ptr(), limit)
            && str_utf8_size(text.as_ptr()).is_some_and(|size| size > limit)
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, CoreError> {
    std::str::from_utf8(bytes).map_err(|_| malformed("event data is not valid UTF-8"))
}

/// A tool call's snapshot state: the item it views, its
/// `decisions.stream.partial.PartialJSON`, the bytes of the arguments it has
/// seen, and the arguments of that length as a Python str (reused while no
/// new text came).
struct CallView {
    item_id: String,
    parser: Py<PyAny>,
    fed: usize,
    arguments: Py<PyAny>,
}

/// One provider stream in, one checked `decisions.types.NormalizedResponse` out.
///
/// `provider`, `state` and `abort()` go through `status` and need no lock, so
/// another thread may call them while a feed runs with the GIL released;
/// every other call takes `inner`'s lock without waiting, and is refused
/// with `RuntimeError` while another thread holds it (as the pure twin does).
#[pyclass(module = "decisions._native", frozen)]
pub struct StreamAssembler {
    provider: String,
    status: Arc<Status>,
    inner: Mutex<Inner>,
}

/// The assembler's state behind the lock.
struct Inner {
    provider: String,
    pipeline: Pipeline,
    /// The limits in force: a longer buffer is refused before it is copied.
    limits: Limits,
    /// The `decisions.Limits` given (None for the defaults), for the partial parsers.
    limits_obj: Option<Py<PyAny>>,
    /// Per item index: the incremental partial parser of a tool call (moved
    /// with its item when the finished response places an item before it).
    parsers: Vec<Option<CallView>>,
    /// The snapshot text as a Python str, with the number of text items and
    /// their bytes it was built from (items only grow: same counts, same text).
    text_cache: Option<(usize, usize, Py<PyAny>)>,
    response: Option<Py<PyAny>>,
}

impl StreamAssembler {
    /// The state behind the lock, or the refusal when another thread is in a call.
    fn lock(&self) -> PyResult<MutexGuard<'_, Inner>> {
        match self.inner.try_lock() {
            Ok(inner) => Ok(inner),
            // a panic in an earlier call left it as a finished call would
            Err(TryLockError::Poisoned(poisoned)) => Ok(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "Already borrowed: this StreamAssembler is in use by another thread",
            )),
        }
    }
}

impl Inner {
    fn usable(&self, py: Python<'_>) -> PyResult<()> {
        self.pipeline
            .assembler()
            .check_usable()
            .map_err(|e| core_err(py, e))
    }
}

#[pymethods]
impl StreamAssembler {
    #[new]
    #[pyo3(signature = (provider, *, limits = None, choice = None, keep_events = false))]
    fn new(
        py: Python<'_>,
        provider: &Bound<'_, PyAny>,
        limits: Option<&Bound<'_, PyAny>>,
        choice: Option<&Bound<'_, PyAny>>,
        keep_events: bool,
    ) -> PyResult<Self> {
        let (limits_value, checked, choice) = options(py, limits, choice)?;
        let (provider, mapper) = mapper(provider, choice)?;
        let limits_obj = checked.map(Bound::unbind);
        let limits = limits_value;
        let pipeline = Pipeline::new(mapper, limits, keep_events);
        Ok(StreamAssembler {
            provider: provider.clone(),
            status: pipeline.assembler().status(),
            inner: Mutex::new(Inner {
                provider,
                pipeline,
                limits,
                limits_obj,
                parsers: Vec::new(),
                text_cache: None,
                response: None,
            }),
        })
    }

    /// The provider id.
    #[getter]
    fn provider(&self) -> &str {
        &self.provider
    }

    /// `init`, `started`, `streaming`, `completed` or `failed`; read without
    /// the lock, so it answers while another thread feeds.
    #[getter]
    fn state(&self) -> &'static str {
        self.status.state().as_str()
    }

    /// Raw SSE bytes of the provider's stream, in any chunking. A chunk of
    /// `RELEASE_AT` bytes or more is decoded, mapped and assembled with the
    /// GIL released (another thread's call on this assembler meanwhile is
    /// refused, but `state`, `provider` and `abort()`).
    fn feed(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.lock()?.feed(py, data)
    }

    /// One already-decoded provider event (its SSE `data` and `event:` name).
    #[pyo3(signature = (payload, event = None))]
    fn feed_event(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        event: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.lock()?.feed_event(py, payload, event)
    }

    /// End of stream: the response, or the error that makes it incomplete.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.lock()?.finish(py)
    }

    /// A provisional view for UIs.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.lock()?.snapshot(py)
    }

    /// Cancel: later calls raise `StreamError(STREAM_CANCELLED)`, and a feed
    /// another thread is running stops with it at its next event.
    fn abort(&self) {
        self.status.cancel();
    }

    /// With `keep_events=True`: the canonical events produced since the last call.
    fn take_events(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        self.lock()?.take_events(py)
    }
}

impl Inner {
    fn feed(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.usable(py)?;
        let pipeline = &mut self.pipeline;
        let limit = self.limits.max_stream_bytes;
        let result = with_bytes(data, "feed()", limit, |bytes, free| {
            let size = if free { bytes.len() } else { 0 };
            released(py, size, || pipeline.feed(bytes))
        })?;
        result.map_err(|e| core_err(py, e))
    }

    fn feed_event(
        &mut self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        event: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.usable(py)?;
        let t = types(py)?;
        enum Payload<'a, 'py> {
            Json(&'a Bound<'py, PyAny>),
            Text(&'a Bound<'py, PyString>),
            Bytes,
        }
        let kind = if payload.is_instance(t.event_base.bind(py))? {
            if self.provider != CANONICAL {
                return Err(PyTypeError::new_err(
                    "canonical event objects are accepted only with provider='canonical'",
                ));
            }
            Payload::Json(payload)
        } else if payload.is_instance_of::<PyDict>() {
            Payload::Json(payload)
        } else if let Ok(text) = payload.downcast::<PyString>() {
            Payload::Text(text)
        } else if payload.is_instance_of::<PyBytes>()
            || payload.is_instance_of::<PyByteArray>()
            || payload.is_instance_of::<PyMemoryView>()
        {
            Payload::Bytes
        } else {
            return Err(PyTypeError::new_err(format!(
                "feed_event() takes a dict, str or bytes, not {}",
                payload.get_type().name()?
            )));
        };
        let name: Option<String> = match event.filter(|e| !e.is_none()) {
            None => None,
            Some(e) => match e.downcast::<PyString>() {
                Ok(s) => match s.to_str() {
                    Ok(s) => Some(s.to_string()),
                    Err(_) => {
                        let error = malformed("event name is not valid UTF-8");
                        return Err(core_err(py, self.pipeline.fail(error)));
                    }
                },
                Err(_) => {
                    return Err(PyTypeError::new_err(format!(
                        "event must be a str or None, not {}",
                        e.get_type().name()?
                    )))
                }
            },
        };
        let limit = self.limits.max_sse_event_bytes;
        let data = match kind {
            Payload::Json(value) => {
                let dict = if value.is_instance(t.event_base.bind(py))? {
                    value.call_method0("to_dict")?
                } else {
                    value.clone()
                };
                match dumps(py, &dict, limit)? {
                    Some(text) => text,
                    None => return Err(core_err(py, self.pipeline.event_too_large())),
                }
            }
            Payload::Text(text) if str_too_large(text, self.limits.max_sse_event_bytes) => {
                return Err(core_err(py, self.pipeline.event_too_large()));
            }
            Payload::Text(text) => text_of(text).map(str::to_owned),
            Payload::Bytes => {
                // read where it lies: an event past max_sse_event_bytes is
                // refused by the core before any of it is copied
                let pipeline = &mut self.pipeline;
                let result = with_bytes(payload, "feed_event()", limit, |b, free| match utf8(b) {
                    Ok(data) => {
                        let size = if free { data.len() } else { 0 };
                        released(py, size, || pipeline.feed_event(name.as_deref(), data))
                    }
                    Err(e) => Err(pipeline.fail(e)),
                })?;
                return result.map_err(|e| core_err(py, e));
            }
        };
        let result = match data {
            Ok(data) => {
                let pipeline = &mut self.pipeline;
                released(py, data.len(), || {
                    pipeline.feed_event(name.as_deref(), &data)
                })
            }
            Err(e) => Err(self.pipeline.fail(e)),
        };
        result.map_err(|e| core_err(py, e))
    }

    /// End of stream: the response, or the error that makes it incomplete.
    /// It keeps the GIL: its Rust work (the decoder's last line, the
    /// mapper's closing events, moving the items out) is a few microseconds,
    /// and building the response's Python objects, the bulk, needs the GIL.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.usable(py)?;
        if let Some(response) = &self.response {
            return Ok(response.clone_ref(py));
        }
        let response = self.pipeline.finish().map_err(|e| core_err(py, e))?;
        let t = types(py)?;
        let built = response_to_py(py, t, &self.provider, response)?;
        self.response = Some(built.clone_ref(py));
        Ok(built)
    }

    /// A provisional view for UIs: text so far, each call's arguments and
    /// their best-effort partial parse. Incremental: only new text is parsed,
    /// and the Python strs of what did not change are reused. Arguments that
    /// already break a limit raise the `ParseError` the complete arguments give.
    fn snapshot(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let assembler = self.pipeline.assembler();
        if assembler.is_cancelled() {
            return Err(core_err(
                py,
                CoreError::new(
                    Code::STREAM_CANCELLED,
                    "the stream was cancelled by the caller",
                ),
            ));
        }
        let t = types(py)?;
        let items = assembler.current_items();
        if self.parsers.len() < items.len() {
            self.parsers.resize_with(items.len(), || None);
        }
        // The finished response may place an item (a reasoning item only in
        // the terminal event) before streamed calls: each view follows its
        // item. A view found later in `parsers` is swapped in; ids are unique,
        // so none is found at a position already matched.
        for (index, item) in items.iter().enumerate() {
            let viewing = |slot: &Option<CallView>| matches!(slot, Some(view) if view.item_id == item.item_id);
            if matches!(self.parsers.get(index), Some(Some(_)))
                && !self.parsers.get(index).is_some_and(viewing)
            {
                match self.parsers.iter().position(viewing) {
                    Some(found) => self.parsers.swap(index, found),
                    None => {
                        if let Some(slot) = self.parsers.get_mut(index) {
                            *slot = None;
                        }
                    }
                }
            }
        }
        let (count, size) = items
            .iter()
            .filter(|item| item.kind == Kind::Text)
            .fold((0usize, 0usize), |(n, bytes), item| {
                (n + 1, bytes + item.text.len())
            });
        let text = match &self.text_cache {
            Some((n, bytes, text)) if *n == count && *bytes == size => text.clone_ref(py),
            _ => {
                let mut joined = String::with_capacity(size);
                for item in items.iter().filter(|item| item.kind == Kind::Text) {
                    joined.push_str(&item.text);
                }
                let text = obj(py, joined)?.unbind();
                self.text_cache = Some((count, size, text.clone_ref(py)));
                text
            }
        };
        let mut calls = Vec::new();
        for (item, slot) in items.iter().zip(self.parsers.iter_mut()) {
            if item.kind != Kind::ToolCall {
                continue;
            }
            if item.call_kind == CallKind::Custom {
                // a custom tool's input is text: nothing to parse
                let kwargs = kw(
                    py,
                    &[
                        ("item_id", obj(py, item.item_id.as_str())?),
                        ("call_id", obj(py, item.call_id.as_str())?),
                        ("name", obj(py, item.name.as_str())?),
                        ("arguments", obj(py, item.text.as_str())?),
                        ("partial", py.None().into_bound(py)),
                        ("ended", obj(py, item.ended)?),
                        ("call_kind", obj(py, "custom")?),
                    ],
                )?;
                calls.push(t.call_snapshot.bind(py).call((), Some(&kwargs))?);
                continue;
            }
            if slot.is_none() {
                let parser = match &self.limits_obj {
                    Some(limits) => t.partial_json.bind(py).call1((limits.bind(py),))?,
                    None => t.partial_json.bind(py).call0()?,
                };
                *slot = Some(CallView {
                    item_id: item.item_id.clone(),
                    parser: parser.unbind(),
                    fed: 0,
                    arguments: obj(py, "")?.unbind(),
                });
            }
            let Some(CallView {
                parser,
                fed,
                arguments,
                ..
            }) = slot.as_mut()
            else {
                continue;
            };
            let parser = parser.bind(py);
            let failed = |parser: &Bound<'_, PyAny>| {
                parser.getattr(intern!(py, "failure")).map(|f| !f.is_none())
            };
            if failed(parser)?
                && parser
                    .call_method1(intern!(py, "settled"), (item.text.len(),))?
                    .is_truthy()?
            {
                // the error was built when the limit was found: no new text is copied
                return Err(PyErr::from_value(
                    parser.call_method1(intern!(py, "error"), ("",))?,
                ));
            }
            if let Some(new) = item.text.get(*fed..).filter(|s| !s.is_empty()) {
                if let Err(e) = parser.call_method1(intern!(py, "feed"), (new,)) {
                    // stopped part way (a KeyboardInterrupt, a MemoryError): how
                    // much it read is unknown, so the next snapshot starts afresh
                    *slot = None;
                    return Err(e);
                }
                *fed = item.text.len();
                *arguments = obj(py, item.text.as_str())?.unbind();
            }
            if failed(parser)? {
                let path = format!("$.calls[{}].arguments", calls.len());
                let error =
                    parser.call_method1(intern!(py, "error"), (arguments.bind(py), path))?;
                return Err(PyErr::from_value(error));
            }
            let partial = parser.call_method0(intern!(py, "value"))?;
            let kwargs = kw(
                py,
                &[
                    ("item_id", obj(py, item.item_id.as_str())?),
                    ("call_id", obj(py, item.call_id.as_str())?),
                    ("name", obj(py, item.name.as_str())?),
                    ("arguments", arguments.bind(py).clone()),
                    ("partial", partial),
                    ("ended", obj(py, item.ended)?),
                    ("call_kind", obj(py, item.call_kind.as_str())?),
                ],
            )?;
            calls.push(t.call_snapshot.bind(py).call((), Some(&kwargs))?);
        }
        let kwargs = kw(
            py,
            &[
                ("provider", obj(py, self.provider.as_str())?),
                ("response_id", obj(py, assembler.response_id())?),
                ("model", obj(py, assembler.model())?),
                ("text", text.into_bound(py)),
                ("calls", PyTuple::new(py, calls)?.into_any()),
                ("state", obj(py, assembler.state().as_str())?),
            ],
        )?;
        Ok(t.response_snapshot
            .bind(py)
            .call((), Some(&kwargs))?
            .unbind())
    }

    fn take_events(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let Some(events) = self.pipeline.take_events() else {
            return Err(PyValueError::new_err(
                "take_events() needs StreamAssembler(..., keep_events=True)",
            ));
        };
        let t = types(py)?;
        events.iter().map(|e| event_to_py(py, t, e)).collect()
    }
}

/// A whole non-streaming response body -> `decisions.types.NormalizedResponse`.
#[pyfunction]
#[pyo3(signature = (body, /, *, provider, limits = None, choice = None))]
pub fn normalize(
    py: Python<'_>,
    body: &Bound<'_, PyAny>,
    provider: &Bound<'_, PyAny>,
    limits: Option<&Bound<'_, PyAny>>,
    choice: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let (limits, _, choice) = options(py, limits, choice)?;
    let (provider, mapper) = mapper(provider, choice)?;
    if let Ok(text) = body.downcast::<PyString>() {
        if str_too_large(text, limits.max_sse_event_bytes) {
            return Err(core_err(py, pipeline::body_too_large(&*mapper, limits)));
        }
    }
    let written = if body.is_instance_of::<PyDict>() || body.is_instance_of::<PyList>() {
        match dumps(py, body, limits.max_sse_event_bytes)? {
            Some(text) => Some(text),
            // too large: told before it was written
            None => return Err(core_err(py, pipeline::body_too_large(&*mapper, limits))),
        }
    } else {
        None
    };
    // The text is read where it lies (a str's UTF-8, the bytes themselves);
    // only a dict or list payload is written out first.
    let run = |text: Result<&str, CoreError>, free: bool| -> PyResult<Py<PyAny>> {
        let mut mapper = mapper;
        let t = types(py)?;
        let text = text.map_err(|e| core_err(py, e))?;
        if !free || text.len() < RELEASE_AT {
            return pipeline::normalize(&provider, &mut *mapper, text, limits, |response| {
                response_to_py(py, t, &provider, response)
            })
            .map_err(|e| core_err(py, e))?;
        }
        // A large body is checked, mapped and assembled with the GIL released;
        // the response is copied out (a few memcpys, a small part of the work)
        // to be built into Python objects once the GIL is back.
        let response = py
            .allow_threads(|| {
                pipeline::normalize(&provider, &mut *mapper, text, limits, Response::clone)
            })
            .map_err(|e| core_err(py, e))?;
        response_to_py(py, t, &provider, &response)
    };
    if let Some(written) = written {
        match written {
            Ok(text) => run(Ok(&text), true),
            Err(e) => run(Err(e), true),
        }
    } else if let Ok(text) = body.downcast::<PyString>() {
        run(text_of(text), true)
    } else if body.is_instance_of::<PyBytes>()
        || body.is_instance_of::<PyByteArray>()
        || body.is_instance_of::<PyMemoryView>()
    {
        // the bytes are a bytes object's own (immutable) or a copy
        with_bytes(
            body,
            "normalize()",
            limits.max_sse_event_bytes,
            |bytes, free| {
                let size = if free { bytes.len() } else { 0 };
                run(released(py, size, || utf8(bytes)), free)
            },
        )?
    } else {
        Err(PyTypeError::new_err(format!(
            "normalize() takes bytes, str or dict, not {}",
            body.get_type().name()?
        )))
    }
}
