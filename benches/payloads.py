"""Deterministic JSON payloads for the ``loads`` benchmarks.

Each is the kind of text a coding agent's tool call carries:

- ``small``: tool arguments of about 150 bytes;
- ``edit``: an edit of about 4 KiB, source code with escapes (newlines, tabs,
  quotes, backslashes) and non-ASCII text;
- ``write_file``: about 1 MiB, a ``write_file`` whose content is a
  5,000-record array;
- ``deep``: nesting 200 levels deep (parsed under :data:`DEEP_LIMITS`);
- ``keys``: one object with 2,000 distinct keys;
- three real documents of the classic nativejson-benchmark set, in
  ``benches/data/`` (see its README): ``twitter`` (a social-media API dump,
  non-ASCII text and escapes), ``citm_catalog`` (an event catalogue, many
  short keys and integers), ``canada`` (GeoJSON coordinates, mostly floats).

Nothing is random: the same text on every run and machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from decisions import Limits

__all__ = ["PAYLOADS", "LIMITS", "DEEP_LIMITS"]

#: The limits that admit the 200-level payload (the default depth is 64).
DEEP_LIMITS: Final = Limits(max_depth=256)


def small() -> str:
    return json.dumps(
        {
            "path": "src/service/handlers/users.py",
            "pattern": "def (get|put)_user\\(",
            "context_lines": 3,
            "max_results": 50,
            "case_sensitive": False,
        }
    )


_CODE: Final = '''def render(user: "User") -> str:
\t"""Greet the user; names like Zoë, José or 渡辺 are common."""
\tpath = "C:\\\\Users\\\\" + user.login
\tif not user.active:
\t\treturn f"{user.name} (inactive) \u2014 last seen {user.seen:%Y-%m-%d}"
\treturn "Grüße, " + user.name + " \u2192 " + path
'''


def edit() -> str:
    old = _CODE * 6
    new = old.replace("Grüße", "Καλημέρα").replace("inactive", "désactivé")
    text = json.dumps(
        {"path": "src/render.py", "old_string": old[:2000], "new_string": new[:2000], "replace_all": False},
        ensure_ascii=False,
    )
    return text


def write_file() -> str:
    records: list[dict[str, Any]] = []
    for i in range(5000):
        records.append(
            {
                "id": i,
                "name": f"user-{i:05d}",
                "email": f"user{i}@example.com",
                "score": round(i * 0.37 % 100, 3),
                "active": i % 3 != 0,
                "tags": ["alpha", "beta", "gamma"][: 1 + i % 3],
                "address": {"city": ["Lyon", "Zürich", "Kraków", "Osaka"][i % 4], "zip": f"{10000 + i}"},
                "created": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T08:{i % 60:02d}:00Z",
                "note": "ok" if i % 5 else 'needs review:\n\t"escalate"',
            }
        )
    content = {"version": 1, "records": records}
    return json.dumps({"path": "data/users.json", "content": content, "overwrite": True}, ensure_ascii=False)


def deep() -> str:
    depth = 200
    return '{"node": [' * (depth // 2) + '"leaf"' + "]}" * (depth // 2)


def keys() -> str:
    return json.dumps({f"field_{i:04d}_{'x' * (i % 7)}": (i if i % 2 else f"v{i}") for i in range(2000)})


DATA: Final = Path(__file__).resolve().parent / "data"
DOCUMENTS: Final = ("twitter", "citm_catalog", "canada")

#: name -> JSON text.
PAYLOADS: Final[dict[str, str]] = {
    "small": small(),
    "edit": edit(),
    "write_file": write_file(),
    "deep": deep(),
    "keys": keys(),
    **{name: (DATA / f"{name}.json").read_text(encoding="utf-8") for name in DOCUMENTS},
}

#: name -> the ``decisions.Limits`` each payload is parsed under (None: the defaults).
LIMITS: Final[dict[str, Limits | None]] = {name: (DEEP_LIMITS if name == "deep" else None) for name in PAYLOADS}
