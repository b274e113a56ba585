//! Payload-shape readers shared by the Anthropic and Gemini mappers.
//!
//! Each reads one raw JSON member as exactly its documented type (an absent
//! member is `None` for an optional field) and fails with `MALFORMED_EVENT`
//! and `"<provider> <what> does not have the documented shape"`, the message
//! of the pure twin `python/decisions/_pure/providers/_shape.py`.

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

/// The shape readers of one provider, named in their errors.
#[derive(Clone, Copy)]
pub(crate) struct Shape(pub(crate) &'static str);

impl Shape {
    /// The error for a known payload whose shape does not fit.
    pub(crate) fn malformed(self, what: &str) -> CoreError {
        CoreError::new(
            Code::MALFORMED_EVENT,
            format!("{} {what} does not have the documented shape", self.0),
        )
    }

    /// A documented object.
    #[inline]
    pub(crate) fn obj<'a, T: Deserialize<'a>>(
        self,
        raw: &'a RawValue,
        what: &str,
    ) -> Result<T, CoreError> {
        if !is_object(raw) {
            return Err(self.malformed(what));
        }
        serde_json::from_str(raw.get()).map_err(|_| self.malformed(what))
    }

    /// A required object (absent is malformed).
    #[inline]
    pub(crate) fn req_obj<'a, T: Deserialize<'a>>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
    ) -> Result<T, CoreError> {
        match raw {
            Some(raw) => self.obj(raw, what),
            None => Err(self.malformed(what)),
        }
    }

    /// An optional object.
    #[inline]
    pub(crate) fn opt_obj<'a, T: Deserialize<'a>>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
    ) -> Result<Option<T>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => self.obj(raw, what).map(Some),
        }
    }

    /// An optional array, as its raw elements.
    #[inline]
    pub(crate) fn opt_list<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
    ) -> Result<Option<Vec<&'a RawValue>>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) if is_array(raw) => serde_json::from_str(raw.get())
                .map(Some)
                .map_err(|_| self.malformed(what)),
            Some(_) => Err(self.malformed(what)),
        }
    }

    /// An optional string.
    #[inline]
    pub(crate) fn opt_str<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
    ) -> Result<Option<Cow<'a, str>>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => serde_json::from_str::<Str<'a>>(raw.get())
                .map(|s| Some(s.0))
                .map_err(|_| self.malformed(what)),
        }
    }

    /// A required string.
    #[inline]
    pub(crate) fn req_str<'a>(
        self,
        raw: Option<&'a RawValue>,
        what: &str,
    ) -> Result<Cow<'a, str>, CoreError> {
        self.opt_str(raw, what)?.ok_or_else(|| self.malformed(what))
    }

    /// An optional boolean; absent reads as `false`.
    #[inline]
    pub(crate) fn opt_bool(self, raw: Option<&RawValue>, what: &str) -> Result<bool, CoreError> {
        match raw {
            None => Ok(false),
            Some(raw) => serde_json::from_str::<bool>(raw.get()).map_err(|_| self.malformed(what)),
        }
    }

    /// An optional count or index in `0..=u64::MAX`.
    #[inline]
    pub(crate) fn opt_count(
        self,
        raw: Option<&RawValue>,
        what: &str,
    ) -> Result<Option<u64>, CoreError> {
        match raw {
            None => Ok(None),
            Some(raw) => count_text(raw.get())
                .map(Some)
                .ok_or_else(|| self.malformed(what)),
        }
    }

    /// A required count or index in `0..=u64::MAX`.
    #[inline]
    pub(crate) fn req_index(self, raw: Option<&RawValue>, what: &str) -> Result<u64, CoreError> {
        self.opt_count(raw, what)?
            .ok_or_else(|| self.malformed(what))
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

/// `#[serde(default, deserialize_with = "count")]` for an optional count or
/// index field of a typed envelope struct: [`count_text`] of its raw text.
pub(crate) fn count<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    match Option::<&'de RawValue>::deserialize(deserializer)? {
        None => Ok(None),
        Some(raw) => count_text(raw.get())
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("not a count")),
    }
}

#[cfg(test)]
mod tests {
    use super::Shape;
    use serde_json::value::RawValue;

    #[test]
    fn malformed_names_the_provider() {
        let raw = RawValue::from_string("1".to_owned()).ok();
        let err = Shape("gemini").opt_str(raw.as_deref(), "part").err();
        assert_eq!(
            err.map(|e| e.message),
            Some("gemini part does not have the documented shape".to_owned())
        );
    }
}
