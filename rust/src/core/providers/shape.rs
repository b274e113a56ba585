//! Payload-shape readers shared by every mapper (the template: see the
//! module doc of [`super`]).
//!
//! Each reads one raw JSON member as exactly its documented type (an absent
//! member is `None` for an optional field) and fails with `MALFORMED_EVENT`,
//! `"<provider> <what> does not have the documented shape"` and the JSON path
//! of the member in the event ([`Path`]), the code, message and path of the
//! pure twin `python/decisions/_pure/providers/_shape.py`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::core::errors::{Code, CoreError};

/// A JSON string, borrowed from the input when it has no escapes (the one
/// string type of every mapper).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Str<'a>(#[serde(borrow)] pub(crate) Cow<'a, str>);

impl Str<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether a raw value is a JSON object.
pub(crate) fn is_object(raw: &RawValue) -> bool {
    raw.get().trim_start().starts_with('{')
}

/// Whether a raw value is a JSON array.
pub(crate) fn is_array(raw: &RawValue) -> bool {
    raw.get().trim_start().starts_with('[')
}

/// Where a member sits in an event or body: the steps from its root, written
/// out (`$.choices[0].delta.content`, the path syntax of the envelope rule's
/// errors) only when an error names it. Documented keys are identifiers, so
/// a key is always `.key`.
#[derive(Clone, Copy)]
pub(crate) enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'static str),
    Index(&'p Path<'p>, usize),
}

/// The root of an event or body (`$`).
pub(crate) const ROOT: Path<'static> = Path::Root;

impl Path<'_> {
    /// The member `key` of the object here.
    #[inline]
    pub(crate) fn key(&self, key: &'static str) -> Path<'_> {
        Path::Key(self, key)
    }

    /// The element `index` of the array here.
    #[inline]
    pub(crate) fn index(&self, index: usize) -> Path<'_> {
        Path::Index(self, index)
    }

    /// The path as text.
    pub(crate) fn render(&self) -> String {
        let mut steps = Vec::new();
        let mut at = self;
        loop {
            match at {
                Path::Root => break,
                Path::Key(parent, key) => {
                    steps.push(format!(".{key}"));
                    at = parent;
                }
                Path::Index(parent, index) => {
                    steps.push(format!("[{index}]"));
                    at = parent;
                }
            }
        }
        steps.iter().rev().fold(String::from("$"), |mut out, step| {
            out.push_str(step);
            out
        })
    }
}

/// `error` with `at` as its path.
pub(crate) fn located(mut error: CoreError, at: Path<'_>) -> CoreError {
    error.path = Some(at.render());
    error
}

/// A `MALFORMED_EVENT` other than a shape: `"<what>: <detail>"` at `at`.
pub(crate) fn invalid(what: &str, detail: impl std::fmt::Display, at: Path<'_>) -> CoreError {
    located(
        CoreError::new(Code::MALFORMED_EVENT, format!("{what}: {detail}")),
        at,
    )
}

/// Refuses a message whose `role` (`raw`, at `at`) is present, not null and
/// not `model`, the model's role for the provider: another party's message
/// (`user`, `tool`, `system`, ...) is never the model's answer, so nothing in
/// it is decided. `MALFORMED_EVENT` at `at`, as the pure twin's `model_role`.
pub(crate) fn model_role(
    raw: Option<&RawValue>,
    model: &str,
    what: &str,
    at: Path<'_>,
) -> Result<(), CoreError> {
    let Some(raw) = raw else {
        return Ok(());
    };
    let text = raw.get().trim();
    if text == "null" {
        return Ok(());
    }
    let detail = if text.starts_with('"') {
        let role: Cow<'_, str> = serde_json::from_str::<Str<'_>>(text)
            .map_err(|_| {
                invalid(
                    what,
                    "a message whose role is not a string is not the model's answer",
                    at,
                )
            })?
            .0;
        if role == model {
            return Ok(());
        }
        format!("a message of role \"{role}\" is not the model's answer")
    } else {
        String::from("a message whose role is not a string is not the model's answer")
    };
    Err(invalid(what, detail, at))
}

/// The shape readers of one provider, named in their errors.
#[derive(Clone, Copy)]
pub(crate) struct Shape(pub(crate) &'static str);

impl Shape {
    /// The error for a known payload whose shape does not fit.
    pub(crate) fn malformed(self, what: &str, at: Path<'_>) -> CoreError {
        located(
            CoreError::new(
                Code::MALFORMED_EVENT,
                format!("{} {what} does not have the documented shape", self.0),
            ),
            at,
        )
    }

    /// A documented object.
    #[inline]
    pub(crate) fn obj<'a, T: Deserialize<'a>>(
        self,
        raw: &'a RawValue,
        what: &str,
        at: Path<'_>,
    ) -> Result<T, CoreError> {
        if !is_object(raw) {
            return Err(self.malformed(what, at));
        }
        serde_json::from_str(raw.get()).map_err(|_| self.malformed(what, at))
    }

    /// A required object (absent is malformed).
    #[inline]
    pub(crate) fn req_obj<'a, T: Deserialize<'a>>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<T, CoreError> {
        match raw {
            Some(raw) => self.obj(raw, what, at),
            None => Err(self.malformed(what, at)),
        }
    }

    /// An optional object.
    #[inline]
    pub(crate) fn opt_obj<'a, T: Deserialize<'a>>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<Option<T>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => self.obj(raw, what, at).map(Some),
        }
    }

    /// An optional array, as its raw elements.
    #[inline]
    pub(crate) fn opt_list<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<Option<Vec<&'a RawValue>>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) if is_array(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|_| self.malformed(what, at)),
            Some(_) => Err(self.malformed(what, at)),
        }
    }

    /// An optional string.
    #[inline]
    pub(crate) fn opt_str<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<Option<Cow<'a, str>>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => serde_json::from_str::<Str<'a>>(raw.get())
                .map(|s| Some(s.0))
                .map_err(|_| self.malformed(what, at)),
        }
    }

    /// A required string.
    #[inline]
    pub(crate) fn req_str<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<Cow<'a, str>, CoreError> {
        self.opt_str(raw, what, at)?
            .ok_or_else(|| self.malformed(what, at))
    }

    /// An optional boolean; absent reads as `false`.
    #[inline]
    pub(crate) fn opt_bool(
        self,
        raw: Option<&RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<bool, CoreError> {
        match raw {
            None => Ok(false),
            Some(raw) => {
                serde_json::from_str::<bool>(raw.get()).map_err(|_| self.malformed(what, at))
            }
        }
    }

    /// An optional count or index in `0..=u64::MAX`.
    #[inline]
    pub(crate) fn opt_count(
        self,
        raw: Option<&RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<Option<u64>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => count_text(raw.get())
                .map(Some)
                .ok_or_else(|| self.malformed(what, at)),
        }
    }

    /// A required count or index in `0..=u64::MAX`.
    #[inline]
    pub(crate) fn req_index(
        self,
        raw: Option<&RawValue>,
        what: &str,
        at: Path<'_>,
    ) -> Result<u64, CoreError> {
        self.opt_count(raw, what, at)?
            .ok_or_else(|| self.malformed(what, at))
    }
}

/// A count or index written as a JSON integer in `0..=u64::MAX`. `-0` is
/// the integer 0, as JSON (and the pure twin's `json.loads`) reads it;
/// `serde_json` would read it as the float `-0.0`.
pub(crate) fn count_text(text: &str) -> Option<u64> {
    let text = text.trim_matches([' ', '\t', '\n', '\r']);
    if text == "-0" {
        return Some(0);
    }
    serde_json::from_str::<u64>(text).ok()
}

#[cfg(test)]
mod tests {
    use super::{Shape, ROOT};
    use serde_json::value::RawValue;

    #[test]
    fn malformed_names_the_provider_and_the_path() {
        let raw = RawValue::from_string("1".to_owned()).ok();
        let at = ROOT.key("candidates");
        let at = at.index(2);
        let err = Shape("gemini")
            .opt_str(raw.as_deref(), "part", at.key("text"))
            .err();
        assert_eq!(
            err.map(|e| (e.message, e.path)),
            Some((
                "gemini part does not have the documented shape".to_owned(),
                Some("$.candidates[2].text".to_owned())
            ))
        );
    }
}
