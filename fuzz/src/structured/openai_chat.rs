//! OpenAI Chat Completions chunks: tool calls whose `arguments` text is a
//! deep / wide / repeated-key / huge-number value cut into pieces, choice
//! and tool-call indices of any size, every `finish_reason`, `[DONE]` (with
//! garbage after it), unread and repeated envelope fields.

use arbitrary::Arbitrary;

use super::{args_text, decorate, split, sse, Allow, Args, Decor, Ev, Number, J};

const FINISH: &[Option<&str>] = &[
    Some("stop"),
    Some("length"),
    Some("tool_calls"),
    Some("content_filter"),
    Some("function_call"),
    None,
    Some(""),
    Some("eos"),
];

fn finish(n: u8) -> J {
    match FINISH.get(usize::from(n) % FINISH.len()).copied().flatten() {
        Some(s) => J::s(s),
        None => J::Raw("null".into()),
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Index {
    Small(u8),
    Any(Number),
}

impl Index {
    fn j(self) -> J {
        match self {
            Index::Small(n) => J::n(u64::from(n % 3)),
            Index::Any(n) => J::Raw(n.text()),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Step {
    /// A tool call: its first delta (id, name) then its arguments in pieces.
    Call {
        choice: Index,
        index: Index,
        id: u8,
        args: Args,
        pieces: u8,
    },
    /// One raw arguments piece.
    Piece {
        choice: Index,
        index: Index,
        text: String,
    },
    Content {
        choice: Index,
        text: String,
    },
    Refusal {
        choice: Index,
        text: String,
    },
    Finish {
        choice: Index,
        reason: u8,
        usage: Option<Number>,
    },
    Usage(Number),
    Done,
    Data(String),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// Append a finish chunk with this reason (choice 0).
    pub end: Option<u8>,
    /// Then `[DONE]`, then these bytes.
    pub done: bool,
    pub after_done: Option<Vec<u8>>,
    pub choice: Option<u8>,
    pub decor: Vec<(u8, Decor)>,
    pub seed: u64,
}

fn chunk(choice: Index, delta: J, finish: Option<J>) -> Ev {
    let mut c = vec![("index", choice.j()), ("delta", delta)];
    c.push(("finish_reason", finish.unwrap_or(J::Raw("null".into()))));
    Ev::Json(
        None,
        J::obj(vec![
            ("id", J::s("chatcmpl-1")),
            ("object", J::s("chat.completion.chunk")),
            ("created", J::n(1)),
            ("model", J::s("gpt")),
            ("choices", J::Arr(vec![J::obj(c)])),
        ]),
    )
}

fn call_delta(index: Index, first: Option<u8>, arguments: &str) -> J {
    let mut function = vec![];
    let mut call = vec![("index", index.j())];
    if let Some(id) = first {
        call.push(("id", J::s(&format!("call_{}", id % 4))));
        call.push(("type", J::s("function")));
        function.push(("name", J::s("write_file")));
    }
    function.push(("arguments", J::s(arguments)));
    call.push(("function", J::obj(function)));
    J::obj(vec![("tool_calls", J::Arr(vec![J::obj(call)]))])
}

impl Plan {
    pub fn expand(&self) -> (Vec<Ev>, Allow) {
        let mut allow = Allow::Exact;
        let mut events = vec![chunk(
            Index::Small(0),
            J::obj(vec![("role", J::s("assistant")), ("content", J::s(""))]),
            None,
        )];
        for step in &self.steps {
            match step {
                Step::Call {
                    choice,
                    index,
                    id,
                    args,
                    pieces,
                } => {
                    let (text, repeated) = args_text(args);
                    if repeated {
                        allow = allow.max(Allow::RepeatedKey);
                    }
                    for (i, piece) in split(&text, *pieces, self.seed).iter().enumerate() {
                        events.push(chunk(
                            *choice,
                            call_delta(*index, (i == 0).then_some(*id), piece),
                            None,
                        ));
                    }
                }
                Step::Piece {
                    choice,
                    index,
                    text,
                } => {
                    allow = Allow::Raw;
                    events.push(chunk(*choice, call_delta(*index, None, text), None));
                }
                Step::Content { choice, text } => {
                    events.push(chunk(*choice, J::obj(vec![("content", J::s(text))]), None))
                }
                Step::Refusal { choice, text } => {
                    events.push(chunk(*choice, J::obj(vec![("refusal", J::s(text))]), None))
                }
                Step::Finish {
                    choice,
                    reason,
                    usage,
                } => {
                    let mut ev = chunk(*choice, J::obj(vec![]), Some(finish(*reason)));
                    if let (Ev::Json(_, J::Obj(members)), Some(u)) = (&mut ev, usage) {
                        members.push((
                            "usage".into(),
                            J::obj(vec![
                                ("prompt_tokens", J::Raw(u.text())),
                                ("completion_tokens", J::n(1)),
                                ("total_tokens", J::n(2)),
                            ]),
                        ));
                    }
                    events.push(ev);
                }
                Step::Usage(u) => events.push(Ev::Json(
                    None,
                    J::obj(vec![
                        ("id", J::s("chatcmpl-1")),
                        ("choices", J::Arr(vec![])),
                        (
                            "usage",
                            J::obj(vec![
                                ("prompt_tokens", J::Raw(u.text())),
                                ("completion_tokens", J::n(1)),
                            ]),
                        ),
                    ]),
                )),
                Step::Done => events.push(Ev::Data(None, "[DONE]".into())),
                Step::Data(text) => {
                    allow = Allow::Raw;
                    events.push(Ev::Data(None, text.clone()));
                }
                Step::Bytes(bytes) => {
                    allow = Allow::Raw;
                    events.push(Ev::Bytes(bytes.clone()));
                }
            }
        }
        if let Some(reason) = self.end {
            events.push(chunk(Index::Small(0), J::obj(vec![]), Some(finish(reason))));
        }
        decorate(&mut events, &self.decor);
        if self.done {
            events.push(Ev::Data(None, "[DONE]".into()));
        }
        if let Some(bytes) = &self.after_done {
            events.push(Ev::Bytes(bytes.clone()));
        }
        (events, allow)
    }
}

pub fn check(plan: &Plan) {
    let (events, allow) = plan.expand();
    let choice = plan.choice.map(|c| usize::from(c % 3));
    let _ = super::run("openai-chat", choice, &sse(&events), None, allow, plan.seed);
}
