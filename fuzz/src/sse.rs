//! The SSE decoder must not care how the bytes are chunked: one chunk,
//! random chunks and one byte at a time give the same events and the same
//! error (code and offset), under the default limits and under small ones
//! (so every limit is reached).

use decisions::core::errors::Code;
use decisions::core::limits::Limits;
use decisions::core::sse::{Decoder, SseEvent};

/// A tiny deterministic generator (xorshift64*), seeded from the input.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
}

/// Split `data` into chunks of random sizes (empty chunks included).
pub fn chunks<'a>(data: &'a [u8], rng: &mut Rng, max: usize) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = rng.below(max + 1).min(rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
    }
    out
}

pub type Outcome = (Vec<SseEvent>, Result<(), (Code, Option<usize>)>);

pub fn decode(pieces: &[&[u8]], limits: Limits) -> Outcome {
    let mut decoder = Decoder::new(limits);
    let mut out = Vec::new();
    for piece in pieces {
        if let Err(e) = decoder.feed(piece, &mut out) {
            // A failed decoder stays failed.
            assert_eq!(
                decoder
                    .feed(b"data: x\n\n", &mut Vec::new())
                    .map_err(|e| e.code),
                Err(Code::STREAM_FAILED)
            );
            return (out, Err((e.code, e.offset)));
        }
    }
    let end = decoder.finish().map_err(|e| (e.code, e.offset));
    (out, end)
}

/// Small limits picked by `selector`, so that each bound is hit by short inputs.
pub fn small_limits(selector: u8) -> Limits {
    let base = Limits::default();
    match selector % 4 {
        0 => base,
        1 => Limits {
            max_sse_line_bytes: 24,
            max_sse_event_bytes: 40,
            ..base
        },
        2 => Limits {
            max_stream_events: 3,
            max_bytes_without_data: 30,
            ..base
        },
        _ => Limits {
            max_stream_bytes: 64,
            max_sse_line_bytes: 48,
            ..base
        },
    }
}

pub fn check(input: &[u8]) {
    let Some((&selector, data)) = input.split_first() else {
        return;
    };
    let limits = small_limits(selector);
    let whole = decode(&[data], limits);
    let mut rng =
        Rng::new(u64::from(selector).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ data.len() as u64);
    let random = decode(&chunks(data, &mut rng, 16), limits);
    // A chunk past max_stream_bytes reads the bytes within the bound first
    // (what they complete, or the error they hold, comes first), as a byte
    // at a time: no chunking changes the events or the error.
    assert_eq!(whole, random, "random chunking changed the outcome");
    if data.len() <= 2048 {
        let bytes: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(
            whole,
            decode(&bytes, limits),
            "byte-at-a-time changed the outcome"
        );
    }
    // Every dispatched event respects the limits it was decoded under.
    for event in &whole.0 {
        assert!(event.data.len() <= limits.max_sse_event_bytes);
    }
    assert!(whole.0.len() <= limits.max_stream_events);
}
