"""Credential shapes masked wherever text leaves the package: error messages,
hints and issues (``decisions.errors``), trace records and repair prompts
(``decisions.trace``)."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REDACTED", "SECRET_PATTERNS", "redact_secrets"]

REDACTED: Final = "[REDACTED]"

#: OpenAI ``sk-...``, Anthropic ``sk-ant-...`` and Google ``AIza...`` keys,
#: bearer tokens, and the value after an api-key or authorization label.
SECRET_PATTERNS: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)\b(x-api-key|x-goog-api-key|api[_-]?key|authorization)(\s*[\"']?\s*[:=]\s*[\"']?)"
               r"[^\s\"',;}]{8,}"),
)
_QUICK: Final = re.compile(r"(?i)sk-|aiza|bearer|api[_-]?key|authorization")


def redact_secrets(text: str, extra: tuple[re.Pattern[str], ...] = ()) -> str:
    """``text`` with every credential shape replaced by ``[REDACTED]``."""
    if not extra and _QUICK.search(text) is None:
        return text
    for pattern in (*SECRET_PATTERNS, *extra):
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text
