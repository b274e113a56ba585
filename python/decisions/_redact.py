"""Credential shapes masked wherever text leaves the package: error messages,
hints, paths and issues (``decisions.errors``), trace records and repair
prompts (``decisions.recover.trace``, ``decisions.recover.repair``).

The shapes are the published token formats of the providers an agent meets
(the same families secret scanners such as gitleaks and detect-secrets
match): PEM private-key blocks, JWTs, OpenAI / Anthropic ``sk-`` keys, Google
``AIza`` keys and OAuth tokens, AWS access key ids, GitHub, GitLab, Slack,
Hugging Face, Groq, xAI, Replicate, Perplexity, Stripe, npm and PyPI
tokens, the credential of a URL, and the value of any member or assignment
whose name ends in a credential word (``password``, ``secret``, ``token``,
``api_key``, ``access_key``, ``authorization``, ...), with its ``Bearer`` /
``Basic`` scheme.

Every pattern is a literal prefix followed by possessive runs of one
character class, so each is one linear pass (no backtracking); the matches of
all of them are merged as spans, so a secret matched by two patterns is
masked whole, and :func:`redact_with_offset` keeps a position pointing at the
same place in the masked text (an excerpt is cut *after* masking, never
before).
"""

from __future__ import annotations

import re
from typing import Any, Final, Mapping

__all__ = ["REDACTED", "SECRET_PATTERNS", "redact_secrets", "redact_value", "redact_with_offset", "secret_spans"]

REDACTED: Final = "[REDACTED]"

#: Credential words a member or variable name may end in (matched on the
#: lower-cased text, one literal-prefixed pattern each so the scan is fast).
_CREDENTIAL_WORDS: Final = (
    "pass(?:word|wd|phrase)?",
    "pwd",
    "secret",
    "token",
    "api[_-]?key",
    "access[_-]?key(?:[_-]?id)?",
    "private[_-]?key",
    "credentials?",
    "auth(?:orization)?",
    "cookie",
    "session[_-]?(?:id|key|token)",
)
#: A member or assignment value: a JSON string (also escaped, at any depth,
#: inside other strings, or cut off), a single-quoted string, or a bare word.
_VALUE: Final = (
    r"""(?P<value>"(?:[^"\\\n]|\\.)*+"?|\\++"(?:[^"\\\n]|\\++[^"\\\n])*+(?:\\++"?)?|'[^'\n]*+'?"""
    r"""|[^\s"'`,;&}\]\[)<>\\][^\s"'`,;&}\])<>\\]*+)"""
)
#: A member name that holds a credential (ends in a credential word).
_CREDENTIAL_NAME: Final = re.compile("(?:" + "|".join(_CREDENTIAL_WORDS) + r")\Z")
_ASSIGNED: Final = r"""(?:\\*+["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:(?:bearer|basic|token|digest)[ \t]++)?""" + _VALUE

#: Patterns run on the lower-cased text (a value group is what they mask).
_LOWERED: Final[tuple[re.Pattern[str], ...]] = (
    *(re.compile(word + _ASSIGNED) for word in _CREDENTIAL_WORDS),  # "password": "...", API_KEY=..., x-api-key: ...
    re.compile(r"bearer[ \t]++(?P<value>[a-z0-9._~+/=-]{8,}+)"),
    re.compile(r"://[^\s/:@]{1,256}:(?P<value>[^\s/@]{1,256}+)@"),  # https://user:password@host
)

#: Token formats, each a literal prefix and possessive runs (masked whole).
#: Those with a short prefix count only at the start of a word.
SECRET_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(pattern)
    for pattern in (
        # PEM private keys (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP), through the END line or, cut off, the key text
        r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+"
        r"(?:-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        # JWT / JWS / JWE: the whole run of base64url characters holding the ``eyJ`` (so a run that
        # is not followed by a dot is read once, not again from every ``eyJ`` inside it)
        r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*?eyJ[A-Za-z0-9_-]{8})[A-Za-z0-9_-]{11,}+\.[A-Za-z0-9_-]++"
        r"(?:\.[A-Za-z0-9_-]*+){0,3}",
        r"sk-[A-Za-z0-9_-]{16,}+",  # OpenAI sk-, sk-proj-, sk-svcacct-, sk-admin-; Anthropic sk-ant-
        r"AIza[0-9A-Za-z_-]{30,}+",  # Google API key
        r"ya29\.[0-9A-Za-z_-]{20,}+",  # Google OAuth access token
        r"GOCSPX-[0-9A-Za-z_-]{20,}+",  # Google OAuth client secret
        r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}+",  # AWS access key id
        r"gh[pousr]_[A-Za-z0-9]{30,}+",  # GitHub classic tokens
        r"github_pat_[A-Za-z0-9_]{30,}+",  # GitHub fine-grained tokens
        r"glpat-[A-Za-z0-9_-]{20,}+",  # GitLab
        r"xox(?:e\.xox)?[abposre]-[A-Za-z0-9-]{10,}+",  # Slack bot, user, app-level, refresh tokens
        r"xapp-[A-Za-z0-9-]{10,}+",
        r"hooks\.slack\.com/services/[A-Za-z0-9/_+-]{20,}+",
        r"hf_[A-Za-z0-9]{30,}+",  # Hugging Face
        r"gsk_[A-Za-z0-9]{20,}+",  # Groq
        r"xai-[A-Za-z0-9]{20,}+",  # xAI
        r"r8_[A-Za-z0-9]{20,}+",  # Replicate
        r"pplx-[A-Za-z0-9]{20,}+",  # Perplexity
        r"k_(?:live|test)_[A-Za-z0-9]{16,}+",  # Stripe sk_/rk_/pk_
        r"npm_[A-Za-z0-9]{30,}+",  # npm
        r"pypi-[A-Za-z0-9_-]{50,}+",  # PyPI
    )
)
_WORD_START: Final = frozenset(pattern for pattern in SECRET_PATTERNS if pattern.pattern[:3] in ("sk-", "hf_", "r8_"))


def secret_spans(text: str, extra: tuple[re.Pattern[str], ...] = ()) -> list[tuple[int, int]]:
    """The sorted, merged ``(start, end)`` spans of ``text`` to mask.

    ``extra`` patterns mask their whole match, or -- with two groups or more
    -- what follows their second group (a label and separator kept)."""
    spans: list[tuple[int, int]] = []
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: keep offsets exact
        lowered = "".join(char.lower() if len(char.lower()) == 1 else char for char in text)
    for pattern in _LOWERED:
        spans += (match.span("value") for match in pattern.finditer(lowered))
    for pattern in SECRET_PATTERNS:
        word_start = pattern in _WORD_START
        for match in pattern.finditer(text):
            start = match.start()
            if not (word_start and start and text[start - 1].isalnum()):
                spans.append(match.span())
    for pattern in extra:
        for match in pattern.finditer(text):
            spans.append((match.end(2), match.end()) if pattern.groups >= 2 else match.span())
    merged: list[tuple[int, int]] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def redact_with_offset(text: str, offset: int, extra: tuple[re.Pattern[str], ...] = ()) -> tuple[str, int]:
    """``text`` with every credential masked, and where ``offset`` lands in it
    (at the mask when it pointed inside a masked span)."""
    spans = secret_spans(text, extra)
    if not spans:
        return text, offset
    out: list[str] = []
    shift = 0
    moved: int | None = None
    last = 0
    for start, end in spans:
        if moved is None and offset < end:
            moved = (offset if offset < start else start) + shift
        out += (text[last:start], REDACTED)
        shift += len(REDACTED) - (end - start)
        last = end
    out.append(text[last:])
    if moved is None:
        moved = offset + shift
    return "".join(out), moved


def redact_secrets(text: str, extra: tuple[re.Pattern[str], ...] = ()) -> str:
    """``text`` with every credential shape replaced by ``[REDACTED]``."""
    return redact_with_offset(text, 0, extra)[0]


def redact_value(value: Any) -> Any:
    """A copy of ``value`` (strings, and dicts, lists and tuples of them -- keys
    included; a tuple comes back as a list) with every credential shape
    masked, and the whole value of a member whose name ends in a credential
    word. Iterative: nesting depth costs no stack."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, str):
            parent[key] = redact_secrets(item)
        elif isinstance(item, Mapping):
            out: dict[Any, Any] = {}
            parent[key] = out
            for name, sub in item.items():
                secret = isinstance(name, str) and _CREDENTIAL_NAME.search(name.lower()) is not None
                name = redact_secrets(name) if isinstance(name, str) else name
                out[name] = REDACTED if secret else None
                if not secret:
                    stack.append((sub, out, name))
        elif isinstance(item, (list, tuple)):
            seq: list[Any] = [None] * len(item)
            parent[key] = seq
            stack.extend((sub, seq, index) for index, sub in enumerate(item))
        else:
            parent[key] = item
    return root[0]
