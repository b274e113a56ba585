"""Native vs pure on mutated recordings.

Every recorded stream and body of the four providers (``tests/fixtures``,
and the bundled ``decisions/examples``) is mutated and fed to both backends
side by side: bytes flipped, byte ranges spliced, events duplicated, dropped,
swapped or spliced from another recording of the same provider, a field's
value changed, a key repeated, a value nested up to 4,000 deep, a deep
member added that no mapper reads, an index made huge (``2**70``), garbage
sent after ``[DONE]``, the stream cut, the ``choice=`` option made huge.
Both backends must give the same ``NormalizedResponse``, or the same error
class and code (or raise the same exception type).

The cases come from a seeded generator (a failure names the seed that
rebuilds it): ``DECISIONS_MUTATIONS`` sets how many (a few hundred by
default; ``make test-long`` runs 1,000,000). The differences an earlier
review found (a deep unread member, data after ``[DONE]``, a huge ``choice``,
``-0`` as a count) keep a minimal case each at the end of this file.
"""

from __future__ import annotations

import csv
import json
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pytest

from decisions import OutputError

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).parent.parent / "python" / "decisions" / "examples"
_APIS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
}
_EXAMPLE_PROVIDERS = {
    "healthy_tool_call.sse": "openai-chat",
    "parallel_calls.sse": "anthropic",
    "truncated_call.sse": "anthropic",
    "invalid_escape.sse": "openai-responses",
    "unknown_tool.json": "gemini",
    "path_escape.json": "openai-chat",
}
#: recordings above this size are left out (they only slow the sweep down)
MAX_RECORDING = 64 * 1024
MUTATIONS = int(os.environ.get("DECISIONS_MUTATIONS", "300"))

# ------------------------------------------------------------------ recordings


@dataclass(frozen=True)
class Recording:
    """One recording: events ``(event name, data)`` or a body."""

    name: str
    provider: str
    events: tuple[tuple[str | None, str], ...] | None
    body: bytes | None
    #: recorded as raw SSE (fed as bytes) rather than one event per line
    sse: bool


def _sse_events(data: bytes) -> list[tuple[str | None, str]]:
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    lines: list[str] = []
    for line in data.decode("utf-8").replace("\r\n", "\n").split("\n") + [""]:
        if line == "":
            if lines:
                events.append((name, "\n".join(lines)))
            name, lines = None, []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            lines.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
    return events


def _load_recordings() -> list[Recording]:
    out = []
    rows = csv.DictReader((FIXTURES / "FEATURES.tsv").read_text(encoding="utf-8").splitlines(), delimiter="\t")
    files = [(FIXTURES / r["path"], _APIS[r["api"]], r["file_format"]) for r in rows if r["api"] in _APIS]
    files += [
        (EXAMPLES / name, provider, "json-body" if name.endswith(".json") else "raw-sse")
        for name, provider in _EXAMPLE_PROVIDERS.items()
    ]
    for path, provider, file_format in files:
        if file_format not in ("raw-sse", "jsonl", "json-body"):
            continue
        data = path.read_bytes()
        if len(data) > MAX_RECORDING:
            continue
        name = path.name
        if file_format == "json-body":
            out.append(Recording(name, provider, None, data, False))
        elif file_format == "raw-sse":
            out.append(Recording(name, provider, tuple(_sse_events(data)), None, True))
        else:
            lines = [line for line in data.decode("utf-8").splitlines() if line.strip()]
            out.append(Recording(name, provider, tuple((None, line) for line in lines), None, False))
    return out


RECORDINGS = _load_recordings()
BY_PROVIDER: dict[str, list[Recording]] = {}
for _r in RECORDINGS:
    if _r.events is not None:
        BY_PROVIDER.setdefault(_r.provider, []).append(_r)

# ------------------------------------------------------------------ JSON editing
# Values keep their text (numbers as written), objects their pairs (so a key
# can repeat); a ``_Raw`` is written as it is (deep values are built as text,
# never as nested Python objects).


class _Num(str):
    """A number kept as the text it was written with."""


class _Obj(list):  # type: ignore[type-arg]
    """An object's key-value pairs (duplicates allowed)."""


class _Raw(str):
    """JSON text written as is."""


def _load(text: str | bytes) -> Any:
    return json.loads(text, object_pairs_hook=_Obj, parse_float=_Num, parse_int=_Num)


def _dump(value: Any, last_wins: bool = False) -> str:
    """JSON text; with ``last_wins`` a repeated key keeps only its last member."""
    if isinstance(value, (_Raw, _Num)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, _Obj):
        pairs = list(value)
        if last_wins:
            last = {k: i for i, (k, _) in enumerate(pairs)}
            pairs = [pair for i, pair in enumerate(pairs) if last[pair[0]] == i]
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _dump(v, last_wins) for k, v in pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v, last_wins) for v in value) + "]"
    return json.dumps(value)


def _repeats_a_key(text: str | bytes) -> bool:
    """Whether some object of ``text`` (JSON) repeats a key."""
    found = False

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        nonlocal found
        found = found or len({k for k, _ in pairs}) < len(pairs)
        return None

    try:
        json.loads(text, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return False
    return found


def _last_wins(text: str | bytes) -> str | bytes | None:
    """``text`` with each repeated key kept at its last occurrence only (as
    ``json.loads`` reads it); unchanged without repeats; None if too deep."""
    if not _repeats_a_key(text):
        return text
    try:
        return _dump(_load(text), last_wins=True)
    except RecursionError:
        return None


def _slots(value: Any) -> list[tuple[Any, int, str | None]]:
    """Every ``(container, index, key)`` holding a value (key None in arrays)."""
    out: list[tuple[Any, int, str | None]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, _Obj):
            for i, (key, child) in enumerate(node):
                out.append((node, i, key))
                stack.append(child)
        elif isinstance(node, list) and not isinstance(node, _Raw):
            for i, child in enumerate(node):
                out.append((node, i, None))
                stack.append(child)
    return out


def _get(container: Any, index: int) -> Any:
    return container[index][1] if isinstance(container, _Obj) else container[index]


def _set(container: Any, index: int, value: Any) -> None:
    if isinstance(container, _Obj):
        container[index] = (container[index][0], value)
    else:
        container[index] = value


def deep(depth: int, inner: str, kind: str) -> str:
    """``inner`` nested ``depth`` deep in arrays or ``{"a": ...}`` objects."""
    if kind == "array":
        return "[" * depth + inner + "]" * depth
    return '{"a":' * depth + inner + "}" * depth


VALUES = ["null", "0", "-1", "1.5", "-0", "true", '""', '"x"', "[]", "{}", str(2**64), str(2**70), "1e400", '"\\u00e9"']
HUGE = [str(2**63), str(2**64 - 1), str(2**64), str(2**70), str(-(2**70)), "-1", "1e30", "10000000000000000000000000"]
INDEX_KEYS = {"index", "output_index", "content_index", "sequence_number", "summary_index"}
DEPTHS = [2, 64, 127, 128, 129, 200, 500, 900, 999, 1000, 1001, 1100, 2000, 4000]
#: Objects a server or a gateway puts in a stream that are no event of the
#: provider's: error objects of other shapes, an empty object, metadata alone.
FOREIGN = [
    '{"detail": "upstream timeout"}',
    '{"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500}',
    '{"error": "Request failed during generation", "error_type": "generation"}',
    '{"error": {"message": "overloaded", "type": "server_error"}}',
    '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
    '{"text": "NETWORK ERROR", "error_code": 50001}',
    '{"message": "boom"}',
    '{"responseId": "r"}',
    "{}",
]
GARBAGE = [
    b"data: {}\n\n",
    b"data: garbage\n\n",
    b"data: [DONE]\n\n",
    b": keepalive\n\n",
    b"event: x\n",
    b"data: \xff\n\n",
    b"x",
]

# ------------------------------------------------------------------ cases


@dataclass
class Case:
    """One mutated recording, ready to feed."""

    seed: int
    recording: Recording
    events: list[tuple[str | None, str | bytes]] | None
    body: bytes | None
    #: raw SSE bytes fed in ``chunk``-byte pieces (None: one event at a time)
    data: bytes | None = None
    chunk: int = 0
    choice: int | None = None
    mutations: list[str] = field(default_factory=list)
    #: the deepest nesting a mutation added
    depth: int = 0
    #: bytes after the events (garbage after ``[DONE]``)
    trailer: bytes = b""
    #: whether bytes were flipped, spliced or cut after the events were framed
    byte_ops: bool = False

    def describe(self) -> str:
        return f"seed={self.seed} {self.recording.provider}:{self.recording.name} {self.mutations}"


def _json_edit(rng: random.Random, text: str, op: str, case: Case) -> str | None:
    """``text`` with one JSON edit, or None when it does not apply."""
    try:
        value = _load(text)
    except (ValueError, RecursionError):
        return None
    before = len(case.mutations), case.depth
    try:
        return _edit(rng, value, op, case)
    except RecursionError:  # an earlier edit nested this event too deep to rewrite
        del case.mutations[before[0] :]
        case.depth = before[1]
        return None


def _edit(rng: random.Random, value: Any, op: str, case: Case) -> str | None:
    slots = _slots(value)
    objects = ([value] if isinstance(value, _Obj) else []) + [
        _get(c, i) for c, i, _ in slots if isinstance(_get(c, i), _Obj)
    ]
    if op == "change" and slots:
        c, i, key = rng.choice(slots)
        new = rng.choice(VALUES)
        _set(c, i, _Raw(new))
        case.mutations.append(f"change {key}={new}")
    elif op == "repeat_key" and any(objects):
        obj = rng.choice([o for o in objects if o])
        key, old = obj[rng.randrange(len(obj))]
        new = old if rng.random() < 0.5 else _Raw(rng.choice(VALUES))
        obj.insert(rng.randrange(len(obj) + 1), (key, new))
        case.mutations.append(f"repeat_key {key}" + ("" if new is old else f"={new}"))
    elif op == "deepen" and slots:
        c, i, key = rng.choice(slots)
        depth, kind = rng.choice(DEPTHS), rng.choice(["array", "object"])
        _set(c, i, _Raw(deep(depth, _dump(_get(c, i)), kind)))
        case.mutations.append(f"deepen {key} {depth} {kind}")
        case.depth = max(case.depth, depth)
    elif op == "unread_deep" and objects:
        depth, kind = rng.choice(DEPTHS), rng.choice(["array", "object"])
        rng.choice(objects).append(("x_unread", _Raw(deep(depth, "1", kind))))
        case.mutations.append(f"unread_deep {depth} {kind}")
        case.depth = max(case.depth, depth)
    elif op == "huge_index":
        targets = [(c, i, k) for c, i, k in slots if k in INDEX_KEYS and isinstance(_get(c, i), _Num)]
        if not targets:
            return None
        c, i, key = rng.choice(targets)
        new = rng.choice(HUGE)
        _set(c, i, _Raw(new))
        case.mutations.append(f"huge_index {key}={new}")
    else:
        return None
    return _dump(value)


def _flip(rng: random.Random, data: bytes, case: Case) -> bytes:
    if not data:
        return data
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(b))
        b[at] = rng.choice([b[at] ^ (1 << rng.randrange(8)), rng.randrange(256), ord(rng.choice('{}[]":,\\\n'))])
    case.mutations.append("flip")
    return bytes(b)


def _splice(rng: random.Random, data: bytes, case: Case) -> bytes:
    if not data:
        return data
    a = rng.randrange(len(data))
    piece = data[a : a + rng.randint(1, 64)]
    at = rng.randrange(len(data) + 1)
    case.mutations.append("splice_bytes")
    return data[:at] + piece + data[at:]


EVENT_OPS = [
    "dup",
    "drop",
    "swap",
    "splice_other",
    "change",
    "repeat_key",
    "deepen",
    "unread_deep",
    "huge_index",
    "after_done",
    "cut",
    "foreign",
]
BYTE_OPS = ["flip", "splice_bytes", "truncate"]


def build_case(seed: int) -> Case:
    """The mutated recording of ``seed`` (deterministic)."""
    rng = random.Random(seed)
    rec = rng.choice(RECORDINGS)
    case = Case(seed, rec, list(rec.events) if rec.events is not None else None, rec.body)
    if rng.random() < 0.03:
        case.choice = rng.choice([0, 1, 2**63, 2**64, 2**70])
        case.mutations.append(f"choice={case.choice}")
    trailer = b""
    for _ in range(rng.randint(1, 3)):
        if case.events is None:
            assert case.body is not None
            op = rng.choice(["change", "repeat_key", "deepen", "unread_deep", "huge_index", *BYTE_OPS])
            if op in BYTE_OPS:
                continue  # applied to the bytes below
            edited = _json_edit(rng, case.body.decode("utf-8", "replace"), op, case)
            if edited is not None:
                case.body = edited.encode("utf-8")
            continue
        events = case.events
        op = rng.choice(EVENT_OPS + BYTE_OPS)
        if not events or op in BYTE_OPS:
            continue
        i = rng.randrange(len(events))
        if op == "dup":
            events.insert(i, events[i])
            case.mutations.append("dup")
        elif op == "drop":
            del events[i]
            case.mutations.append("drop")
        elif op == "swap":
            j = rng.randrange(len(events))
            events[i], events[j] = events[j], events[i]
            case.mutations.append("swap")
        elif op == "splice_other":
            other = rng.choice(BY_PROVIDER[rec.provider])
            assert other.events is not None
            cut = rng.randrange(len(other.events) + 1)
            events[i:] = list(other.events[cut:])
            case.mutations.append(f"splice_other {other.name}")
        elif op == "after_done":
            events.append((None, "[DONE]"))
            trailer = rng.choice(GARBAGE + [f"data: {events[0][1]!s}\n\n".encode()])
            case.mutations.append(f"after_done {trailer[:20]!r}")
        elif op == "cut":
            del events[i:]
            case.mutations.append("cut")
        elif op == "foreign":
            text = rng.choice(FOREIGN)
            events.insert(i, (rng.choice([None, None, "error", events[i][0]]), text))
            case.mutations.append(f"foreign {text[:24]}")
        else:
            name, text = events[i]
            if isinstance(text, str):
                edited = _json_edit(rng, text, op, case)
                if edited is not None:
                    events[i] = (name, edited)
    byte_ops = [rng.choice(BYTE_OPS) for _ in range(rng.randint(1, 2))] if rng.random() < 0.4 else []
    case.byte_ops = bool(byte_ops)
    if case.events is None:
        assert case.body is not None
        for op in byte_ops:
            case.body = _byte_op(rng, op, case.body, case)
        return case
    if rec.sse or byte_ops or trailer or rng.random() < 0.3:
        case.trailer = trailer
        data = b"".join(_frame(name, text) for name, text in case.events) + trailer
        for op in byte_ops:
            data = _byte_op(rng, op, data, case)
        case.data = data
        case.chunk = rng.choice([1, 7, 64, 4096, len(data) + 1])
    return case


def _byte_op(rng: random.Random, op: str, data: bytes, case: Case) -> bytes:
    if op == "flip":
        return _flip(rng, data, case)
    if op == "splice_bytes":
        return _splice(rng, data, case)
    case.mutations.append("truncate")
    return data[: rng.randrange(len(data) + 1)]


def _frame(name: str | None, text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    head = f"event: {name}\n".encode() if name is not None else b""
    return head + b"".join(b"data: " + line + b"\n" for line in raw.split(b"\n")) + b"\n"


def outcome(impl: ModuleType, case: Case) -> tuple[Any, ...]:
    """The response, or the error (class, code, its stable shape and its
    text: message, path and offset as shown), or the exception type raised."""
    provider = case.recording.provider
    try:
        if case.body is not None:
            return ("ok", impl.normalize(case.body, provider=provider, choice=case.choice))
        asm = impl.StreamAssembler(provider, choice=case.choice)
        if case.data is not None:
            for i in range(0, len(case.data), case.chunk):
                asm.feed(case.data[i : i + case.chunk])
        else:
            assert case.events is not None
            for name, text in case.events:
                asm.feed_event(text, name)
        return ("ok", asm.finish())
    except OutputError as err:
        return ("error", type(err).__name__, err.code, err.to_dict(), str(err))
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        return ("raised", type(err).__name__)


def _bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


# ------------------------------------------------------------------ tests


def test_mutated_recordings_agree(both: tuple[ModuleType, ModuleType]) -> None:
    """``DECISIONS_MUTATIONS`` mutated recordings: the same outcome on both
    backends, repeated keys included (the envelope rule refuses them on both)."""
    native, pure = both
    outcomes: Counter[str] = Counter()
    differences: list[str] = []
    count = 0
    for seed in range(MUTATIONS):
        case = build_case(seed)
        n, p = outcome(native, case), outcome(pure, case)
        outcomes["ok" if n[0] == "ok" else str(n[2] if n[0] == "error" else n[-1])] += 1
        if n != p:
            count += 1
            if len(differences) < 20:
                differences.append(f"{case.describe()}\n    native: {n[:3]} {n[-1]}\n    pure:   {p[:3]} {p[-1]}")
    assert not differences, f"{count} differences:\n" + "\n".join(differences)
    # the sweep is not vacuous: mutated recordings complete and fail in many ways
    assert outcomes["ok"] > 0 and len(outcomes) >= 5, outcomes


def test_cases_are_reproducible() -> None:
    """A seed rebuilds its case exactly (a failure's seed is its reproducer)."""
    for seed in (0, 1, 12345):
        a, b = build_case(seed), build_case(seed)
        assert (a.events, a.body, a.data, a.chunk, a.choice, a.mutations) == (
            b.events,
            b.body,
            b.data,
            b.chunk,
            b.choice,
            b.mutations,
        )


def test_every_mutation_is_reached() -> None:
    """Every mutation kind is drawn within the default number of cases."""
    kinds = Counter(
        m.split(" ")[0].split("=")[0] for seed in range(max(MUTATIONS, 300)) for m in build_case(seed).mutations
    )
    wanted = {
        "dup",
        "drop",
        "swap",
        "splice_other",
        "change",
        "repeat_key",
        "deepen",
        "unread_deep",
        "huge_index",
        "after_done",
        "cut",
        "foreign",
        "flip",
        "splice_bytes",
        "truncate",
        "choice",
    }
    assert wanted <= set(kinds), wanted - set(kinds)


# --- the differences an earlier review found, each as a minimal case

_CHAT = 'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]%s}\n\n'


def _same(native: ModuleType, pure: ModuleType, run: Callable[[ModuleType], Any]) -> None:
    def one(impl: ModuleType) -> Any:
        try:
            return ("ok", run(impl))
        except OutputError as err:
            return ("error", type(err).__name__, err.code)
        except ValueError as err:
            return ("raised", type(err).__name__)

    assert one(native) == one(pure)


def _feed(provider: str, data: bytes, **options: Any) -> Callable[[ModuleType], Any]:
    def run(impl: ModuleType) -> Any:
        asm = impl.StreamAssembler(provider, **options)
        asm.feed(data)
        return asm.finish()

    return run


def test_twins_agree_on_a_deep_unread_field(both: tuple[ModuleType, ModuleType]) -> None:
    data = (_CHAT % (',"x_unread":' + deep(1000, "1", "array"))).encode()
    _same(*both, _feed("openai-chat", data))


def test_twins_agree_on_garbage_after_done(both: tuple[ModuleType, ModuleType]) -> None:
    data = (_CHAT % "").encode() + b"data: [DONE]\n\ndata: garbage\n\n"
    _same(*both, _feed("openai-chat", data))


def test_twins_agree_on_a_huge_choice(both: tuple[ModuleType, ModuleType]) -> None:
    _same(*both, _feed("openai-chat", (_CHAT % "").encode(), choice=2**70))


@pytest.mark.parametrize(
    "data",
    [
        (_CHAT % "").replace('"index":0', '"index":-0'),
        _CHAT % ',"usage":{"prompt_tokens":-0,"completion_tokens":1}',
    ],
    ids=["choice_index", "usage_count"],
)
def test_twins_agree_on_minus_zero_counts(both: tuple[ModuleType, ModuleType], data: str) -> None:
    _same(*both, _feed("openai-chat", data.encode()))


#: a Responses message added at output_index 1, its delta at ``-0`` (0: another item)
_RESPONSES_AT_ONE = [
    '{"type":"response.created","sequence_number":0,"response":{"id":"r","model":"m","status":"in_progress"}}',
    '{"type":"response.output_item.added","sequence_number":1,"output_index":1,'
    '"item":{"type":"message","id":"msg","role":"assistant","status":"in_progress","content":[]}}',
    '{"type":"response.output_text.delta","sequence_number":2,"output_index":-0,"item_id":"msg",'
    '"content_index":0,"delta":"hi"}',
]


def test_twins_agree_on_an_output_index_written_minus_zero(both: tuple[ModuleType, ModuleType]) -> None:
    """``-0`` is 0, and 0 is not where the item was added (the native mapper
    took the text for no count and applied the delta)."""

    def run(impl: ModuleType) -> Any:
        asm = impl.StreamAssembler("openai-responses")
        for text in _RESPONSES_AT_ONE:
            asm.feed_event(text)
        return asm.finish()

    for impl in both:
        with pytest.raises(OutputError) as info:
            run(impl)
        assert (info.value.code, info.value.path) == ("OUTPUT_MISMATCH", "$.output_index")


@pytest.mark.parametrize("count", ["-0", "0", "-0.0", "0.5", "-1"])
def test_twins_agree_on_a_canonical_count_written_minus_zero(both: tuple[ModuleType, ModuleType], count: str) -> None:
    """The canonical wire format reads ``-0`` as the count 0 on both backends
    (the native one read its data with serde_json, where ``-0`` is a float)."""
    events = [
        '{"type":"response_started","response_id":"r","model":"m"}',
        f'{{"type":"usage","input_tokens":{count}}}',
        '{"type":"response_finished","finish_reason":"stop"}',
    ]

    def run(impl: ModuleType) -> Any:
        asm = impl.StreamAssembler("canonical")
        for text in events:
            asm.feed_event(text)
        return asm.finish().usage

    _same(*both, run)
    native, _ = both
    if count in ("-0", "0"):
        assert run(native).input_tokens == 0
    body = ("[" + ",".join(events) + "]").encode()
    _same(*both, lambda impl: impl.normalize(body, provider="canonical").usage)
