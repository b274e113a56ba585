"""Build the fuzz targets' seed corpora from the recorded fixtures.

Writes into ``fuzz/corpus/<target>/`` (not versioned; libFuzzer adds what it
finds there). Seeds are the JSONTestSuite documents for the parser, the raw
SSE recordings for the SSE decoder, and each provider's recordings (raw SSE,
one-event-per-line files framed as SSE, whole bodies) for its mapper target.
Files above ``MAX_SEED`` bytes are skipped: libFuzzer mutates small inputs best.

The structure-aware targets (``structured_*``) decode their input with
``arbitrary``; recordings mean nothing to them. Their seeds are random bytes
(deterministic per target), long enough to decode into plans with several
events, deep and wide values: starting from an empty corpus libFuzzer grows
inputs a few bytes at a time, and a value's size adds no coverage to steer it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = Path(__file__).resolve().parent / "corpus"
MAX_SEED = 64 * 1024

STRUCTURED_TARGETS = [
    "structured_anthropic",
    "structured_gemini",
    "structured_openai_chat",
    "structured_openai_responses",
]
RANDOM_SEEDS = 256

PROVIDER_TARGETS = {
    "openai-chat": "provider_openai_chat",
    "openai-responses": "provider_openai_responses",
    "anthropic-messages": "provider_anthropic",
    "gemini": "provider_gemini",
}


def put(target: str, data: bytes) -> None:
    if not data or len(data) > MAX_SEED:
        return
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def sse_from_lines(text: str, named: bool) -> bytes:
    """One provider event JSON per line -> SSE frames (with ``event:`` names
    taken from the payload's ``type`` when the provider names its events)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        frame = ""
        if named:
            try:
                kind = json.loads(line).get("type")
            except (ValueError, AttributeError):
                kind = None
            if isinstance(kind, str):
                frame += f"event: {kind}\n"
        out.append(frame + f"data: {line}\n\n")
    return "".join(out).encode()


def main() -> int:
    for path in sorted((FIXTURES / "jsontestsuite" / "test_parsing").glob("*.json")):
        put("json_compare", path.read_bytes())
    with open(FIXTURES / "FEATURES.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        path = FIXTURES / row["path"]
        target = PROVIDER_TARGETS.get(row["api"])
        if not path.is_file():
            continue
        data = path.read_bytes()
        if row["file_format"] == "raw-sse":
            put("sse_chunking", b"\0" + data)  # first byte: the default limits
            if target:
                put(target, data)
        elif row["file_format"] == "jsonl" and target:
            framed = sse_from_lines(data.decode("utf-8", "replace"), named=row["api"] == "anthropic-messages")
            put(target, framed)
            put("sse_chunking", b"\0" + framed)
        elif row["file_format"] == "json-body" and target:
            put(target, data)
    for target in STRUCTURED_TARGETS:
        rng = random.Random(target)
        for _ in range(RANDOM_SEEDS):
            put(target, rng.randbytes(rng.choice([64, 256, 1024])))
    for target in sorted(p.name for p in CORPUS.iterdir() if p.is_dir()):
        print(f"seeds: {target}: {sum(1 for _ in (CORPUS / target).iterdir())} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
