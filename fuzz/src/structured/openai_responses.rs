//! OpenAI Responses events: function calls whose arguments text is a deep /
//! wide / repeated-key / huge-number value cut into deltas (with the
//! `.done` text and the final output matching or not), sequence numbers
//! and output indices of any size, every terminal event with every
//! `status` and `incomplete_details.reason`, in-stream `error` events,
//! unread and repeated envelope fields.

use arbitrary::Arbitrary;

use super::{args_text, decorate, split, sse, Allow, Args, Decor, Ev, Number, J};

const TERMINALS: &[&str] = &[
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.cancelled",
];
const STATUS: &[Option<&str>] = &[
    Some("completed"),
    Some("incomplete"),
    Some("failed"),
    Some("cancelled"),
    Some("in_progress"),
    Some("queued"),
    Some("error"),
    Some(""),
    None,
];
const REASONS: &[Option<&str>] = &[
    Some("max_output_tokens"),
    Some("content_filter"),
    Some("other"),
    None,
];

fn opt(list: &[Option<&str>], n: u8) -> Option<J> {
    list.get(usize::from(n) % list.len())
        .copied()
        .flatten()
        .map(J::s)
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

/// Sequence numbers: counted, absent, repeated, or one of any size.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Seq {
    Next,
    Absent,
    Same,
    Any(Number),
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Step {
    /// A function call: added, deltas, (`done`) arguments done, (`item_done`)
    /// item done; `mismatch` changes the final text.
    Call {
        index: Index,
        id: u8,
        args: Args,
        pieces: u8,
        done: bool,
        item_done: bool,
        mismatch: bool,
    },
    Delta {
        index: Index,
        id: u8,
        text: String,
    },
    Text {
        index: Index,
        text: String,
    },
    Terminal {
        kind: u8,
        status: u8,
        reason: u8,
        output: bool,
        usage: Option<Number>,
    },
    Unknown(String),
    Data(String),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Plan {
    pub created: bool,
    pub steps: Vec<Step>,
    /// Append `response.completed` (status completed, output as streamed).
    pub end: bool,
    pub seqs: Vec<Seq>,
    pub decor: Vec<(u8, Decor)>,
    pub seed: u64,
}

struct Builder<'a> {
    events: Vec<Ev>,
    output: Vec<J>,
    seq: u64,
    seqs: &'a [Seq],
}

impl Builder<'_> {
    fn push(&mut self, ty: &str, mut members: Vec<(&str, J)>) {
        let rule = if self.seqs.is_empty() {
            Seq::Next
        } else {
            self.seqs
                .get(self.events.len() % self.seqs.len())
                .copied()
                .unwrap_or(Seq::Next)
        };
        members.insert(0, ("type", J::s(ty)));
        match rule {
            Seq::Next => {
                members.insert(1, ("sequence_number", J::n(self.seq)));
                self.seq += 1;
            }
            Seq::Same => members.insert(1, ("sequence_number", J::n(self.seq))),
            Seq::Absent => {}
            Seq::Any(n) => members.insert(1, ("sequence_number", J::Raw(n.text()))),
        }
        self.events.push(Ev::Json(None, J::obj(members)));
    }

    fn response(&self, status: Option<J>, extra: Vec<(&str, J)>) -> J {
        let mut r = vec![
            ("id", J::s("resp_1")),
            ("object", J::s("response")),
            ("model", J::s("gpt")),
        ];
        if let Some(s) = status {
            r.push(("status", s));
        }
        r.extend(extra);
        J::obj(r)
    }
}

impl Plan {
    pub fn expand(&self) -> (Vec<Ev>, Allow) {
        let mut allow = Allow::Exact;
        let mut b = Builder {
            events: Vec::new(),
            output: Vec::new(),
            seq: 0,
            seqs: &self.seqs,
        };
        if self.created {
            let r = b.response(Some(J::s("in_progress")), vec![("output", J::Arr(vec![]))]);
            b.push("response.created", vec![("response", r)]);
        }
        for step in &self.steps {
            match step {
                Step::Call {
                    index,
                    id,
                    args,
                    pieces,
                    done,
                    item_done,
                    mismatch,
                } => {
                    let (text, repeated) = args_text(args);
                    if repeated {
                        allow = allow.max(Allow::RepeatedKey);
                    }
                    let item_id = format!("fc_{}", id % 4);
                    let item = |arguments: &str, status: &str| {
                        J::obj(vec![
                            ("id", J::s(&item_id)),
                            ("type", J::s("function_call")),
                            ("status", J::s(status)),
                            ("arguments", J::s(arguments)),
                            ("call_id", J::s(&format!("call_{}", id % 4))),
                            ("name", J::s("write_file")),
                        ])
                    };
                    b.push(
                        "response.output_item.added",
                        vec![
                            ("output_index", index.j()),
                            ("item", item("", "in_progress")),
                        ],
                    );
                    for piece in split(&text, *pieces, self.seed) {
                        b.push(
                            "response.function_call_arguments.delta",
                            vec![
                                ("item_id", J::s(&item_id)),
                                ("output_index", index.j()),
                                ("delta", J::s(&piece)),
                            ],
                        );
                    }
                    let final_text = if *mismatch {
                        format!("{text} ")
                    } else {
                        text.clone()
                    };
                    if *done {
                        b.push(
                            "response.function_call_arguments.done",
                            vec![
                                ("item_id", J::s(&item_id)),
                                ("output_index", index.j()),
                                ("arguments", J::s(&final_text)),
                            ],
                        );
                    }
                    if *item_done {
                        b.push(
                            "response.output_item.done",
                            vec![
                                ("output_index", index.j()),
                                ("item", item(&final_text, "completed")),
                            ],
                        );
                    }
                    b.output.push(item(&final_text, "completed"));
                }
                Step::Delta { index, id, text } => {
                    allow = Allow::Raw;
                    b.push(
                        "response.function_call_arguments.delta",
                        vec![
                            ("item_id", J::s(&format!("fc_{}", id % 4))),
                            ("output_index", index.j()),
                            ("delta", J::s(text)),
                        ],
                    );
                }
                Step::Text { index, text } => {
                    let message = |content: Vec<J>, status: &str| {
                        J::obj(vec![
                            ("id", J::s("msg_1")),
                            ("type", J::s("message")),
                            ("role", J::s("assistant")),
                            ("status", J::s(status)),
                            ("content", J::Arr(content)),
                        ])
                    };
                    let part = J::obj(vec![
                        ("type", J::s("output_text")),
                        ("text", J::s(text)),
                        ("annotations", J::Arr(vec![])),
                    ]);
                    b.push(
                        "response.output_item.added",
                        vec![
                            ("output_index", index.j()),
                            ("item", message(vec![], "in_progress")),
                        ],
                    );
                    b.push(
                        "response.output_text.delta",
                        vec![
                            ("item_id", J::s("msg_1")),
                            ("output_index", index.j()),
                            ("content_index", J::n(0)),
                            ("delta", J::s(text)),
                        ],
                    );
                    b.push(
                        "response.output_item.done",
                        vec![
                            ("output_index", index.j()),
                            ("item", message(vec![part.clone()], "completed")),
                        ],
                    );
                    b.output.push(message(vec![part], "completed"));
                }
                Step::Terminal {
                    kind,
                    status,
                    reason,
                    output,
                    usage,
                } => {
                    let ty = TERMINALS
                        .get(usize::from(*kind) % TERMINALS.len())
                        .copied()
                        .unwrap_or("response.completed");
                    if ty == "error" {
                        b.push(
                            "error",
                            vec![
                                ("code", J::s("server_error")),
                                ("message", J::s("boom")),
                                ("param", J::Raw("null".into())),
                            ],
                        );
                        continue;
                    }
                    let mut extra = vec![];
                    if *output {
                        extra.push(("output", J::Arr(b.output.clone())));
                    }
                    if let Some(r) = opt(REASONS, *reason) {
                        extra.push(("incomplete_details", J::obj(vec![("reason", r)])));
                    }
                    if ty == "response.failed" {
                        extra.push((
                            "error",
                            J::obj(vec![
                                ("code", J::s("server_error")),
                                ("message", J::s("boom")),
                            ]),
                        ));
                    }
                    if let Some(u) = usage {
                        extra.push((
                            "usage",
                            J::obj(vec![
                                ("input_tokens", J::Raw(u.text())),
                                ("output_tokens", J::n(1)),
                            ]),
                        ));
                    }
                    let r = b.response(opt(STATUS, *status), extra);
                    b.push(ty, vec![("response", r)]);
                }
                Step::Unknown(name) => b.push(name, vec![]),
                Step::Data(text) => {
                    allow = Allow::Raw;
                    b.events.push(Ev::Data(None, text.clone()));
                }
                Step::Bytes(bytes) => {
                    allow = Allow::Raw;
                    b.events.push(Ev::Bytes(bytes.clone()));
                }
            }
        }
        if self.end {
            let r = b.response(
                Some(J::s("completed")),
                vec![("output", J::Arr(b.output.clone()))],
            );
            b.push("response.completed", vec![("response", r)]);
        }
        let mut events = b.events;
        decorate(&mut events, &self.decor);
        (events, allow)
    }
}

pub fn check(plan: &Plan) {
    let (events, allow) = plan.expand();
    let _ = super::run(
        "openai-responses",
        None,
        &sse(&events),
        None,
        allow,
        plan.seed,
    );
}
