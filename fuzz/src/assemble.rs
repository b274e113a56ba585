//! The assembler fed random canonical event sequences.
//!
//! Events come from a small alphabet (three item ids, two call ids, two
//! names, short deltas) so that starts, deltas, ends and terminals collide
//! often. Checked: no panic; the same sequence gives the same outcome; the
//! canonical wire format round-trips every event; an error is sticky (every
//! later call says `STREAM_FAILED`); a response holds exactly the deltas its
//! items were sent, within the limits, with every item ended unless the
//! finish reason truncates.

use std::collections::{BTreeMap, HashMap};

use arbitrary::Arbitrary;
use decisions::core::assemble::{canonical_event, Assembler, Kind, Response};
use decisions::core::errors::Code;
use decisions::core::events::{CallKind, Event, FinishReason, ItemKind, Usage};
use decisions::core::limits::Limits;
use serde_json::{json, Value};

const IDS: [&str; 3] = ["a", "b", "c"];
const CALL_IDS: [&str; 2] = ["call_1", "call_2"];
const NAMES: [&str; 2] = ["read_file", "write_file"];
const DELTAS: [&str; 6] = ["", "{", "\"x\":", "1}", "é", "\u{1F600}\\\""];
const CALL_KINDS: [CallKind; 6] = [
    CallKind::Function,
    CallKind::Custom,
    CallKind::LocalShell,
    CallKind::Computer,
    CallKind::ApplyPatch,
    CallKind::Shell,
];
const REASONS: [FinishReason; 8] = [
    FinishReason::Stop,
    FinishReason::ToolCalls,
    FinishReason::Length,
    FinishReason::ContentFilter,
    FinishReason::Refusal,
    FinishReason::Cancelled,
    FinishReason::Error,
    FinishReason::Unknown,
];

#[derive(Debug, Arbitrary)]
pub enum Op {
    Started,
    Item(u8, u8),
    Text(u8, u8),
    Refusal(u8, u8),
    Reasoning(u8, u8, bool),
    Call(u8, u8, u8, bool, u8),
    Args(u8, u8),
    Ended(u8),
    Usage(Option<u32>, Option<u32>),
    Finished(u8),
    Failed(bool),
}

fn pick<T: Copy>(list: &[T], i: u8) -> T {
    list[usize::from(i) % list.len()]
}

fn s(v: &str) -> String {
    v.to_string()
}

pub fn event(op: &Op) -> Event {
    match *op {
        Op::Started => Event::ResponseStarted {
            response_id: Some(s("resp")),
            model: None,
        },
        Op::Item(i, k) => Event::ItemStarted {
            item_id: s(pick(&IDS, i)),
            kind: pick(&[ItemKind::Text, ItemKind::Refusal, ItemKind::Reasoning], k),
            position: None,
        },
        Op::Text(i, d) => Event::TextDelta {
            item_id: s(pick(&IDS, i)),
            delta: s(pick(&DELTAS, d)),
        },
        Op::Refusal(i, d) => Event::RefusalDelta {
            item_id: s(pick(&IDS, i)),
            delta: s(pick(&DELTAS, d)),
        },
        Op::Reasoning(i, d, sig) => Event::ReasoningDelta {
            item_id: s(pick(&IDS, i)),
            delta: s(pick(&DELTAS, d)),
            signature: sig.then(|| s("sig")),
        },
        Op::Call(i, c, n, generated, k) => Event::ToolCallStarted {
            item_id: s(pick(&IDS, i)),
            call_id: s(pick(&CALL_IDS, c)),
            name: s(pick(&NAMES, n)),
            call_id_generated: generated,
            call_kind: pick(&CALL_KINDS, k),
        },
        Op::Args(i, d) => Event::ToolArgumentsDelta {
            item_id: s(pick(&IDS, i)),
            delta: s(pick(&DELTAS, d)),
        },
        Op::Ended(i) => Event::ItemEnded {
            item_id: s(pick(&IDS, i)),
        },
        Op::Usage(input, output) => Event::Usage(Usage {
            input_tokens: input.map(u64::from),
            output_tokens: output.map(u64::from),
            ..Usage::default()
        }),
        Op::Finished(r) => Event::ResponseFinished {
            finish_reason: pick(&REASONS, r),
            raw_finish_reason: Some(s("raw")),
        },
        Op::Failed(retryable) => Event::ResponseFailed {
            code: s("overloaded"),
            message: s("busy"),
            retryable,
            error_type: None,
        },
    }
}

/// The canonical wire format of an event (`decisions.types` `to_dict()`).
pub fn wire(event: &Event) -> Value {
    match event {
        Event::ResponseStarted { response_id, model } => {
            json!({"type": "response_started", "response_id": response_id, "model": model})
        }
        Event::ItemStarted {
            item_id,
            kind,
            position,
        } => match position {
            // written only when set, as `ItemStarted.to_dict()` does
            Some(position) => json!({"type": "item_started", "item_id": item_id,
                "kind": kind.as_str(), "position": position}),
            None => json!({"type": "item_started", "item_id": item_id, "kind": kind.as_str()}),
        },
        Event::TextDelta { item_id, delta } => {
            json!({"type": "text_delta", "item_id": item_id, "delta": delta})
        }
        Event::RefusalDelta { item_id, delta } => {
            json!({"type": "refusal_delta", "item_id": item_id, "delta": delta})
        }
        Event::ReasoningDelta {
            item_id,
            delta,
            signature,
        } => {
            json!({"type": "reasoning_delta", "item_id": item_id, "delta": delta, "signature": signature})
        }
        Event::ToolCallStarted {
            item_id,
            call_id,
            name,
            call_id_generated,
            call_kind,
        } => json!({
            "type": "tool_call_started", "item_id": item_id, "call_id": call_id, "name": name,
            "call_id_generated": call_id_generated, "call_kind": call_kind.as_str(),
        }),
        Event::ToolArgumentsDelta { item_id, delta } => {
            json!({"type": "tool_arguments_delta", "item_id": item_id, "delta": delta})
        }
        Event::ItemEnded { item_id } => json!({"type": "item_ended", "item_id": item_id}),
        Event::Usage(u) => json!({
            "type": "usage", "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cached_tokens": u.cached_tokens, "reasoning_tokens": u.reasoning_tokens,
        }),
        Event::ResponseFinished {
            finish_reason,
            raw_finish_reason,
        } => {
            json!({"type": "response_finished", "finish_reason": finish_reason.as_str(), "raw_finish_reason": raw_finish_reason})
        }
        Event::ResponseFailed {
            code,
            message,
            retryable,
            error_type,
        } => json!({
            "type": "response_failed", "code": code, "message": message, "retryable": retryable, "error_type": error_type,
        }),
    }
}

#[derive(Debug, Arbitrary)]
pub struct Input {
    limits: u8,
    ops: Vec<Op>,
}

fn limits(selector: u8) -> Limits {
    let base = Limits::default();
    match selector % 4 {
        0 => base,
        1 => Limits {
            max_call_argument_bytes: 5,
            max_response_bytes: 9,
            ..base
        },
        2 => Limits {
            max_calls_per_response: 1,
            max_stream_events: 6,
            ..base
        },
        _ => Limits {
            max_response_bytes: 3,
            ..base
        },
    }
}

type Outcome = Result<(Vec<(String, String, bool)>, FinishReason), Code>;

fn summary(r: &Response) -> (Vec<(String, String, bool)>, FinishReason) {
    (
        r.items
            .iter()
            .map(|i| (i.item_id.clone(), i.text.clone(), i.ended))
            .collect(),
        r.finish_reason,
    )
}

fn run(events: &[Event], limits: Limits) -> Outcome {
    let mut a = Assembler::new(limits);
    let mut sent: HashMap<String, String> = HashMap::new();
    for event in events {
        if let Err(e) = a.apply(event.clone()) {
            assert_ne!(
                e.code,
                Code::STREAM_FAILED,
                "the first error must name the fault"
            );
            assert_eq!(
                a.apply(event.clone()).map_err(|e| e.code),
                Err(Code::STREAM_FAILED)
            );
            assert_eq!(
                a.finish(&BTreeMap::new()).map(|_| ()).map_err(|e| e.code),
                Err(Code::STREAM_FAILED)
            );
            return Err(e.code);
        }
        match event {
            Event::TextDelta { item_id, delta }
            | Event::RefusalDelta { item_id, delta }
            | Event::ReasoningDelta { item_id, delta, .. }
            | Event::ToolArgumentsDelta { item_id, delta } => {
                sent.entry(item_id.clone()).or_default().push_str(delta)
            }
            _ => {}
        }
    }
    let response = a.finish(&BTreeMap::new()).map_err(|e| e.code)?;
    let truncating = matches!(
        response.finish_reason,
        FinishReason::Length
            | FinishReason::ContentFilter
            | FinishReason::Refusal
            | FinishReason::Cancelled
            | FinishReason::Error
    );
    let mut total = 0;
    let mut calls = 0;
    for item in &response.items {
        assert_eq!(
            item.text,
            sent.get(&item.item_id).cloned().unwrap_or_default(),
            "item {} lost or gained text",
            item.item_id
        );
        assert!(
            item.ended || truncating,
            "unended item {} in a {:?} response",
            item.item_id,
            response.finish_reason
        );
        total += item.text.len() + item.signature.as_ref().map_or(0, String::len);
        if item.kind == Kind::ToolCall {
            calls += 1;
            assert!(item.text.len() <= limits.max_call_argument_bytes);
        }
    }
    assert!(total <= limits.max_response_bytes);
    assert!(calls <= limits.max_calls_per_response);
    let summary = summary(response);
    // finish() is idempotent.
    assert_eq!(
        a.finish(&BTreeMap::new()).map(summary_of),
        Ok(summary.clone())
    );
    Ok(summary)
}

fn summary_of(r: &Response) -> (Vec<(String, String, bool)>, FinishReason) {
    summary(r)
}

pub fn check(input: Input) {
    let events: Vec<Event> = input.ops.iter().map(event).collect();
    for e in &events {
        assert_eq!(
            canonical_event(wire(e)).ok().flatten().as_ref(),
            Some(e),
            "wire format does not round-trip"
        );
    }
    let limits = limits(input.limits);
    let first = run(&events, limits);
    assert_eq!(
        first,
        run(&events, limits),
        "replay gave a different outcome"
    );
}
