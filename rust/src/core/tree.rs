//! A whole body as a borrowed tree, built in the one pass that checks it
//! against the envelope rule.
//!
//! [`parse`] runs the strict parser of [`crate::core::json`] under
//! [`envelope_limits`], refusing a repeated key in any object exactly as
//! [`crate::core::envelope::Envelope::check`] does: a body parses here if and
//! only if it passes the envelope rule. A mapper that reads trees walks the
//! result instead of reading the text a second time; on a failure the
//! pipeline runs the envelope check, which names it.
//!
//! Strings without escapes borrow the body's text; the rest are decoded
//! once. A tree costs a few machine words a value, so only bodies up to
//! [`TREE_MAX_BYTES`] are built as trees (larger ones are checked, then read
//! from their text).

use std::borrow::Cow;

use crate::core::envelope::envelope_limits;
use crate::core::json::{self, Buffers, Builder, Object};
use crate::core::limits::Limits;

/// The largest body built as a tree.
pub const TREE_MAX_BYTES: usize = 256 * 1024;

/// One JSON value of a body.
#[derive(Debug, PartialEq)]
pub enum Tree<'a> {
    Null,
    Bool(bool),
    /// An integer written without sign, fraction or exponent.
    Count(u64),
    /// Any other number.
    Number,
    Str(Cow<'a, str>),
    Array(Vec<Tree<'a>>),
    /// The members in document order, each key (a [`Tree::Str`]) followed
    /// by its value; no key repeats.
    Object(Vec<Tree<'a>>),
}

impl<'a> Tree<'a> {
    /// The member `key` of an object whose value is not `null` (a `null`
    /// member reads as absent, as for the mappers' optional fields); None
    /// for anything else.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Tree<'a>> {
        match self {
            Tree::Object(members) => members
                .chunks_exact(2)
                .find_map(|member| match member {
                    [Tree::Str(k), value] if k == key => Some(value),
                    _ => None,
                })
                .filter(|v| !matches!(v, Tree::Null)),
            _ => None,
        }
    }
}

/// The tree of `text`, or None when it breaks the envelope rule (the
/// envelope check then says how).
pub fn parse<'a>(text: &'a str, limits: &Limits) -> Option<Tree<'a>> {
    let mut builder = TreeBuilder { text };
    // about one open item per 16 bytes of a small body
    let mut buffers = Buffers::with_capacity((text.len() / 16).clamp(16, 1024), 16);
    json::parse_str_in(text, &envelope_limits(limits), &mut builder, &mut buffers).ok()
}

/// Builds [`Tree`]s borrowing from `text`.
struct TreeBuilder<'a> {
    text: &'a str,
}

impl<'a> TreeBuilder<'a> {
    /// `value` as a string of the tree: borrowed when it lies within the
    /// text (a string without escapes is handed over as a slice of it),
    /// else copied (the parser decoded it into its own buffer).
    #[inline]
    fn text(&self, value: &str) -> Cow<'a, str> {
        // where `value` starts in the text, if it lies there (a pointer's
        // address, compared only)
        let offset = (value.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        match offset
            .checked_add(value.len())
            .and_then(|end| self.text.get(offset..end))
        {
            Some(slice) => Cow::Borrowed(slice),
            None => Cow::Owned(value.to_owned()),
        }
    }
}

impl<'a> Builder for TreeBuilder<'a> {
    type Value = Tree<'a>;
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Null)
    }
    fn boolean(&mut self, value: bool) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Bool(value))
    }
    fn int(&mut self, _: i64) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Number)
    }
    fn uint(&mut self, value: u64) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Count(value))
    }
    fn float(&mut self, _: f64) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Number)
    }
    fn string(&mut self, value: &str, _: bool) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Str(self.text(value)))
    }
    fn key(&mut self, value: &str, _: bool) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Str(self.text(value)))
    }
    fn array(&mut self, items: std::vec::Drain<'_, Tree<'a>>) -> Result<Tree<'a>, Self::Error> {
        Ok(Tree::Array(items.collect()))
    }
    fn object(
        &mut self,
        members: std::vec::Drain<'_, Tree<'a>>,
    ) -> Result<Object<Tree<'a>>, Self::Error> {
        let members: Vec<Tree<'a>> = members.collect();
        let key = |i: usize| match members.get(2 * i) {
            Some(Tree::Str(k)) => k.as_ref(),
            _ => "",
        };
        let count = members.len() / 2;
        let repeated = if count <= 16 {
            (1..count).find(|&i| (0..i).any(|j| key(j) == key(i)))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(count);
            (0..count).position(|i| !seen.insert(key(i)))
        };
        Ok(match repeated {
            Some(i) => Object::DuplicateKey(i),
            None => Object::Built(Tree::Object(members)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::envelope;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let text = r#"{"a": "plain", "b\u0063": "esc\"aped", "n": [1, -1, 1.5, null, true]}"#;
        let tree = parse(text, &limits()).unwrap();
        let Tree::Object(members) = &tree else {
            panic!("not an object")
        };
        assert!(matches!(&members[0], Tree::Str(Cow::Borrowed("a"))));
        assert!(matches!(&members[1], Tree::Str(Cow::Borrowed("plain"))));
        assert!(matches!(&members[2], Tree::Str(Cow::Owned(k)) if k == "bc"));
        assert!(matches!(&members[3], Tree::Str(Cow::Owned(v)) if v == "esc\"aped"));
        assert_eq!(
            tree.get("n"),
            Some(&Tree::Array(vec![
                Tree::Count(1),
                Tree::Number,
                Tree::Number,
                Tree::Null,
                Tree::Bool(true)
            ]))
        );
    }

    #[test]
    fn null_members_read_as_absent() {
        let tree = parse(r#"{"a": null, "b": 0}"#, &limits()).unwrap();
        assert_eq!(tree.get("a"), None);
        assert_eq!(tree.get("b"), Some(&Tree::Count(0)));
        assert_eq!(tree.get("c"), None);
        assert_eq!(Tree::Count(1).get("a"), None);
    }

    /// A tree is built exactly when the envelope check passes.
    #[test]
    fn parses_exactly_what_the_envelope_passes() {
        let wide = |n: usize, repeat: bool| {
            let mut keys: Vec<String> = (0..n).map(|i| format!("\"k{i}\": {i}")).collect();
            if repeat {
                keys.push("\"k3\": 0".to_owned());
            }
            format!("{{{}}}", keys.join(", "))
        };
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let mut texts: Vec<String> = [
            r#"{"a": 1}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": {"b": 1, "c": {"b": 2, "b": 3}}}"#,
            r#"{"a": "\u0061", "\u0061": 1}"#,
            r#"{"a": "\ud800"}"#,
            r#"{"a": "\ud83d\ude00"}"#,
            r#"{"a": 1,}"#,
            r#"{"a": 123456789012345678901234567890}"#,
            r#"{"a": 1e400}"#,
            r#"[DONE]"#,
            "",
            " {} ",
            "{}x",
            "\u{feff}{}",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        texts.extend([
            wide(16, false),
            wide(16, true),
            wide(40, false),
            wide(40, true),
            deep(100),
            deep(101),
        ]);
        texts.push(format!("{{\"n\": {}}}", "9".repeat(101)));
        for text in &texts {
            assert_eq!(
                parse(text, &limits()).is_some(),
                envelope::check(text, &limits(), &[]).is_ok() && text != "[DONE]",
                "{text}"
            );
        }
    }
}
