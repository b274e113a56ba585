//! The assembler on random canonical event sequences (see `decisions_fuzz::assemble`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: decisions_fuzz::assemble::Input| decisions_fuzz::assemble::check(input));
