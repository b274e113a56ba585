"""The <tool_call> scanner against the strict parse of the same JSON.

One ~480 KiB ``write_file`` call written as a Hermes/Qwen ``<tool_call>``
block, in two groups (compare medians within a group; the ratio is the
scanner's overhead over the parse it cannot avoid):

- ``textcalls-plain``: source text full of quotes, backslashes and braces;
- ``textcalls-tag-in-string``: the same with a literal ``</tool_call>`` on
  every line of the content, so the first close tag is inside a string and the
  string-aware scanner has to find the block's real end.

``parse_tool_calls`` finds the block, parses it strictly and re-serialises
the arguments; ``loads`` parses the bare JSON only. Runs on the selected
backend (``DECISIONS_PURE=1`` for the pure twin).
"""

from __future__ import annotations

import json

import pytest

import decisions
from decisions.request.textcalls import parse_tool_calls

_PLAIN = "def f(x):\n    return \"a\\\\d\" + '}' * 3  # {[\n"
_TAGGED = "def f(x):\n    return \"a\\\\d\" + '}' * 3  # </tool_call> {\n"


def _case(line: str) -> tuple[str, str]:
    block = json.dumps({"name": "write_file", "arguments": {"path": "src/big.py", "content": line * 8000}})
    return block, "Writing the file.\n<tool_call>\n" + block + "\n</tool_call>\n"


PLAIN_JSON, PLAIN_TEXT = _case(_PLAIN)
TAGGED_JSON, TAGGED_TEXT = _case(_TAGGED)


@pytest.mark.benchmark(group="textcalls-plain")
def test_plain_parse_tool_calls(benchmark) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(parse_tool_calls, PLAIN_TEXT).calls[0].arguments["content"] == _PLAIN * 8000


@pytest.mark.benchmark(group="textcalls-plain")
def test_plain_loads(benchmark) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(decisions.loads, PLAIN_JSON)["name"] == "write_file"


@pytest.mark.benchmark(group="textcalls-tag-in-string")
def test_tagged_parse_tool_calls(benchmark) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(parse_tool_calls, TAGGED_TEXT).calls[0].arguments["content"] == _TAGGED * 8000


@pytest.mark.benchmark(group="textcalls-tag-in-string")
def test_tagged_loads(benchmark) -> None:  # type: ignore[no-untyped-def]
    assert benchmark(decisions.loads, TAGGED_JSON)["name"] == "write_file"
