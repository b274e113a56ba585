//! The SSE decoder: the same events and errors whatever the chunking (see
//! `decisions_fuzz::sse`). The first input byte picks the limits.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| decisions_fuzz::sse::check(data));
