//! Structure-aware `openai_responses` streams through the whole chain: object-form
//! arguments and envelope fields up to 150,000 deep and 100,000 wide, repeated
//! keys, huge numbers, every terminal value (see `decisions_fuzz::structured`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|plan: decisions_fuzz::structured::openai_responses::Plan| {
    decisions_fuzz::structured::openai_responses::check(&plan)
});
