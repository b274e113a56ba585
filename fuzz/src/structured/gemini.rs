//! Gemini `streamGenerateContent` chunks (and the same chunks as one JSON
//! array body): `functionCall.args` given whole (deep, wide, repeated keys,
//! huge numbers), calls streamed as `partialArgs` (deep and conflicting
//! paths, every value kind, `willContinue`), every `finishReason`, a
//! `promptFeedback.blockReason`, an `error` object, candidate indices of any
//! size, unread and repeated envelope fields.

use arbitrary::Arbitrary;

use super::{args_text, decorate, sse, write_str, Allow, Args, Decor, Ev, Key, Number, J};

const FINISH: &[&str] = &[
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "LANGUAGE",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MISSING_THOUGHT_SIGNATURE",
    "FINISH_REASON_UNSPECIFIED",
    "OTHER",
    "",
];
const BLOCK: &[&str] = &[
    "SAFETY",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "IMAGE_SAFETY",
    "BLOCK_REASON_UNSPECIFIED",
    "",
];
const STATUS: &[&str] = &[
    "RESOURCE_EXHAUSTED",
    "UNAVAILABLE",
    "INTERNAL",
    "DEADLINE_EXCEEDED",
    "INVALID_ARGUMENT",
    "",
];
const NAMES: &[&str] = &["write_file", "read_file", ""];

fn pick<'a>(list: &[&'a str], n: u8) -> &'a str {
    list.get(usize::from(n) % list.len()).copied().unwrap_or("")
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Seg {
    Key(Key),
    Quoted(Key),
    Index(u8),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum PValue {
    Str(String),
    Num(Number),
    Bool(bool),
    Null,
    NullValue,
    /// Two value fields at once.
    Two,
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Partial {
    pub path: Vec<Seg>,
    /// Repeat `.a` this many times (% 300) after `path` (the mapper stops at 128).
    pub deeper: Option<u16>,
    pub value: PValue,
    pub will_continue: Option<bool>,
}

impl Partial {
    fn j(&self) -> J {
        let mut path = String::from("$");
        for seg in &self.path {
            match seg {
                Seg::Key(k) => {
                    path.push('.');
                    path.push_str(k.name());
                }
                Seg::Quoted(k) => {
                    path.push_str("['");
                    path.push_str(k.name());
                    path.push_str("']");
                }
                Seg::Index(i) => path.push_str(&format!("[{}]", i % 3)),
            }
        }
        if let Some(n) = self.deeper {
            path.push_str(&".a".repeat(usize::from(n) % 300));
        }
        let mut members = vec![("jsonPath", J::s(&path))];
        match &self.value {
            PValue::Str(s) => members.push(("stringValue", J::s(s))),
            PValue::Num(n) => members.push(("numberValue", J::Raw(n.text()))),
            PValue::Bool(b) => members.push(("boolValue", J::Raw(b.to_string()))),
            PValue::Null => members.push(("nullValue", J::Raw("null".into()))),
            PValue::NullValue => members.push(("nullValue", J::s("NULL_VALUE"))),
            PValue::Two => {
                members.push(("stringValue", J::s("x")));
                members.push(("boolValue", J::Raw("true".into())));
            }
        }
        if let Some(c) = self.will_continue {
            members.push(("willContinue", J::Raw(c.to_string())));
        }
        J::obj(members)
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Part {
    Text(String),
    Thought(String),
    Signature(String),
    Call {
        name: u8,
        id: Option<String>,
        args: Option<Args>,
        partial: Vec<Partial>,
        will_continue: Option<bool>,
    },
    Unknown(Key),
}

impl Part {
    fn j(&self) -> J {
        match self {
            Part::Text(t) => J::obj(vec![("text", J::s(t))]),
            Part::Thought(t) => J::obj(vec![("text", J::s(t)), ("thought", J::Raw("true".into()))]),
            Part::Signature(s) => J::obj(vec![("thoughtSignature", J::s(s))]),
            Part::Call {
                name,
                id,
                args,
                partial,
                will_continue,
            } => {
                let mut fc = vec![("name", J::s(pick(NAMES, *name)))];
                if let Some(id) = id {
                    fc.push(("id", J::s(id)));
                }
                if let Some(args) = args {
                    fc.push(("args", J::Raw(args_text(args).0)));
                }
                if !partial.is_empty() {
                    fc.push((
                        "partialArgs",
                        J::Arr(partial.iter().map(Partial::j).collect()),
                    ));
                }
                if let Some(c) = will_continue {
                    fc.push(("willContinue", J::Raw(c.to_string())));
                }
                J::obj(vec![("functionCall", J::obj(fc))])
            }
            Part::Unknown(k) => {
                let mut key = String::new();
                write_str(k.name(), &mut key);
                J::obj(vec![(
                    "executableCode",
                    J::obj(vec![("code", J::Raw(key))]),
                )])
            }
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum CandIndex {
    Absent,
    Small(u8),
    Any(Number),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Chunk {
    pub parts: Vec<Part>,
    pub finish: Option<u8>,
    pub index: CandIndex,
    /// Another candidate beside this one, with this index.
    pub other: Option<u8>,
    pub block: Option<u8>,
    pub usage: Option<Number>,
    pub error: Option<(Number, u8)>,
    pub response_id: Option<u8>,
}

impl Chunk {
    fn j(&self) -> J {
        if let Some((code, status)) = &self.error {
            return J::obj(vec![(
                "error",
                J::obj(vec![
                    ("code", J::Raw(code.text())),
                    ("message", J::s("boom")),
                    ("status", J::s(pick(STATUS, *status))),
                ]),
            )]);
        }
        let mut cand = vec![(
            "content",
            J::obj(vec![
                ("role", J::s("model")),
                ("parts", J::Arr(self.parts.iter().map(Part::j).collect())),
            ]),
        )];
        if let Some(f) = self.finish {
            cand.push(("finishReason", J::s(pick(FINISH, f))));
        }
        match &self.index {
            CandIndex::Absent => {}
            CandIndex::Small(n) => cand.push(("index", J::n(u64::from(n % 3)))),
            CandIndex::Any(n) => cand.push(("index", J::Raw(n.text()))),
        }
        let mut candidates = vec![J::obj(cand)];
        if let Some(i) = self.other {
            candidates.push(J::obj(vec![
                (
                    "content",
                    J::obj(vec![(
                        "parts",
                        J::Arr(vec![J::obj(vec![("text", J::s("other"))])]),
                    )]),
                ),
                ("index", J::n(u64::from(i % 3))),
            ]));
        }
        let mut chunk = vec![("candidates", J::Arr(candidates))];
        if let Some(b) = self.block {
            chunk.push((
                "promptFeedback",
                J::obj(vec![("blockReason", J::s(pick(BLOCK, b)))]),
            ));
        }
        if let Some(u) = self.usage {
            chunk.push((
                "usageMetadata",
                J::obj(vec![
                    ("promptTokenCount", J::Raw(u.text())),
                    ("candidatesTokenCount", J::n(2)),
                ]),
            ));
        }
        chunk.push(("modelVersion", J::s("gemini")));
        if let Some(r) = self.response_id {
            chunk.push(("responseId", J::s(&format!("r{}", r % 2))));
        }
        J::obj(chunk)
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Plan {
    pub chunks: Vec<Chunk>,
    /// Append a chunk finishing with this reason.
    pub end: Option<u8>,
    pub choice: Option<u8>,
    pub decor: Vec<(u8, Decor)>,
    pub raw: Vec<(u8, String)>,
    pub seed: u64,
}

impl Plan {
    pub fn expand(&self) -> (Vec<Ev>, String, Allow) {
        let mut chunks: Vec<J> = self.chunks.iter().map(Chunk::j).collect();
        if let Some(f) = self.end {
            chunks.push(J::obj(vec![(
                "candidates",
                J::Arr(vec![J::obj(vec![
                    (
                        "content",
                        J::obj(vec![(
                            "parts",
                            J::Arr(vec![J::obj(vec![("text", J::s(""))])]),
                        )]),
                    ),
                    ("finishReason", J::s(pick(FINISH, f))),
                ])]),
            )]));
        }
        let mut events: Vec<Ev> = chunks.into_iter().map(|j| Ev::Json(None, j)).collect();
        decorate(&mut events, &self.decor);
        let mut allow = Allow::Strict;
        for (at, text) in &self.raw {
            let at = usize::from(*at) % (events.len() + 1);
            events.insert(at, Ev::Data(None, text.clone()));
            allow = Allow::Raw;
        }
        let body = {
            let mut out = String::from("[");
            let mut first = true;
            for ev in &events {
                let text = match ev {
                    Ev::Json(_, j) => j.text(),
                    Ev::Data(_, d) => d.clone(),
                    Ev::Bytes(_) => continue,
                };
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&text);
            }
            out.push(']');
            out
        };
        (events, body, allow)
    }
}

pub fn check(plan: &Plan) {
    let (events, body, allow) = plan.expand();
    let choice = plan.choice.map(|c| usize::from(c % 3));
    let _ = super::run(
        "gemini",
        choice,
        &sse(&events),
        Some(&body),
        allow,
        plan.seed,
    );
}
