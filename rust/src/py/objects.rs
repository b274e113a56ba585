//! `decisions._native.Constructor`: instances of a frozen, slotted dataclass
//! built from positional field values without running Python code.
//!
//! `decide` builds a handful of frozen dataclasses (`ToolCall`,
//! `CallVerdict`, `ToolDecision`) for every response; their generated
//! `__init__` matches keywords and calls `object.__setattr__` field by field
//! in a Python frame, which costs more than the checks that produced the
//! values. A `Constructor` does what that `__init__` does (allocate, then set
//! each field's slot) in one call. It runs no `__post_init__`: it is for
//! values whose invariants the caller has established. The pure twin is
//! `python/decisions/_pure/objects.py`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

/// Builds instances of one dataclass from its field values, in field order.
#[pyclass(frozen, module = "decisions._native")]
pub struct Constructor {
    class: Py<PyType>,
    fields: Vec<Py<PyString>>,
    /// Whether `object.__new__(cls)` makes an instance: not for a class
    /// whose instances need their built-in base's `__new__` (a `dict` or
    /// `set` subclass, whose storage an allocation alone leaves unset) or
    /// an abstract class. Otherwise each call runs `object.__new__`, which
    /// raises what it raises for the pure twin.
    plain: bool,
}

#[pymethods]
impl Constructor {
    /// A constructor for `cls`, a dataclass with `slots=True` whose slots
    /// are exactly its fields (ValueError otherwise).
    #[new]
    #[pyo3(signature = (cls, /))]
    fn new(py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<Constructor> {
        let dataclasses = py.import("dataclasses")?;
        if !dataclasses
            .getattr("is_dataclass")?
            .call1((cls,))?
            .is_truthy()?
        {
            return Err(PyTypeError::new_err(format!(
                "Constructor takes a dataclass, not {}",
                cls.name()?
            )));
        }
        let mut fields = Vec::new();
        for field in dataclasses.getattr("fields")?.call1((cls,))?.try_iter()? {
            fields.push(field?.getattr("name")?.downcast_into::<PyString>()?);
        }
        let slots: Vec<String> = match cls.getattr_opt("__slots__")? {
            Some(slots) => slots.extract()?,
            None => Vec::new(),
        };
        let names: Vec<String> = fields
            .iter()
            .map(|f| f.extract())
            .collect::<PyResult<_>>()?;
        if slots != names {
            return Err(PyValueError::new_err(format!(
                "Constructor needs a dataclass whose slots are its fields, which {} is not",
                cls.name()?
            )));
        }
        let object_new = py.get_type::<pyo3::types::PyAny>().getattr("__new__")?;
        let plain = object_new.call1((cls,)).is_ok();
        Ok(Constructor {
            plain,
            class: cls.clone().unbind(),
            fields: fields
                .into_iter()
                .map(|f| PyString::intern(py, f.to_str().unwrap_or_default()).unbind())
                .collect(),
        })
    }

    /// The class this constructor builds.
    #[getter]
    fn cls(&self, py: Python<'_>) -> Py<PyType> {
        self.class.clone_ref(py)
    }

    /// An instance with each field set to the value at its position.
    #[pyo3(signature = (*values))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if values.len() != self.fields.len() {
            return Err(PyTypeError::new_err(format!(
                "{} takes {} field values, not {}",
                self.class.bind(py).name()?,
                self.fields.len(),
                values.len()
            )));
        }
        let class = self.class.bind(py);
        let instance = if self.plain {
            // SAFETY: `class` is a live type object whose instances
            // `object.__new__` makes (so an allocation is all they need);
            // PyType_GenericAlloc returns a new reference (its slots NULL)
            // or NULL with an exception set.
            unsafe {
                Bound::from_owned_ptr_or_err(py, ffi::PyType_GenericAlloc(class.as_type_ptr(), 0))?
            }
        } else {
            let object_new = py.get_type::<pyo3::types::PyAny>().getattr("__new__")?;
            object_new.call1((class,))?
        };
        for (name, value) in self.fields.iter().zip(values.iter()) {
            // SAFETY: the three pointers are live for the call, which borrows
            // them and returns 0, or -1 with an exception set. The generic
            // setter bypasses the frozen class's `__setattr__` as its
            // `__init__` does.
            let status = unsafe {
                ffi::PyObject_GenericSetAttr(instance.as_ptr(), name.as_ptr(), value.as_ptr())
            };
            if status != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(instance)
    }
}
