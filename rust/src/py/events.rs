//! Core events, responses and errors to and from the Python classes of
//! `decisions.types` / `decisions.errors`.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};
use pyo3::IntoPyObjectExt;
use pyo3::{ffi, intern};

use crate::core::assemble::{Item, Kind, Response};
use crate::core::errors::CoreError;
use crate::core::events::{CallKind, Event, Usage};
use crate::core::sse::SseEvent;
use crate::py::common::new_error;
use crate::py::json::py_str;
use crate::py::objects::Layout;

/// The Python classes the binding builds, looked up once.
pub(crate) struct Types {
    pub sse_event: Py<PyAny>,
    pub event_base: Py<PyAny>,
    response_started: Py<PyAny>,
    item_started: Py<PyAny>,
    text_delta: Py<PyAny>,
    refusal_delta: Py<PyAny>,
    reasoning_delta: Py<PyAny>,
    tool_call_started: Py<PyAny>,
    tool_arguments_delta: Py<PyAny>,
    item_ended: Py<PyAny>,
    usage_reported: Py<PyAny>,
    response_finished: Py<PyAny>,
    response_failed: Py<PyAny>,
    usage: Py<PyAny>,
    text_item: Py<PyAny>,
    refusal_item: Py<PyAny>,
    reasoning_item: Py<PyAny>,
    tool_call_item: Py<PyAny>,
    normalized_response: Py<PyAny>,
    pub call_snapshot: Py<PyAny>,
    pub response_snapshot: Py<PyAny>,
    pub partial_json: Py<PyAny>,
    /// `decisions._payload.payload_text`: a dict payload as JSON text.
    pub payload_text: Py<PyAny>,
    /// `decisions.errors.OutputError`, the base of every typed error.
    pub output_error: Py<PyAny>,
}

static TYPES: GILOnceCell<Types> = GILOnceCell::new();

/// The slot layouts of the classes [`build`] builds most: a response's
/// items, usage and the response itself.
static LAYOUTS: GILOnceCell<Vec<Layout>> = GILOnceCell::new();

pub(crate) fn types(py: Python<'_>) -> PyResult<&Types> {
    let types = TYPES.get_or_try_init(py, || load_types(py))?;
    LAYOUTS.get_or_try_init(py, || {
        let mut layouts = Vec::new();
        for class in [
            &types.normalized_response,
            &types.tool_call_item,
            &types.text_item,
            &types.refusal_item,
            &types.reasoning_item,
            &types.usage,
        ] {
            layouts.extend(Layout::of(class.bind(py).downcast::<PyType>()?)?);
        }
        Ok::<_, PyErr>(layouts)
    })?;
    Ok(types)
}

fn load_types(py: Python<'_>) -> PyResult<Types> {
    {
        let m = py.import("decisions.types")?;
        let get = |name: &str| -> PyResult<Py<PyAny>> { Ok(m.getattr(name)?.unbind()) };
        Ok(Types {
            sse_event: get("SSEEvent")?,
            event_base: get("_Event")?,
            response_started: get("ResponseStarted")?,
            item_started: get("ItemStarted")?,
            text_delta: get("TextDelta")?,
            refusal_delta: get("RefusalDelta")?,
            reasoning_delta: get("ReasoningDelta")?,
            tool_call_started: get("ToolCallStarted")?,
            tool_arguments_delta: get("ToolArgumentsDelta")?,
            item_ended: get("ItemEnded")?,
            usage_reported: get("UsageReported")?,
            response_finished: get("ResponseFinished")?,
            response_failed: get("ResponseFailed")?,
            usage: get("Usage")?,
            text_item: get("TextItem")?,
            refusal_item: get("RefusalItem")?,
            reasoning_item: get("ReasoningItem")?,
            tool_call_item: get("ToolCallItem")?,
            normalized_response: get("NormalizedResponse")?,
            call_snapshot: get("CallSnapshot")?,
            response_snapshot: get("ResponseSnapshot")?,
            partial_json: py
                .import("decisions.stream.partial")?
                .getattr("PartialJSON")?
                .unbind(),
            payload_text: py
                .import("decisions._payload")?
                .getattr("payload_text")?
                .unbind(),
            output_error: py
                .import("decisions.errors")?
                .getattr("OutputError")?
                .unbind(),
        })
    }
}

/// A core error as the `decisions.errors` exception of its layer.
pub(crate) fn core_err(py: Python<'_>, error: CoreError) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let fields = PyDict::new(py);
        if let Some(offset) = error.offset {
            // a parse-layer error's offset is `pos`, as in json.JSONDecodeError
            let name = if error.code.layer() == "parse" {
                "pos"
            } else {
                "offset"
            };
            fields.set_item(name, offset)?;
        }
        if let Some(path) = &error.path {
            fields.set_item("path", path)?;
        }
        if let Some(retryable) = error.retryable {
            fields.set_item("retryable", retryable)?;
        }
        Ok(new_error(
            py,
            error.code,
            Some(&error.message),
            Some(&fields),
        ))
    };
    build().unwrap_or_else(|e| e)
}

/// An instance of the frozen, slotted dataclass `class` with `fields` set,
/// built the way its own `__init__` builds it (allocate, then
/// `object.__setattr__` each field) without running Python code: no keyword
/// matching, no frame. `fields` must name every field of the class (the
/// classes built here have no `__post_init__`; tests/test_native_objects.py
/// holds each built object equal to the one `__init__` builds, field by field).
pub(crate) fn build<'py>(
    py: Python<'py>,
    class: &Bound<'py, PyAny>,
    fields: &[(&Bound<'py, PyString>, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyAny>> {
    let class = class.downcast::<PyType>()?;
    // SAFETY: `class` is a live type object; PyType_GenericAlloc returns a new
    // reference (fields NULL) or NULL with an exception set.
    let instance = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyType_GenericAlloc(class.as_type_ptr(), 0))?
    };
    let layout = LAYOUTS
        .get(py)
        .and_then(|layouts| layouts.iter().find(|l| l.is_of(class.as_type_ptr())));
    for (name, value) in fields {
        // SAFETY: `instance` is a fresh instance of the layout's class, and
        // each field is named once.
        if layout.is_some_and(|l| unsafe { l.store(instance.as_ptr(), name, value) }) {
            continue;
        }
        // SAFETY: the three pointers are valid for the duration of the call;
        // the function borrows them and returns 0 or -1 with an exception set.
        let status = unsafe {
            ffi::PyObject_GenericSetAttr(instance.as_ptr(), name.as_ptr(), value.as_ptr())
        };
        if status != 0 {
            return Err(PyErr::fetch(py));
        }
    }
    Ok(instance)
}

/// `SSEEvent(data=..., event=..., id=..., retry=...)`, built by [`build`].
/// `id` is the event's id as Python holds it (None or a str).
pub(crate) fn sse_event(
    py: Python<'_>,
    t: &Types,
    event: SseEvent,
    id: Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let name = event.event.unwrap_or_else(|| "message".to_string());
    Ok(build(
        py,
        t.sse_event.bind(py),
        &[
            (
                intern!(py, "data"),
                PyString::new(py, &event.data).into_any(),
            ),
            (intern!(py, "event"), PyString::new(py, &name).into_any()),
            (intern!(py, "id"), id),
            (intern!(py, "retry"), obj(py, event.retry)?),
        ],
    )?
    .unbind())
}

pub(crate) fn kw<'py>(
    py: Python<'py>,
    pairs: &[(&str, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, value) in pairs {
        dict.set_item(*key, value)?;
    }
    Ok(dict)
}

pub(crate) fn obj<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    value: T,
) -> PyResult<Bound<'py, PyAny>> {
    value.into_bound_py_any(py)
}

/// A call kind's name, one interned Python str per kind.
fn call_kind_str(py: Python<'_>, kind: CallKind) -> &Bound<'_, PyString> {
    match kind {
        CallKind::Function => intern!(py, "function"),
        CallKind::Custom => intern!(py, "custom"),
        CallKind::LocalShell => intern!(py, "local_shell"),
        CallKind::Computer => intern!(py, "computer"),
        CallKind::ApplyPatch => intern!(py, "apply_patch"),
        CallKind::Shell => intern!(py, "shell"),
    }
}

type Fields<'py> = [(&'py Bound<'py, PyString>, Bound<'py, PyAny>); 4];

fn usage_fields<'py>(py: Python<'py>, usage: &Usage) -> PyResult<Fields<'py>> {
    Ok([
        (intern!(py, "input_tokens"), obj(py, usage.input_tokens)?),
        (intern!(py, "output_tokens"), obj(py, usage.output_tokens)?),
        (intern!(py, "cached_tokens"), obj(py, usage.cached_tokens)?),
        (
            intern!(py, "reasoning_tokens"),
            obj(py, usage.reasoning_tokens)?,
        ),
    ])
}

/// A core canonical event as its `decisions.types` class.
pub(crate) fn event_to_py(py: Python<'_>, t: &Types, event: &Event) -> PyResult<Py<PyAny>> {
    let (class, kwargs) = match event {
        Event::ResponseStarted { response_id, model } => (
            &t.response_started,
            kw(
                py,
                &[
                    ("response_id", obj(py, response_id.as_deref())?),
                    ("model", obj(py, model.as_deref())?),
                ],
            )?,
        ),
        Event::ItemStarted {
            item_id,
            kind,
            position,
        } => (
            &t.item_started,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("kind", obj(py, kind.as_str())?),
                    ("position", obj(py, *position)?),
                ],
            )?,
        ),
        Event::TextDelta { item_id, delta } => (
            &t.text_delta,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("delta", obj(py, delta.as_str())?),
                ],
            )?,
        ),
        Event::RefusalDelta { item_id, delta } => (
            &t.refusal_delta,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("delta", obj(py, delta.as_str())?),
                ],
            )?,
        ),
        Event::ReasoningDelta {
            item_id,
            delta,
            signature,
        } => (
            &t.reasoning_delta,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("delta", obj(py, delta.as_str())?),
                    ("signature", obj(py, signature.as_deref())?),
                ],
            )?,
        ),
        Event::ToolCallStarted {
            item_id,
            call_id,
            name,
            call_id_generated,
            call_kind,
        } => (
            &t.tool_call_started,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("call_id", obj(py, call_id.as_str())?),
                    ("name", obj(py, name.as_str())?),
                    ("call_id_generated", obj(py, *call_id_generated)?),
                    ("call_kind", obj(py, call_kind.as_str())?),
                ],
            )?,
        ),
        Event::ToolArgumentsDelta { item_id, delta } => (
            &t.tool_arguments_delta,
            kw(
                py,
                &[
                    ("item_id", obj(py, item_id.as_str())?),
                    ("delta", obj(py, delta.as_str())?),
                ],
            )?,
        ),
        Event::ItemEnded { item_id } => (
            &t.item_ended,
            kw(py, &[("item_id", obj(py, item_id.as_str())?)])?,
        ),
        Event::Usage(usage) => {
            return Ok(build(py, t.usage_reported.bind(py), &usage_fields(py, usage)?)?.unbind())
        }
        Event::ResponseFinished {
            finish_reason,
            raw_finish_reason,
        } => (
            &t.response_finished,
            kw(
                py,
                &[
                    ("finish_reason", obj(py, finish_reason.as_str())?),
                    ("raw_finish_reason", obj(py, raw_finish_reason.as_deref())?),
                ],
            )?,
        ),
        Event::ResponseFailed {
            code,
            message,
            retryable,
            error_type,
        } => (
            &t.response_failed,
            kw(
                py,
                &[
                    ("code", obj(py, code.as_str())?),
                    ("message", obj(py, message.as_str())?),
                    ("retryable", obj(py, *retryable)?),
                    ("error_type", obj(py, error_type.as_deref())?),
                ],
            )?,
        ),
    };
    Ok(class.bind(py).call((), Some(&kwargs))?.unbind())
}

/// One response item as its `decisions.types` class (`complete`: a tool call's completeness).
fn item_to_py(py: Python<'_>, t: &Types, item: &Item, complete: bool) -> PyResult<Py<PyAny>> {
    let id = py_str(py, &item.item_id)?;
    let text = py_str(py, &item.text)?;
    let (item_id, text_name) = (intern!(py, "item_id"), intern!(py, "text"));
    let built = match item.kind {
        Kind::Text => build(
            py,
            t.text_item.bind(py),
            &[(item_id, id), (text_name, text)],
        )?,
        Kind::Refusal => build(
            py,
            t.refusal_item.bind(py),
            &[(item_id, id), (text_name, text)],
        )?,
        Kind::Reasoning => build(
            py,
            t.reasoning_item.bind(py),
            &[
                (item_id, id),
                (text_name, text),
                (
                    intern!(py, "signature"),
                    obj(py, item.signature.as_deref())?,
                ),
            ],
        )?,
        Kind::ToolCall => build(
            py,
            t.tool_call_item.bind(py),
            &[
                (item_id, id),
                (intern!(py, "call_id"), py_str(py, &item.call_id)?),
                (intern!(py, "name"), py_str(py, &item.name)?),
                (intern!(py, "arguments"), text),
                (intern!(py, "complete"), obj(py, complete)?),
                (
                    intern!(py, "call_id_generated"),
                    obj(py, item.call_id_generated)?,
                ),
                (
                    intern!(py, "call_kind"),
                    call_kind_str(py, item.call_kind).clone().into_any(),
                ),
            ],
        )?,
    };
    Ok(built.unbind())
}

/// A finished core response as `decisions.types.NormalizedResponse`.
pub(crate) fn response_to_py(
    py: Python<'_>,
    t: &Types,
    provider: &str,
    r: &Response,
) -> PyResult<Py<PyAny>> {
    let items = r
        .items
        .iter()
        .map(|item| item_to_py(py, t, item, r.call_complete(item)))
        .collect::<PyResult<Vec<_>>>()?;
    let usage = match &r.usage {
        Some(usage) => build(py, t.usage.bind(py), &usage_fields(py, usage)?)?,
        None => py.None().into_bound(py),
    };
    let unknown = PyDict::new(py);
    for (name, count) in &r.unknown_events {
        unknown.set_item(name, count)?;
    }
    Ok(build(
        py,
        t.normalized_response.bind(py),
        &[
            (intern!(py, "provider"), obj(py, provider)?),
            (
                intern!(py, "response_id"),
                obj(py, r.response_id.as_deref())?,
            ),
            (intern!(py, "model"), obj(py, r.model.as_deref())?),
            (intern!(py, "items"), PyTuple::new(py, items)?.into_any()),
            (
                intern!(py, "finish_reason"),
                obj(py, r.finish_reason.as_str())?,
            ),
            (
                intern!(py, "raw_finish_reason"),
                obj(py, r.raw_finish_reason.as_deref())?,
            ),
            (intern!(py, "usage"), usage),
            (intern!(py, "unknown_events"), unknown.into_any()),
        ],
    )?
    .unbind())
}
