//! The strict parser on arbitrary bytes, compared with serde_json (see
//! `decisions_fuzz::json` for the allowed differences).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| decisions_fuzz::json::compare(data));
