"""A picture of a recording: ``decisions inspect FILE --html OUT``.

:func:`render_html` turns one :func:`decisions.inspection.inspect_bytes`
result into one self-contained HTML page: a timeline of the canonical events,
each call's arguments as they grew, where the failure happened (the offending
characters highlighted), and the decision or the error with its repair text.

The page runs nothing and fetches nothing: every piece of the recording is
HTML-escaped, there is no script, and a Content-Security-Policy of
``default-src 'none'`` (inline styles only) forbids scripts, frames, images
and any network request even if a piece were not.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["render_html"]

#: Events shown in the timeline (the rest are counted).
_MAX_EVENTS: Final = 2000
#: Characters of context shown on each side of a failure.
_CONTEXT: Final = 120

_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #dde}
.meta{color:#556;margin-bottom:12px} code,pre{font:12.5px/1.4 ui-monospace,monospace}
pre{background:#fff;border:1px solid #dde;padding:8px;white-space:pre-wrap;word-break:break-all;margin:4px 0}
table{border-collapse:collapse;width:100%;background:#fff} td,th{border:1px solid #e3e6ee;padding:3px 6px;
vertical-align:top;text-align:left} th{background:#f0f2f7} td.n{color:#889;width:3em;text-align:right}
.t{font-weight:600;white-space:nowrap} .bad{background:#ffd6d6;outline:2px solid #d33;color:#900;font-weight:700}
.ok{color:#176c2e;font-weight:700} .err{color:#a11;font-weight:700} .box{border-left:4px solid #d33;
background:#fff4f4;padding:8px 12px} .good{border-left:4px solid #2a8a45;background:#f2fbf4;padding:8px 12px}
.growth td{font-size:12px}
"""


def _e(value: object) -> str:
    """``value`` as escaped HTML text (quotes too, so it is safe in attributes)."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _json(value: object) -> str:
    return _e(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _event_fields(event: Mapping[str, Any]) -> str:
    parts = []
    for key, value in event.items():
        if key == "type":
            continue
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > 200:
            text = text[:199] + "…"
        parts.append(f"<code>{_e(key)}</code>=<code>{_e(text)}</code>")
    return " ".join(parts)


def _timeline(events: list[Mapping[str, Any]]) -> str:
    if not events:
        return "<p>No canonical events (a whole body, or the stream failed before its first event).</p>"
    rows = [
        f'<tr><td class="n">{i}</td><td class="t">{_e(event.get("type"))}</td><td>{_event_fields(event)}</td></tr>'
        for i, event in enumerate(events[:_MAX_EVENTS])
    ]
    more = f"<p>… {len(events) - _MAX_EVENTS} more events.</p>" if len(events) > _MAX_EVENTS else ""
    return f"<table><tr><th>#</th><th>event</th><th>fields</th></tr>{''.join(rows)}</table>{more}"


def _growth(events: list[Mapping[str, Any]]) -> str:
    """Each call's arguments after every delta."""
    names: dict[str, str] = {}
    grown: dict[str, list[str]] = {}
    for event in events:
        item = str(event.get("item_id"))
        if event.get("type") == "tool_call_started":
            names[item] = f"{event.get('call_id')} → {event.get('name')}"
            grown.setdefault(item, [])
        elif event.get("type") == "tool_arguments_delta":
            steps = grown.setdefault(item, [])
            steps.append((steps[-1] if steps else "") + str(event.get("delta", "")))
    if not grown:
        return "<p>No tool call was streamed.</p>"
    out = []
    for item, steps in grown.items():
        rows = "".join(f'<tr><td class="n">{i + 1}</td><td><code>{_e(s)}</code></td></tr>' for i, s in enumerate(steps))
        out.append(
            f"<h3>{_e(names.get(item, item))}</h3>"
            f'<table class="growth"><tr><th>delta</th><th>arguments so far</th></tr>{rows}</table>'
        )
    return "".join(out)


def _highlight(text: str, offset: int) -> str:
    """``text`` around ``offset``, the character there marked."""
    start = max(0, offset - _CONTEXT)
    end = min(len(text), offset + _CONTEXT)
    before, bad, after = text[start:offset], text[offset : offset + 1] or "␄", text[offset + 1 : end]
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return f'<pre>{lead}{_e(before)}<mark class="bad">{_e(bad)}</mark>{_e(after)}{tail}</pre>'


def _failure_text(result: Mapping[str, Any], error: Mapping[str, Any], data: bytes | None) -> str:
    """The text the error's offset points into, marked; empty when there is none."""
    offset = error.get("offset")
    if not isinstance(offset, int):
        return ""
    response = result.get("response") or {}
    index = error.get("call_index")
    calls = [item for item in response.get("items", []) if item.get("kind") == "tool_call"]
    if isinstance(index, int) and 0 <= index < len(calls) and str(error.get("path", "")).startswith("$.calls"):
        where = f"in the arguments of call {calls[index].get('call_id')} ({calls[index].get('name')})"
        return f"<p>The failure, {_e(where)}, at character {offset}:</p>" + _highlight(
            str(calls[index].get("arguments", "")), offset
        )
    if result.get("stage") == "stream" and data is not None:
        text = data.decode("utf-8", "replace")
        return f"<p>The failure, in the recording, at offset {offset}:</p>" + _highlight(text, min(offset, len(text)))
    if response and error.get("path") == "$":
        text = "".join(str(item.get("text", "")) for item in response.get("items", []) if item.get("kind") == "text")
        return f"<p>The failure, in the answer text, at character {offset}:</p>" + _highlight(text, offset)
    return ""


def _outcome(result: Mapping[str, Any], data: bytes | None) -> str:
    error = result.get("error")
    decision = result.get("decision")
    out = []
    if decision is not None:
        out.append(f'<div class="good"><span class="ok">decision: {_e(decision.get("kind"))}</span>')
        for call, verdict in zip(decision.get("calls", []), decision.get("verdicts", [])):
            out.append(
                f"<p><code>{_e(call.get('call_id'))}</code> <b>{_e(call.get('name'))}</b> → "
                f"{_e(verdict.get('status'))}</p><pre>{_json(call.get('arguments'))}</pre>"
            )
        if decision.get("kind") == "final":
            out.append(f"<pre>{_json(decision.get('value'))}</pre>")
        out.append("</div>")
    if error is not None:
        where = " ".join(
            f"{label} <code>{_e(error[key])}</code>"
            for label, key in (("at", "path"), ("offset", "offset"), ("call", "call_id"), ("tool", "tool"))
            if error.get(key) is not None
        )
        out.append(
            f'<div class="box"><span class="err">{_e(error.get("layer"))} error {_e(error.get("code"))}</span> '
            f"(retryable: {_e(str(error.get('retryable')).lower())}) {where}"
            f"<p>{_e(error.get('message'))}</p>"
        )
        if error.get("hint"):
            out.append(f"<p>hint: {_e(error['hint'])}</p>")
        out.append(_failure_text(result, error, data))
        if error.get("batch"):
            rows = "".join(
                f"<tr><td>{_e(e.get('index'))}</td><td><code>{_e(e.get('call_id'))}</code></td>"
                f"<td>{_e(e.get('tool'))}</td><td>{_e(e.get('status'))}</td><td>{_e(e.get('code'))}</td></tr>"
                for e in error["batch"]
            )
            out.append(
                f"<p>The batch:</p><table><tr><th>#</th><th>call</th><th>tool</th><th>status</th>"
                f"<th>code</th></tr>{rows}</table>"
            )
        if result.get("repair_prompt"):
            out.append(f"<p>Repair message to the model:</p><pre>{_e(result['repair_prompt'])}</pre>")
        elif result.get("repair_refused"):
            out.append(f"<p>Not sent back to the model: {_e(result['repair_refused'])}</p>")
        out.append("</div>")
    return "".join(out)


def render_html(result: Mapping[str, Any], data: bytes | None = None) -> str:
    """One self-contained HTML page for an ``inspect_bytes`` result (``data``:
    the recording itself, to mark a failure inside it)."""
    events = list(result.get("events") or [])
    response = result.get("response")
    title = f"decisions inspect: {result.get('source')}"
    csp = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<div class="meta">format {_e(result.get("format"))} · provider {_e(result.get("provider"))} · '
        f"backend {_e(result.get('backend'))} · exit code {_e(result.get('exit_code'))}</div>",
        "<h2>Outcome</h2>",
        _outcome(result, data),
        f"<h2>Timeline ({len(events)} events)</h2>",
        _timeline(events),
        "<h2>Tool call arguments as they grew</h2>",
        _growth(events),
    ]
    if response is not None:
        body += ["<h2>Normalized response</h2>", f"<pre>{_json(response)}</pre>"]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">'
        f'<meta name="referrer" content="no-referrer"><title>{_e(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )
