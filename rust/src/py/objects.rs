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
    /// Each field's slot, as a byte offset into an instance, when every
    /// field is a plain writable object slot of the class itself (read from
    /// its member descriptors): the values are then stored as the slots'
    /// own setter stores them, without looking each descriptor up again.
    offsets: Option<Vec<ffi::Py_ssize_t>>,
}

/// The byte offset of each of `fields`' slots in an instance of `cls`, or
/// None unless each is a writable object slot (`Py_T_OBJECT_EX`) of `cls`
/// itself.
#[cfg(not(feature = "abi3"))]
fn slot_offsets(
    cls: &Bound<'_, PyType>,
    fields: &[Py<PyString>],
) -> PyResult<Option<Vec<ffi::Py_ssize_t>>> {
    let own = cls.getattr("__dict__")?;
    let mut offsets = Vec::with_capacity(fields.len());
    for name in fields {
        let Ok(descriptor) = own.get_item(name.bind(cls.py())) else {
            return Ok(None);
        };
        let ptr = descriptor.as_ptr();
        // SAFETY: `ptr` is a live object; it is read as a member descriptor
        // only once its type is that of member descriptors, whose `d_member`
        // points at the class's `PyMemberDef` (pyo3-ffi types the pointer as
        // a getset definition; CPython's is a member definition).
        unsafe {
            if ffi::Py_TYPE(ptr) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
                return Ok(None);
            }
            let descr = ptr.cast::<ffi::PyMemberDescrObject>();
            if (*descr).d_common.d_type != cls.as_type_ptr() {
                return Ok(None);
            }
            let member = (*descr).d_member.cast::<ffi::PyMemberDef>();
            if (*member).type_code != ffi::Py_T_OBJECT_EX || (*member).flags & ffi::Py_READONLY != 0
            {
                return Ok(None);
            }
            offsets.push((*member).offset);
        }
    }
    Ok(Some(offsets))
}

/// Without the interpreter's internals (abi3): the generic setter always.
#[cfg(feature = "abi3")]
fn slot_offsets(
    _cls: &Bound<'_, PyType>,
    _fields: &[Py<PyString>],
) -> PyResult<Option<Vec<ffi::Py_ssize_t>>> {
    Ok(None)
}

/// Where a frozen, slotted dataclass stores each field in its instances
/// (see [`slot_offsets`]), for building instances by field name.
pub(crate) struct Layout {
    class: *mut ffi::PyTypeObject,
    /// The interned field names, beside their slots' offsets.
    fields: Vec<(Py<PyString>, ffi::Py_ssize_t)>,
}

// SAFETY: the type pointer is only compared, never dereferenced; the class
// is kept alive by whoever holds the layout beside it.
unsafe impl Send for Layout {}
unsafe impl Sync for Layout {}

impl Layout {
    /// `cls`'s layout, or None when it is not a dataclass whose fields are
    /// all writable object slots of its own.
    pub(crate) fn of(cls: &Bound<'_, PyType>) -> PyResult<Option<Layout>> {
        let py = cls.py();
        let dataclasses = py.import("dataclasses")?;
        let mut names = Vec::new();
        for field in dataclasses.getattr("fields")?.call1((cls,))?.try_iter()? {
            let name = field?.getattr("name")?.downcast_into::<PyString>()?;
            names.push(PyString::intern(py, name.to_str()?).unbind());
        }
        Ok(slot_offsets(cls, &names)?.map(|offsets| Layout {
            class: cls.as_type_ptr(),
            fields: names.into_iter().zip(offsets).collect(),
        }))
    }

    /// Whether this is the layout of `class`.
    pub(crate) fn is_of(&self, class: *mut ffi::PyTypeObject) -> bool {
        self.class == class
    }

    /// Store `value` in the slot of the field called `name` (an interned
    /// str) of `instance`, a fresh instance of the class; false, storing
    /// nothing, when no field has that name.
    ///
    /// # Safety
    /// `instance` is a live instance of this layout's class whose slot for
    /// `name` is still empty (NULL).
    pub(crate) unsafe fn store(
        &self,
        instance: *mut ffi::PyObject,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> bool {
        let Some(&(_, offset)) = self
            .fields
            .iter()
            .find(|(field, _)| field.as_ptr() == name.as_ptr())
        else {
            return false;
        };
        store_slot(instance, offset, value.clone().into_ptr());
        true
    }
}

/// What a writable object slot's own setter does: `value` (a new
/// reference) stored at `offset`, the reference it replaces released.
///
/// # Safety
/// `offset` is a writable object slot of the live `instance`'s class.
unsafe fn store_slot(
    instance: *mut ffi::PyObject,
    offset: ffi::Py_ssize_t,
    value: *mut ffi::PyObject,
) {
    let slot = instance
        .cast::<u8>()
        .offset(offset)
        .cast::<*mut ffi::PyObject>();
    ffi::Py_XDECREF(slot.replace(value));
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
        // the names `__slots__` declares, as the class statement reads them:
        // a str is one name, any other iterable (a tuple, a list, a dict's
        // keys) its items; compared as the pure twin's tuples are
        let slots: Vec<Bound<'_, PyAny>> = match cls.getattr_opt("__slots__")? {
            None => Vec::new(),
            Some(slots) if slots.is_instance_of::<PyString>() => vec![slots],
            Some(slots) => slots.try_iter()?.collect::<PyResult<_>>()?,
        };
        let mut same = true;
        for (slot, field) in slots.iter().zip(&fields) {
            if !slot.eq(field)? {
                same = false;
                break;
            }
        }
        if !same || slots.len() != fields.len() {
            return Err(PyValueError::new_err(format!(
                "Constructor needs a dataclass whose slots are its fields, which {} is not",
                cls.name()?
            )));
        }
        let object_new = py.get_type::<pyo3::types::PyAny>().getattr("__new__")?;
        let plain = object_new.call1((cls,)).is_ok();
        let fields: Vec<Py<PyString>> = fields
            .into_iter()
            .map(|f| PyString::intern(py, f.to_str().unwrap_or_default()).unbind())
            .collect();
        Ok(Constructor {
            plain,
            offsets: slot_offsets(cls, &fields)?,
            class: cls.clone().unbind(),
            fields,
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
        if let Some(offsets) = &self.offsets {
            for (&offset, value) in offsets.iter().zip(values.iter()) {
                // SAFETY: `offset` is a writable object slot of this class
                // (see `slot_offsets`) inside the live `instance`.
                unsafe { store_slot(instance.as_ptr(), offset, value.into_ptr()) };
            }
            return Ok(instance);
        }
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
