//! The `openai-chat` mapper behind the whole chain (see `decisions_fuzz::provider`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| decisions_fuzz::provider::check("openai-chat", data));
