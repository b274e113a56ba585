//! Structure-aware provider streams. Each provider target takes an
//! `arbitrary`-derived plan (events with their fields, object-form tool
//! arguments, decorations of the envelopes) and expands it into the
//! provider's SSE stream (and, where the provider has one, a whole body).
//!
//! Sizes are encoded compactly and expanded here: a [`Depth`] is one integer
//! that becomes up to 150,000 levels of nesting, a [`Width`] up to 100,000
//! members, a [`Number`] up to thousands of digits. So libFuzzer's small
//! inputs reach sizes its byte mutations never would.
//!
//! The invariant (every target): the chain (through [`crate::pipeline`])
//! does not panic, crash or overflow the stack, and ends in a typed error or
//! a response; a response respects the limits and has every item ended
//! unless its finish reason truncates; and a complete tool call's arguments
//! text passes the strict parser, except for the codes the plan allows
//! ([`Allow`]): an integer beyond 64 bits (kept exact as text), and for
//! arguments the provider streamed as text, a repeated key or raw text.

use std::collections::HashSet;

use arbitrary::Arbitrary;
use decisions::core::assemble::{Kind, Response};
use decisions::core::errors::Code;
use decisions::core::json::{parse_str, Builder, Failure, Object};
use decisions::core::limits::Limits;

use crate::pipeline;
use crate::sse::{chunks, Rng};

pub mod anthropic;
pub mod gemini;
pub mod openai_chat;
pub mod openai_responses;

// ------------------------------------------------------------------ sizes

/// A nesting depth: small (around serde_json's 128), medium (around
/// Python's recursion limit of 1,000) or huge (50,000 to 150,000).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Depth {
    Small(u8),
    Medium(u16),
    Huge(u32),
}

impl Depth {
    pub fn get(self) -> usize {
        match self {
            Depth::Small(n) => usize::from(n) % 160,
            Depth::Medium(n) => usize::from(n) % 5_000,
            Depth::Huge(n) => 50_000 + (n as usize) % 100_001,
        }
    }
}

/// A container width: small, or 1,000 to 101,000.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Width {
    Small(u8),
    Large(u32),
}

impl Width {
    pub fn get(self) -> usize {
        match self {
            Width::Small(n) => usize::from(n) % 64,
            Width::Large(n) => 1_000 + (n as usize) % 100_001,
        }
    }
}

// ------------------------------------------------------------------ values

/// Object keys of generated values: few, so keys repeat.
const KEYS: &[&str] = &[
    "path", "content", "a", "b", "\u{e9}", "x", "type", "id", "name", "input", "args", "",
];

/// A key; `escaped` writes every character as `\uXXXX` (it decodes to the
/// same key: a repeat in disguise).
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Key {
    pub which: u8,
    pub escaped: bool,
}

impl Key {
    pub fn name(self) -> &'static str {
        KEYS.get(usize::from(self.which) % KEYS.len())
            .copied()
            .unwrap_or("a")
    }
}

/// Write `s` as a JSON string.
pub fn write_str(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
}

fn write_key(key: Key, out: &mut String) {
    if key.escaped {
        out.push('"');
        for unit in key.name().encode_utf16() {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        out.push('"');
    } else {
        write_str(key.name(), out);
    }
}

/// The decimal digits of 2**n.
fn two_pow(n: u32) -> String {
    let mut digits = vec![1u8]; // little endian
    for _ in 0..n {
        let mut carry = 0;
        for d in digits.iter_mut() {
            let v = *d * 2 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        if carry > 0 {
            digits.push(carry);
        }
    }
    digits.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

/// A number as JSON text: machine sizes, powers of two around the 64-bit
/// edges, and long digit runs with fractions and exponents.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Number {
    I64(i64),
    U64(u64),
    /// 2**(n % 256), and its negation, and one less.
    TwoPow {
        n: u8,
        neg: bool,
        minus_one: bool,
    },
    /// `digits % 20,000 + 1` digits, a fraction and an exponent.
    Long {
        digits: u16,
        frac: u8,
        exp: Option<i16>,
        neg: bool,
    },
    Float(f64),
}

impl Number {
    pub fn write(self, out: &mut String) {
        match self {
            Number::I64(v) => out.push_str(&v.to_string()),
            Number::U64(v) => out.push_str(&v.to_string()),
            Number::TwoPow { n, neg, minus_one } => {
                let mut text = two_pow(u32::from(n));
                if minus_one {
                    // the last digit of 2**n is never 0
                    if let Some(last) = text.pop() {
                        text.push(char::from(last as u8 - 1));
                    }
                }
                if neg {
                    out.push('-');
                }
                out.push_str(&text);
            }
            Number::Long {
                digits,
                frac,
                exp,
                neg,
            } => {
                if neg {
                    out.push('-');
                }
                out.push('9');
                out.extend(
                    (0..usize::from(digits) % 20_000).map(|i| char::from(b'0' + (i % 10) as u8)),
                );
                if frac > 0 {
                    out.push('.');
                    out.extend((0..usize::from(frac)).map(|i| char::from(b'1' + (i % 9) as u8)));
                }
                if let Some(e) = exp {
                    out.push_str(&format!("e{e}"));
                }
            }
            Number::Float(f) if f.is_finite() => out.push_str(&format!("{f:?}")),
            Number::Float(_) => out.push_str("1.5"),
        }
    }

    pub fn text(self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum WideKind {
    Ints,
    Strings,
    DistinctKeys,
    /// One key, `width` times.
    SameKey(Key),
    Objects,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Leaf {
    Null,
    Bool(bool),
    Num(Number),
    Str(String),
    EmptyObject,
    EmptyArray,
    Wide { width: Width, kind: WideKind },
}

/// One step of a deep value: an array or an object member.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Nest {
    Array,
    Object(Key),
}

/// `depth` levels following `pattern` (cycled), then `leaf`; with
/// `sibling`, each level also holds that value beside the next level.
#[derive(Arbitrary, Debug, Clone)]
pub struct Deep {
    pub depth: Depth,
    pub pattern: Vec<Nest>,
    pub leaf: Leaf,
    pub sibling: Option<Leaf>,
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Value {
    Leaf(Leaf),
    Deep(Deep),
}

/// Object-form arguments: members in order (keys may repeat), or (rarely)
/// a value that is not an object.
#[derive(Arbitrary, Debug, Clone)]
pub enum Args {
    Object(Vec<(Key, Value)>),
    Other(Value),
}

/// The most text one deep value may take (its sibling repeated per level).
pub const MAX_TEXT: usize = 16 << 20;

/// Writes values, noting whether an object had a repeated key.
#[derive(Default)]
pub struct Writer {
    pub out: String,
    pub repeated_key: bool,
}

impl Writer {
    pub fn leaf(&mut self, leaf: &Leaf) {
        let out = &mut self.out;
        match leaf {
            Leaf::Null => out.push_str("null"),
            Leaf::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Leaf::Num(n) => n.write(out),
            Leaf::Str(s) => write_str(s, out),
            Leaf::EmptyObject => out.push_str("{}"),
            Leaf::EmptyArray => out.push_str("[]"),
            Leaf::Wide { width, kind } => {
                let n = width.get();
                let object = matches!(kind, WideKind::DistinctKeys | WideKind::SameKey(_));
                out.push(if object { '{' } else { '[' });
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    match kind {
                        WideKind::Ints => out.push_str(&i.to_string()),
                        WideKind::Strings => out.push_str("\"s\""),
                        WideKind::DistinctKeys => out.push_str(&format!("\"k{i}\":{i}")),
                        WideKind::SameKey(key) => {
                            write_key(*key, out);
                            out.push_str(&format!(":{i}"));
                        }
                        WideKind::Objects => out.push_str("{\"a\":[1]}"),
                    }
                }
                if matches!(kind, WideKind::SameKey(_)) && n > 1 {
                    self.repeated_key = true;
                }
                self.out.push(if object { '}' } else { ']' });
            }
        }
    }

    pub fn value(&mut self, value: &Value) {
        match value {
            Value::Leaf(leaf) => self.leaf(leaf),
            Value::Deep(deep) => {
                let depth = deep.depth.get();
                // written once (a sibling is the same at every level)
                let sibling = deep.sibling.as_ref().map(|leaf| {
                    let mut w = Writer::default();
                    w.leaf(leaf);
                    self.repeated_key |= w.repeated_key;
                    w.out
                });
                // a wide sibling at every level of a deep value would be
                // gigabytes: kept only while the whole stays under MAX_TEXT
                let sibling = sibling.filter(|s| s.len().saturating_mul(depth) <= MAX_TEXT);
                let mut closers = Vec::with_capacity(depth);
                for i in 0..depth {
                    let nest = if deep.pattern.is_empty() {
                        Nest::Array
                    } else {
                        deep.pattern
                            .get(i % deep.pattern.len())
                            .copied()
                            .unwrap_or(Nest::Array)
                    };
                    match nest {
                        Nest::Array => {
                            self.out.push('[');
                            if let Some(s) = &sibling {
                                self.out.push_str(s);
                                self.out.push(',');
                            }
                            closers.push(']');
                        }
                        Nest::Object(key) => {
                            self.out.push('{');
                            if let Some(s) = &sibling {
                                self.out.push_str("\"~\":");
                                self.out.push_str(s);
                                self.out.push(',');
                            }
                            write_key(key, &mut self.out);
                            self.out.push(':');
                            closers.push('}');
                        }
                    }
                }
                self.leaf(&deep.leaf);
                self.out.extend(closers.iter().rev());
            }
        }
    }

    pub fn args(&mut self, args: &Args) {
        match args {
            Args::Other(v) => self.value(v),
            Args::Object(members) => {
                let mut seen = HashSet::new();
                self.out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    if !seen.insert(key.name()) {
                        self.repeated_key = true;
                    }
                    write_key(*key, &mut self.out);
                    self.out.push(':');
                    self.value(value);
                }
                self.out.push('}');
            }
        }
    }
}

/// The JSON text of `args`, and whether it repeats a key.
pub fn args_text(args: &Args) -> (String, bool) {
    let mut w = Writer::default();
    w.args(args);
    (w.out, w.repeated_key)
}

/// The JSON text of `value`.
pub fn value_text(value: &Value) -> String {
    let mut w = Writer::default();
    w.value(value);
    w.out
}

/// The JSON text of `leaf`.
pub fn leaf_text(leaf: &Leaf) -> String {
    let mut w = Writer::default();
    w.leaf(leaf);
    w.out
}

/// `text` cut into `n % 16 + 1` pieces at character boundaries.
pub fn split(text: &str, n: u8, seed: u64) -> Vec<String> {
    let count = usize::from(n % 16) + 1;
    let mut rng = Rng::new(seed ^ text.len() as u64);
    let mut cuts: Vec<usize> = (1..count).map(|_| rng.below(text.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for mut at in cuts {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        if at >= from {
            out.push(text.get(from..at).unwrap_or_default().to_owned());
            from = at;
        }
    }
    out.push(text.get(from..).unwrap_or_default().to_owned());
    out
}

// ------------------------------------------------------------------ envelopes

/// An envelope under construction: objects keep their members in order, so
/// a key can be repeated.
#[derive(Debug, Clone)]
pub enum J {
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn s(text: &str) -> J {
        let mut out = String::new();
        write_str(text, &mut out);
        J::Raw(out)
    }

    pub fn n(value: u64) -> J {
        J::Raw(value.to_string())
    }

    pub fn obj(members: Vec<(&str, J)>) -> J {
        J::Obj(
            members
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    }

    pub fn write(&self, out: &mut String) {
        match self {
            J::Raw(text) => out.push_str(text),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// The `n`-th object in preorder (the envelope itself is 0).
    fn object_mut(&mut self, n: &mut usize) -> Option<&mut Vec<(String, J)>> {
        match self {
            J::Raw(_) => None,
            J::Arr(items) => items.iter_mut().find_map(|item| item.object_mut(n)),
            J::Obj(_) if *n == 0 => match self {
                J::Obj(members) => Some(members),
                _ => None,
            },
            J::Obj(members) => {
                *n -= 1;
                members.iter_mut().find_map(|(_, v)| v.object_mut(n))
            }
        }
    }

    fn count_objects(&self) -> usize {
        match self {
            J::Raw(_) => 0,
            J::Arr(items) => items.iter().map(J::count_objects).sum(),
            J::Obj(members) => {
                1 + members
                    .iter()
                    .map(|(_, v)| v.count_objects())
                    .sum::<usize>()
            }
        }
    }
}

/// Field names an envelope may carry unread (or that another object reads).
const UNREAD: &[&str] = &[
    "x_unknown",
    "logprobs",
    "metadata",
    "obfuscation",
    "system_fingerprint",
    "safetyRatings",
    "citationMetadata",
    "stop_sequence",
    "service_tier",
    "role",
    "type",
    "index",
    "id",
];

/// A change to one object of an envelope (`target` picks the object).
#[derive(Arbitrary, Debug, Clone)]
pub enum Decor {
    /// A member no mapper reads (or one another object reads), any value.
    Unread {
        target: u8,
        key: u8,
        value: Value,
    },
    /// A member repeated: same value, or another.
    Repeat {
        target: u8,
        member: u8,
        value: Option<Leaf>,
        first: bool,
    },
    Drop {
        target: u8,
        member: u8,
    },
    Replace {
        target: u8,
        member: u8,
        value: Leaf,
    },
}

impl Decor {
    pub fn apply(&self, envelope: &mut J) {
        let count = envelope.count_objects();
        if count == 0 {
            return;
        }
        let target = match self {
            Decor::Unread { target, .. }
            | Decor::Repeat { target, .. }
            | Decor::Drop { target, .. }
            | Decor::Replace { target, .. } => usize::from(*target) % count,
        };
        let mut n = target;
        let Some(members) = envelope.object_mut(&mut n) else {
            return;
        };
        match self {
            Decor::Unread { key, value, .. } => {
                let name = UNREAD
                    .get(usize::from(*key) % UNREAD.len())
                    .copied()
                    .unwrap_or("x");
                members.push((name.to_owned(), J::Raw(value_text(value))));
            }
            Decor::Repeat {
                member,
                value,
                first,
                ..
            } if !members.is_empty() => {
                let at = usize::from(*member) % members.len();
                let Some((key, old)) = members.get(at).cloned() else {
                    return;
                };
                let repeat = match value {
                    Some(leaf) => J::Raw(leaf_text(leaf)),
                    None => old,
                };
                members.insert(if *first { at } else { members.len() }, (key, repeat));
            }
            Decor::Drop { member, .. } if !members.is_empty() => {
                members.remove(usize::from(*member) % members.len());
            }
            Decor::Replace { member, value, .. } if !members.is_empty() => {
                let at = usize::from(*member) % members.len();
                if let Some(slot) = members.get_mut(at) {
                    slot.1 = J::Raw(leaf_text(value));
                }
            }
            _ => {}
        }
    }
}

/// Decorations aimed at events: `(event, decoration)`.
pub fn decorate(events: &mut [Ev], decor: &[(u8, Decor)]) {
    if events.is_empty() {
        return;
    }
    for (at, d) in decor {
        let n = events.len();
        if let Some(Ev::Json(_, j)) = events.get_mut(usize::from(*at) % n) {
            d.apply(j);
        }
    }
}

/// One SSE event: an envelope (with its `event:` name), or raw data text.
#[derive(Debug, Clone)]
pub enum Ev {
    Json(Option<String>, J),
    Data(Option<String>, String),
    /// Bytes written as they are (not framed).
    Bytes(Vec<u8>),
}

/// The SSE bytes of `events`.
pub fn sse(events: &[Ev]) -> Vec<u8> {
    let mut out = Vec::new();
    let frame = |name: &Option<String>, data: &str, out: &mut Vec<u8>| {
        if let Some(name) = name {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(name.replace(['\r', '\n'], " ").as_bytes());
            out.push(b'\n');
        }
        for line in data.split('\n') {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line.trim_end_matches('\r').as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
    };
    for ev in events {
        match ev {
            Ev::Json(name, j) => frame(name, &j.text(), &mut out),
            Ev::Data(name, data) => frame(name, data, &mut out),
            Ev::Bytes(bytes) => out.extend_from_slice(bytes),
        }
    }
    out
}

// ------------------------------------------------------------------ checks

/// What a complete call's arguments text may fail the strict parser with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Allow {
    /// Nothing: every call's arguments came as objects, which the envelope
    /// rule holds to the strict parser's rules.
    Strict,
    /// Only an integer beyond 64 bits (streamed text the plan wrote without
    /// a repeated key: `decide` refuses it when it parses the text).
    Exact,
    /// Also a repeated key (the provider streamed text that repeats one).
    RepeatedKey,
    /// Anything (the provider streamed raw text).
    Raw,
}

/// Values built by the strict parser: only keys are kept (to find repeats).
struct KeysOnly;

impl Builder for KeysOnly {
    type Value = Option<String>;
    type Error = ();
    fn null(&mut self) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn boolean(&mut self, _: bool) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn int(&mut self, _: i64) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn uint(&mut self, _: u64) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn float(&mut self, _: f64) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn string(&mut self, _: &str, _: bool) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn key(&mut self, v: &str, _: bool) -> Result<Self::Value, ()> {
        Ok(Some(v.to_owned()))
    }
    fn array(&mut self, _: std::vec::Drain<'_, Self::Value>) -> Result<Self::Value, ()> {
        Ok(None)
    }
    fn object(
        &mut self,
        members: std::vec::Drain<'_, Self::Value>,
    ) -> Result<Object<Self::Value>, ()> {
        let mut seen = HashSet::new();
        for (i, key) in members.step_by(2).enumerate() {
            if !seen.insert(key) {
                return Ok(Object::DuplicateKey(i));
            }
        }
        Ok(Object::Built(None))
    }
}

/// Limits wide enough that only the grammar and I-JSON can fail.
fn wide_limits() -> Limits {
    Limits::from_values([usize::MAX / 4; 16])
}

/// The strict parser's verdict on arguments text.
pub fn strict(text: &str) -> Result<(), Code> {
    match parse_str(text, &wide_limits(), &mut KeysOnly) {
        Ok(_) => Ok(()),
        Err(Failure::Parse(e)) => Err(e.code),
        Err(Failure::Build(())) => Err(Code::STREAM_FAILED),
    }
}

fn allowed(code: Code, allow: Allow) -> bool {
    match allow {
        Allow::Strict => false,
        Allow::Raw => true,
        Allow::RepeatedKey => matches!(code, Code::NUMBER_OUT_OF_RANGE | Code::DUPLICATE_KEY),
        Allow::Exact => code == Code::NUMBER_OUT_OF_RANGE,
    }
}

/// The response invariants (see the module docs).
pub fn check_response(response: &Response, limits: &Limits, allow: Allow) {
    crate::provider::summarise(response, limits);
    for item in &response.items {
        if item.kind == Kind::ToolCall && response.call_complete(item) {
            if let Err(code) = strict(&item.text) {
                // a call the provider sent no arguments for (an Anthropic
                // `tool_use` without `input`, a Chat call without `arguments`)
                // has none: `decide` refuses it as EMPTY_INPUT, never fills it in
                assert!(
                    code == Code::EMPTY_INPUT || allowed(code, allow),
                    "complete call {:?} has arguments the strict parser refuses ({code:?}, allowed {allow:?}): {:?}",
                    item.call_id,
                    item.text.get(..item.text.len().min(200))
                );
            }
        }
    }
}

/// The stack the chain runs on: 512 KiB, what a secondary thread gets by
/// default on macOS (a host may call the library from any thread). Depth
/// in the input must never turn into depth of the stack; on the main
/// thread's 8 MiB a recursion would need far deeper input to show.
pub const STACK: usize = 512 * 1024;

/// Run `stream` (whole, and in pieces) and `body` through the chain, on a
/// thread with a [`STACK`]-sized stack, and check each outcome. Returns the
/// whole-stream outcome (for tests).
pub fn run(
    provider: &str,
    choice: Option<usize>,
    stream: &[u8],
    body: Option<&str>,
    allow: Allow,
    seed: u64,
) -> Result<(), Code> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, || {
                run_here(provider, choice, stream, body, allow, seed)
            });
        match worker {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(e) => panic!("cannot start the worker thread: {e}"),
        }
    })
}

fn run_here(
    provider: &str,
    choice: Option<usize>,
    stream: &[u8],
    body: Option<&str>,
    allow: Allow,
    seed: u64,
) -> Result<(), Code> {
    let limits = Limits::default();
    if stream.len() > 4 * MAX_TEXT {
        return Ok(()); // past every stream limit: a plan too big to be worth its time
    }
    let whole = pipeline::stream(provider, choice, &[stream], limits, |r| {
        check_response(r, &limits, allow)
    });
    let mut rng = Rng::new(seed);
    let pieces = chunks(stream, &mut rng, 4096);
    let _ = pipeline::stream(provider, choice, &pieces, limits, |r| {
        check_response(r, &limits, allow)
    });
    if let Some(body) = body {
        let _ = pipeline::body(provider, choice, body, limits, |r| {
            check_response(r, &limits, allow)
        });
    }
    whole
}
