"""Generate the README's tables from the code: the error model (from
``decisions.ERROR_CODES``) and the limits (from ``decisions.Limits`` and the
``#:`` comments above each field in ``limits.py``).

``python packaging/readme.py`` rewrites the blocks between the
``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` markers in README.md;
``tests/test_readme.py`` fails when a block differs from what this renders.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
sys.path.insert(0, str(ROOT / "python"))

from decisions import DEFAULT_LIMITS, ERROR_CODES, Limits  # noqa: E402


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def error_table() -> str:
    """Layer, code, retryable, meaning: one row per code, in table order."""
    rows = ["| layer | code | retryable | meaning |", "|---|---|---|---|"]
    for code, entry in ERROR_CODES.items():
        rows.append(f"| {entry.layer} | `{code}` | {'yes' if entry.retryable else 'no'} | {_cell(entry.meaning)} |")
    return "\n".join(rows)


def _field_comments() -> dict[str, str]:
    """The ``#:`` comment lines above each field of ``Limits``, joined."""
    source = (ROOT / "python" / "decisions" / "limits.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    comments: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Limits":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    doc: list[str] = []
                    index = stmt.lineno - 2
                    while index >= 0 and lines[index].strip().startswith("#:"):
                        doc.insert(0, lines[index].strip()[2:].strip())
                        index -= 1
                    comments[stmt.target.id] = " ".join(doc)
    return comments


def _human(value: int, name: str) -> str:
    """The value with thousands separators; a size in bytes also in KiB / MiB."""
    if "bytes" in name:
        for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
            if value >= size and value % size == 0:
                return f"{value:,} ({value // size} {unit})"
    return f"{value:,}"


def limits_table() -> str:
    """Field, default, why: one row per ``Limits`` field."""
    comments = _field_comments()
    rows = ["| limit | default | why |", "|---|---|---|"]
    for field in dataclasses.fields(Limits):
        value = getattr(DEFAULT_LIMITS, field.name)
        rows.append(f"| `{field.name}` | {_human(value, field.name)} | {_cell(comments.get(field.name, ''))} |")
    return "\n".join(rows)


BLOCKS = {"errors": error_table, "limits": limits_table}


def block(text: str, name: str) -> str | None:
    """The current content of block ``name`` in ``text`` (None when absent)."""
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    return match.group(1).rstrip("\n") if match else None


def render(text: str) -> str:
    """``text`` with every generated block replaced by its fresh rendering."""
    for name, make in BLOCKS.items():
        if block(text, name) is None:
            raise SystemExit(f"README.md has no <!-- {name}:begin --> ... <!-- {name}:end --> block")
        text = re.sub(
            rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)",
            lambda m, table=make(): m.group(1) + table + "\n" + m.group(2),  # noqa: B008 (made once per block)
            text,
            flags=re.S,
        )
    return text


if __name__ == "__main__":
    README.write_text(render(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"updated {', '.join(BLOCKS)} in {README}")
