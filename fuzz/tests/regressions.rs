//! Replays every input under `fuzz/regressions/<target>/` through its
//! target's check, without libFuzzer (`cd fuzz && cargo test`). An input
//! stays here once its crash is fixed, so the fix stays fixed.

use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use decisions_fuzz::structured;

fn plan<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

fn replay(target: &str, data: &[u8]) {
    match target {
        "sse_chunking" => decisions_fuzz::sse::check(data),
        "provider_anthropic" => decisions_fuzz::provider::check("anthropic", data),
        "provider_gemini" => decisions_fuzz::provider::check("gemini", data),
        "provider_openai_chat" => decisions_fuzz::provider::check("openai-chat", data),
        "provider_openai_responses" => decisions_fuzz::provider::check("openai-responses", data),
        "structured_anthropic" => plan(data).iter().for_each(structured::anthropic::check),
        "structured_gemini" => plan(data).iter().for_each(structured::gemini::check),
        "structured_openai_chat" => plan(data).iter().for_each(structured::openai_chat::check),
        "structured_openai_responses" => plan(data)
            .iter()
            .for_each(structured::openai_responses::check),
        other => panic!("no replay for regressions of {other}"),
    }
}

#[test]
fn regressions_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut count = 0;
    for target in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = target.file_name().to_string_lossy().into_owned();
        for input in std::fs::read_dir(target.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let data = std::fs::read(input.path()).unwrap_or_default();
            eprintln!("replaying {name}/{}", input.file_name().to_string_lossy());
            replay(&name, &data);
            count += 1;
        }
    }
    assert!(count > 0, "no regression inputs under {}", root.display());
}
