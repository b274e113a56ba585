"""Bundled example recordings for ``decisions inspect`` (no FILE).

Six recordings, each hand-made in its provider's real wire format, showing one
thing the chain must get right: a healthy call, parallel calls, a call cut by
the token limit, the invalid ``\\d`` escape, an unknown tool (with its
suggestion), and a path escaping the workspace. :data:`TOOLS` and
:data:`POLICY` are the small registry and policy they are decided against
(``decisions inspect FILE --tools decisions.examples:TOOLS --policy
decisions.examples:POLICY`` uses them for your own files).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from .._backend import BACKEND
from ..inspection import inspect_bytes
from ..validate.domain import Tool, ToolRegistry
from ..validate.policy import Policy, ToolRule

__all__ = ["Example", "EXAMPLES", "TOOLS", "POLICY", "WORKSPACE", "load", "run_examples"]

#: The workspace the example policy confines paths to: a directory shipped
#: with the examples (paths are resolved against it; nothing is read or written).
WORKSPACE: Final = str(Path(__file__).resolve().parent / "workspace")


class ReadFile(BaseModel):
    """Arguments of ``read_file``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    path: str


class WriteFile(BaseModel):
    """Arguments of ``write_file``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    path: str
    content: str


class Search(BaseModel):
    """Arguments of ``search``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    pattern: str
    path: str = "."


def _registry() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool(name="read_file", parameters=ReadFile, side_effects=False, description="Read a file."),
            Tool(name="write_file", parameters=WriteFile, side_effects=True, description="Write a file."),
            Tool(name="search", parameters=Search, side_effects=False, description="Search files."),
        ]
    )


def _policy() -> Policy:
    """Read anywhere in the workspace, write only under ``src/`` and ``notes/``."""
    return Policy(
        workspace=WORKSPACE,
        write_scopes=("src", "notes"),
        tools={
            "read_file": ToolRule(paths={"path": "read"}),
            "write_file": ToolRule(paths={"path": "write"}),
            "search": ToolRule(paths={"path": "read"}),
        },
    )


TOOLS: Final = _registry()
POLICY: Final = _policy()


@dataclass(frozen=True, slots=True)
class Example:
    """One bundled recording and the outcome it was recorded to show
    (``"tool"`` or ``"final"`` for a decision, else the error code)."""

    name: str
    file: str
    title: str
    expected: str


EXAMPLES: Final = (
    Example("healthy", "healthy_tool_call.sse", "OpenAI Chat stream: one read_file call", "tool"),
    Example("parallel", "parallel_calls.sse", "Anthropic stream: text, then read_file and search in parallel", "tool"),
    Example(
        "truncated", "truncated_call.sse", "Anthropic stream cut by max_tokens inside write_file", "INCOMPLETE_RESPONSE"
    ),
    Example(
        "invalid_escape",
        "invalid_escape.sse",
        "OpenAI Responses stream: search with an invalid \\d escape",
        "INVALID_ESCAPE",
    ),
    Example("unknown_tool", "unknown_tool.json", "Gemini body: the model calls readFile", "UNKNOWN_TOOL"),
    Example(
        "path_escape",
        "path_escape.json",
        "OpenAI Chat body: write_file outside the workspace",
        "PATH_OUTSIDE_WORKSPACE",
    ),
)


def load(example: Example) -> bytes:
    """The recording's bytes (package data)."""
    return resources.files(__name__).joinpath(example.file).read_bytes()


def run_examples() -> dict[str, Any]:
    """Inspect every example; ``all_as_expected`` says each gave its outcome."""

    results = []
    for example in EXAMPLES:
        result = inspect_bytes(load(example), tools=TOOLS, policy=POLICY, source=f"examples/{example.file}")
        error = result["error"]
        outcome = error["code"] if error is not None else (result["decision"] or {}).get("kind")
        results.append(
            {
                "name": example.name,
                "title": example.title,
                "expected": example.expected,
                "outcome": outcome,
                "as_expected": outcome == example.expected,
                "result": result,
            }
        )
    return {"backend": BACKEND, "examples": results, "all_as_expected": all(r["as_expected"] for r in results)}
