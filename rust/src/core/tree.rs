//! A whole body as a tree, built in the one pass that checks it against the
//! envelope rule.
//!
//! [`parse`] runs the strict parser of [`crate::core::json`] under
//! [`envelope_limits`], refusing a repeated key in any object exactly as
//! [`crate::core::envelope::Envelope::check`] does: a body parses here if and
//! only if it passes the envelope rule. A mapper that reads trees walks the
//! result instead of reading the text a second time; on a failure the
//! pipeline runs the envelope check, which names it.
//!
//! The tree is one array of small [`Node`]s, each container's members side
//! by side in it (so a body costs a handful of allocations, not one per
//! container); strings without escapes are spans of the body's text, the
//! rest are decoded once. Only bodies up to [`TREE_MAX_BYTES`] are built as
//! trees (larger ones are checked, then read from their text).

use crate::core::envelope::envelope_limits;
use crate::core::json::{self, Buffers, Builder, Object};
use crate::core::limits::Limits;

/// The largest body built as a tree.
pub const TREE_MAX_BYTES: usize = 256 * 1024;

/// One JSON value of a tree. Positions are `u32`: a tree's text is at most
/// [`TREE_MAX_BYTES`] long, and it has fewer nodes than bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Null,
    Bool(bool),
    /// An integer written without sign, fraction or exponent.
    Count(u64),
    /// Any other number.
    Number,
    /// A string without escapes: its text's byte span.
    Str(u32, u32),
    /// A string with escapes: its place among the decoded strings.
    Decoded(u32),
    /// An array: where its items start among the nodes, and how many.
    Array(u32, u32),
    /// An object: where its members start among the nodes (each key, a
    /// string node, followed by its value), and how many nodes they take.
    /// No key repeats.
    Object(u32, u32),
}

/// A body's tree: its nodes and decoded strings beside the text.
#[derive(Debug)]
pub struct Tree<'a> {
    text: &'a str,
    nodes: Vec<Node>,
    decoded: Vec<String>,
    root: Node,
}

impl<'a> Tree<'a> {
    /// The body's value.
    pub fn root(&self) -> Value<'_> {
        self.value(self.root)
    }

    fn value(&self, node: Node) -> Value<'_> {
        Value { tree: self, node }
    }

    /// The nodes from `start`, `len` of them.
    fn nodes(&self, start: u32, len: u32) -> &[Node] {
        let start = start as usize;
        self.nodes
            .get(start..start + len as usize)
            .unwrap_or_default()
    }

    fn text_of(&self, node: Node) -> Option<&str> {
        match node {
            Node::Str(start, end) => self.text.get(start as usize..end as usize),
            Node::Decoded(at) => self.decoded.get(at as usize).map(String::as_str),
            _ => None,
        }
    }

    /// Whether the string node `node` is `key` (compared as bytes: a span
    /// lies on character boundaries by construction).
    #[inline]
    fn is_key(&self, node: Node, key: &str) -> bool {
        match node {
            Node::Str(start, end) => {
                self.text.as_bytes().get(start as usize..end as usize) == Some(key.as_bytes())
            }
            Node::Decoded(at) => self.decoded.get(at as usize).is_some_and(|k| k == key),
            _ => false,
        }
    }
}

/// One value of a [`Tree`], to read.
#[derive(Debug, Clone, Copy)]
pub struct Value<'t> {
    tree: &'t Tree<'t>,
    node: Node,
}

impl<'t> Value<'t> {
    /// What the value is.
    pub fn node(&self) -> Node {
        self.node
    }

    /// Whether the value is an object.
    pub fn is_object(&self) -> bool {
        matches!(self.node, Node::Object(..))
    }

    /// The member `key` of an object whose value is not `null` (a `null`
    /// member reads as absent, as for the mappers' optional fields); None
    /// for anything else.
    #[inline]
    pub fn get(&self, key: &str) -> Option<Value<'t>> {
        let Node::Object(start, len) = self.node else {
            return None;
        };
        self.tree
            .nodes(start, len)
            .chunks_exact(2)
            .find_map(|member| match member {
                [k, value] if self.tree.is_key(*k, key) => Some(*value),
                _ => None,
            })
            .filter(|value| *value != Node::Null)
            .map(|value| self.tree.value(value))
    }

    /// The string the value is, if it is one.
    #[inline]
    pub fn str(&self) -> Option<&'t str> {
        self.tree.text_of(self.node)
    }

    /// The items of an array, if the value is one.
    pub fn items(&self) -> Option<impl Iterator<Item = Value<'t>> + Clone + 't> {
        let Node::Array(start, len) = self.node else {
            return None;
        };
        let tree = self.tree;
        Some(
            tree.nodes(start, len)
                .iter()
                .map(move |node| tree.value(*node)),
        )
    }
}

/// The tree of `text`, or None when it breaks the envelope rule (the
/// envelope check then says how) or is longer than [`TREE_MAX_BYTES`].
pub fn parse<'a>(text: &'a str, limits: &Limits) -> Option<Tree<'a>> {
    BODY_BUFFERS.with(|buffers| match buffers.try_borrow_mut() {
        Ok(mut buffers) => parse_in(text, limits, &mut buffers),
        // about one open item per 16 bytes of a small body
        Err(_) => parse_in(
            text,
            limits,
            &mut Buffers::with_capacity((text.len() / 16).clamp(16, 1024), 16),
        ),
    })
}

thread_local! {
    /// The parser's working memory for [`parse`], kept from one body to the
    /// next on this thread (the parser drops what is beyond a small reserve).
    static BODY_BUFFERS: std::cell::RefCell<Buffers<Node>> =
        std::cell::RefCell::new(Buffers::with_capacity(64, 16));
}

/// [`parse`] with the parser's working memory kept by the caller between
/// calls (a stream parses every event).
pub fn parse_in<'a>(
    text: &'a str,
    limits: &Limits,
    buffers: &mut Buffers<Node>,
) -> Option<Tree<'a>> {
    if text.len() > TREE_MAX_BYTES {
        return None;
    }
    let mut builder = TreeBuilder {
        text,
        // about one node per 8 bytes
        nodes: Vec::with_capacity(text.len() / 8),
        decoded: Vec::new(),
    };
    let root = json::parse_str_in(text, &envelope_limits(limits), &mut builder, buffers).ok()?;
    Some(Tree {
        text,
        nodes: builder.nodes,
        decoded: builder.decoded,
        root,
    })
}

/// Builds a tree's nodes (see [`Tree`]).
struct TreeBuilder<'a> {
    text: &'a str,
    nodes: Vec<Node>,
    decoded: Vec<String>,
}

impl TreeBuilder<'_> {
    /// `value` as a string node: a span when it lies within the text (a
    /// string without escapes is handed over as a slice of it), else decoded
    /// (the parser decoded it into its own buffer).
    #[inline]
    fn string(&mut self, value: &str) -> Node {
        // where `value` starts in the text, if it lies there (a pointer's
        // address, compared only)
        let start = (value.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        match start.checked_add(value.len()) {
            Some(end) if end <= self.text.len() => Node::Str(start as u32, end as u32),
            _ => {
                self.decoded.push(value.to_owned());
                Node::Decoded((self.decoded.len() - 1) as u32)
            }
        }
    }

    /// A key's bytes (see [`Tree::is_key`]).
    fn key_bytes(&self, node: Option<&Node>) -> &[u8] {
        match node {
            Some(Node::Str(start, end)) => self.text.as_bytes().get(*start as usize..*end as usize),
            Some(Node::Decoded(at)) => self.decoded.get(*at as usize).map(String::as_bytes),
            _ => None,
        }
        .unwrap_or_default()
    }
}

impl Builder for TreeBuilder<'_> {
    type Value = Node;
    type Error = std::convert::Infallible;

    fn null(&mut self) -> Result<Node, Self::Error> {
        Ok(Node::Null)
    }
    fn boolean(&mut self, value: bool) -> Result<Node, Self::Error> {
        Ok(Node::Bool(value))
    }
    fn int(&mut self, _: i64) -> Result<Node, Self::Error> {
        Ok(Node::Number)
    }
    fn uint(&mut self, value: u64) -> Result<Node, Self::Error> {
        Ok(Node::Count(value))
    }
    fn float(&mut self, _: f64) -> Result<Node, Self::Error> {
        Ok(Node::Number)
    }
    fn string(&mut self, value: &str, _: bool) -> Result<Node, Self::Error> {
        Ok(TreeBuilder::string(self, value))
    }
    fn key(&mut self, value: &str, _: bool) -> Result<Node, Self::Error> {
        Ok(TreeBuilder::string(self, value))
    }
    fn array(&mut self, items: std::vec::Drain<'_, Node>) -> Result<Node, Self::Error> {
        let start = self.nodes.len();
        self.nodes.extend(items);
        Ok(Node::Array(start as u32, (self.nodes.len() - start) as u32))
    }
    fn object(&mut self, members: std::vec::Drain<'_, Node>) -> Result<Object<Node>, Self::Error> {
        let start = self.nodes.len();
        self.nodes.extend(members);
        let count = (self.nodes.len() - start) / 2;
        let key = |i: usize| self.key_bytes(self.nodes.get(start + 2 * i));
        let repeated = if count <= 2 {
            (count == 2 && key(0) == key(1)).then_some(1)
        } else if count <= 8 {
            // each key read once, then compared pairwise
            let mut keys: [&[u8]; 8] = [&[]; 8];
            for (i, slot) in keys.iter_mut().enumerate().take(count) {
                *slot = key(i);
            }
            let keys = keys.get(..count).unwrap_or_default();
            (1..count).find(|&i| {
                let (earlier, rest) = keys.split_at(i);
                rest.first().is_some_and(|k| earlier.contains(k))
            })
        } else if count <= 16 {
            (1..count).find(|&i| (0..i).any(|j| key(j) == key(i)))
        } else {
            let mut seen = std::collections::HashSet::with_capacity(count);
            (0..count).position(|i| !seen.insert(key(i)))
        };
        Ok(match repeated {
            Some(i) => Object::DuplicateKey(i),
            None => Object::Built(Node::Object(start as u32, (2 * count) as u32)),
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
    fn strings_are_spans_unless_escaped() {
        let text = r#"{"a": "plain", "b\u0063": "esc\"aped", "n": [1, -1, 1.5, null, true]}"#;
        let tree = parse(text, &limits()).unwrap();
        let root = tree.root();
        assert_eq!(root.get("a").unwrap().node(), Node::Str(7, 12));
        assert_eq!(root.get("a").unwrap().str(), Some("plain"));
        assert!(matches!(root.get("bc").unwrap().node(), Node::Decoded(_)));
        assert_eq!(root.get("bc").unwrap().str(), Some("esc\"aped"));
        let items: Vec<Node> = root
            .get("n")
            .unwrap()
            .items()
            .unwrap()
            .map(|v| v.node())
            .collect();
        assert_eq!(
            items,
            [
                Node::Count(1),
                Node::Number,
                Node::Number,
                Node::Null,
                Node::Bool(true)
            ]
        );
        assert!(root.get("n").unwrap().get("a").is_none());
        assert!(root.items().is_none());
        assert!(root.get("a").unwrap().items().is_none());
    }

    #[test]
    fn null_members_read_as_absent() {
        let tree = parse(r#"{"a": null, "b": 0, "c": {"d": []}}"#, &limits()).unwrap();
        let root = tree.root();
        assert!(root.get("a").is_none());
        assert_eq!(root.get("b").map(|v| v.node()), Some(Node::Count(0)));
        assert!(root.get("z").is_none());
        assert!(root.get("c").unwrap().is_object());
        assert_eq!(
            root.get("c")
                .unwrap()
                .get("d")
                .unwrap()
                .items()
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn only_bodies_up_to_the_bound_are_trees() {
        let pad = " ".repeat(TREE_MAX_BYTES - 2);
        assert!(parse(&format!("{{}}{pad}"), &limits()).is_some());
        assert!(parse(&format!("{{}}{pad} "), &limits()).is_none());
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
            r#"{"a\"": 1, "a\u0022": 1}"#,
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
