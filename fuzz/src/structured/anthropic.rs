//! Anthropic Messages streams (and the matching message body): `tool_use`
//! blocks whose `input` is given whole (deep, wide, repeated keys, huge
//! numbers) or streamed as `input_json_delta` text, every `stop_reason`,
//! in-stream `error` events, unread and repeated envelope fields.

use arbitrary::Arbitrary;

use super::{args_text, decorate, split, sse, Allow, Args, Decor, Ev, Number, J};

/// A content block index: usually small (so blocks meet), or any number.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Index {
    Small(u8),
    Any(Number),
}

impl Index {
    fn j(self) -> J {
        match self {
            Index::Small(n) => J::n(u64::from(n % 4)),
            Index::Any(n) => J::Raw(n.text()),
        }
    }
}

const STOP_REASONS: &[Option<&str>] = &[
    Some("end_turn"),
    Some("stop_sequence"),
    Some("tool_use"),
    Some("max_tokens"),
    Some("model_context_window_exceeded"),
    Some("refusal"),
    Some("pause_turn"),
    None,
    Some(""),
    Some("something_new"),
];

const ERROR_TYPES: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
    "invalid_request_error",
    "authentication_error",
    "",
];

fn stop_reason(n: u8) -> J {
    match STOP_REASONS
        .get(usize::from(n) % STOP_REASONS.len())
        .copied()
        .flatten()
    {
        Some(s) => J::s(s),
        None => J::Raw("null".into()),
    }
}

#[derive(Arbitrary, Debug, Clone)]
pub enum Step {
    Start {
        usage: Option<Number>,
    },
    /// `content_block_start` of a tool_use block (input given whole when
    /// `input` is set), then `input_json_delta` pieces of `streamed`, then
    /// (with `stop`) its `content_block_stop`.
    ToolUse {
        index: Index,
        input: Option<Args>,
        streamed: Option<(Args, u8)>,
        stop: bool,
    },
    Text {
        index: Index,
        text: String,
        stop: bool,
    },
    Thinking {
        index: Index,
        text: String,
    },
    /// One raw `input_json_delta` piece.
    JsonDelta {
        index: Index,
        piece: String,
    },
    TextDelta {
        index: Index,
        text: String,
    },
    Stop {
        index: Index,
    },
    MessageDelta {
        stop: u8,
        usage: Option<Number>,
    },
    MessageStop,
    Error {
        kind: u8,
    },
    Ping,
    Unknown {
        name: String,
    },
    /// Raw data (not JSON, or anything).
    Data(String),
    Bytes(Vec<u8>),
}

#[derive(Arbitrary, Debug, Clone)]
pub struct Plan {
    /// Prepend a `message_start`.
    pub start: bool,
    pub steps: Vec<Step>,
    /// Append `message_delta` with this stop reason and `message_stop`.
    pub end: Option<u8>,
    pub decor: Vec<(u8, Decor)>,
    /// Name events with `event:` lines.
    pub named: bool,
    pub seed: u64,
}

fn ev(named: bool, ty: &str, mut members: Vec<(&str, J)>) -> Ev {
    members.insert(0, ("type", J::s(ty)));
    Ev::Json(named.then(|| ty.to_owned()), J::obj(members))
}

fn delta(named: bool, index: Index, ty: &str, field: &str, text: &str) -> Ev {
    ev(
        named,
        "content_block_delta",
        vec![
            ("index", index.j()),
            (
                "delta",
                J::obj(vec![("type", J::s(ty)), (field, J::s(text))]),
            ),
        ],
    )
}

impl Plan {
    /// The SSE events, the message body with the same blocks, and what a
    /// complete call's arguments may fail the strict parser with.
    pub fn expand(&self) -> (Vec<Ev>, String, Allow) {
        let named = self.named;
        let mut allow = Allow::Strict;
        let mut events = Vec::new();
        let mut blocks = Vec::new();
        let usage = |n: &Option<Number>| match n {
            Some(n) => J::obj(vec![
                ("input_tokens", J::Raw(n.text())),
                ("output_tokens", J::n(1)),
            ]),
            None => J::obj(vec![("input_tokens", J::n(3)), ("output_tokens", J::n(1))]),
        };
        let start = |u: &Option<Number>| {
            ev(
                named,
                "message_start",
                vec![(
                    "message",
                    J::obj(vec![
                        ("id", J::s("msg_1")),
                        ("type", J::s("message")),
                        ("role", J::s("assistant")),
                        ("model", J::s("claude")),
                        ("content", J::Arr(vec![])),
                        ("stop_reason", J::Raw("null".into())),
                        ("usage", usage(u)),
                    ]),
                )],
            )
        };
        if self.start {
            events.push(start(&None));
        }
        for step in &self.steps {
            match step {
                Step::Start { usage } => events.push(start(usage)),
                Step::ToolUse {
                    index,
                    input,
                    streamed,
                    stop,
                } => {
                    let mut block = vec![
                        ("type", J::s("tool_use")),
                        ("id", J::s("toolu_1")),
                        ("name", J::s("write_file")),
                    ];
                    let mut whole = None;
                    if let Some(input) = input {
                        let (text, _) = args_text(input);
                        whole = Some(text.clone());
                        block.push(("input", J::Raw(text)));
                    }
                    events.push(ev(
                        named,
                        "content_block_start",
                        vec![
                            ("index", index.j()),
                            ("content_block", J::obj(block.clone())),
                        ],
                    ));
                    if let Some((args, pieces)) = streamed {
                        let (text, repeated) = args_text(args);
                        allow = allow.max(if repeated {
                            Allow::RepeatedKey
                        } else {
                            Allow::Exact
                        });
                        for piece in split(&text, *pieces, self.seed) {
                            events.push(delta(
                                named,
                                *index,
                                "input_json_delta",
                                "partial_json",
                                &piece,
                            ));
                        }
                        whole = Some(text);
                    }
                    if *stop {
                        events.push(ev(named, "content_block_stop", vec![("index", index.j())]));
                    }
                    let mut body_block = block;
                    body_block.retain(|(k, _)| *k != "input");
                    body_block.push(("input", J::Raw(whole.unwrap_or_else(|| "{}".into()))));
                    blocks.push(J::obj(body_block));
                }
                Step::Text { index, text, stop } => {
                    events.push(ev(
                        named,
                        "content_block_start",
                        vec![
                            ("index", index.j()),
                            (
                                "content_block",
                                J::obj(vec![("type", J::s("text")), ("text", J::s(""))]),
                            ),
                        ],
                    ));
                    events.push(delta(named, *index, "text_delta", "text", text));
                    if *stop {
                        events.push(ev(named, "content_block_stop", vec![("index", index.j())]));
                    }
                    blocks.push(J::obj(vec![("type", J::s("text")), ("text", J::s(text))]));
                }
                Step::Thinking { index, text } => {
                    events.push(ev(
                        named,
                        "content_block_start",
                        vec![
                            ("index", index.j()),
                            (
                                "content_block",
                                J::obj(vec![("type", J::s("thinking")), ("thinking", J::s(text))]),
                            ),
                        ],
                    ));
                    events.push(delta(named, *index, "signature_delta", "signature", "sig"));
                }
                Step::JsonDelta { index, piece } => {
                    allow = Allow::Raw;
                    events.push(delta(
                        named,
                        *index,
                        "input_json_delta",
                        "partial_json",
                        piece,
                    ));
                }
                Step::TextDelta { index, text } => {
                    events.push(delta(named, *index, "text_delta", "text", text))
                }
                Step::Stop { index } => {
                    events.push(ev(named, "content_block_stop", vec![("index", index.j())]))
                }
                Step::MessageDelta { stop, usage } => events.push(ev(
                    named,
                    "message_delta",
                    vec![
                        (
                            "delta",
                            J::obj(vec![
                                ("stop_reason", stop_reason(*stop)),
                                ("stop_sequence", J::Raw("null".into())),
                            ]),
                        ),
                        (
                            "usage",
                            J::obj(vec![(
                                "output_tokens",
                                J::Raw(usage.map_or("5".into(), Number::text)),
                            )]),
                        ),
                    ],
                )),
                Step::MessageStop => events.push(ev(named, "message_stop", vec![])),
                Step::Error { kind } => events.push(ev(
                    named,
                    "error",
                    vec![(
                        "error",
                        J::obj(vec![
                            (
                                "type",
                                J::s(
                                    ERROR_TYPES
                                        .get(usize::from(*kind) % ERROR_TYPES.len())
                                        .copied()
                                        .unwrap_or(""),
                                ),
                            ),
                            ("message", J::s("boom")),
                        ]),
                    )],
                )),
                Step::Ping => events.push(ev(named, "ping", vec![])),
                Step::Unknown { name } => events.push(ev(named, name, vec![])),
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
        if let Some(stop) = self.end {
            events.push(ev(
                named,
                "message_delta",
                vec![
                    ("delta", J::obj(vec![("stop_reason", stop_reason(stop))])),
                    ("usage", J::obj(vec![("output_tokens", J::n(5))])),
                ],
            ));
            events.push(ev(named, "message_stop", vec![]));
        }
        decorate(&mut events, &self.decor);
        let mut body = J::obj(vec![
            ("id", J::s("msg_1")),
            ("type", J::s("message")),
            ("role", J::s("assistant")),
            ("model", J::s("claude")),
            ("content", J::Arr(blocks)),
            ("stop_reason", stop_reason(self.end.unwrap_or(2))),
            (
                "usage",
                J::obj(vec![("input_tokens", J::n(3)), ("output_tokens", J::n(1))]),
            ),
        ]);
        for (_, d) in &self.decor {
            d.apply(&mut body);
        }
        (events, body.text(), allow)
    }
}

/// The target: expand the plan and run it through the chain.
pub fn check(plan: &Plan) {
    let (events, body, allow) = plan.expand();
    let _ = super::run(
        "anthropic",
        None,
        &sse(&events),
        Some(&body),
        allow,
        plan.seed,
    );
}
