"""``decisions inspect FILE --html OUT`` in a real headless Chromium: a
screenshot per bundled example, and a recording full of markup proves that
nothing from it runs or loads (everything escaped, no script, a CSP)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from decisions.examples import EXAMPLES

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "python" / "decisions" / "examples"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("DECISIONS_REQUIRE_NATIVE") == "1":
    raise RuntimeError("the HTML report tests need Chromium: make browser (apt-get install chromium)")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make browser)")

#: Markup in every place a recording can put text: the answer, a tool name, the arguments, ids.
ATTACK = "<script>document.documentElement.setAttribute('data-pwned','1')</script>"
IMG = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','2')\">"
CLOSE = "</pre></td></table><script>document.title='pwned'</script><a href='https://example.com/x'>"


def _hostile_stream() -> bytes:
    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {
            "id": f"chatcmpl-{CLOSE}",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": f"m{IMG}",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    arguments = json.dumps({"path": f"../{ATTACK}"})
    events = [
        chunk({"role": "assistant", "content": f"Here {ATTACK} {IMG} {CLOSE}"}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": f"call_{IMG}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": ""},
                    }
                ]
            }
        ),
        *(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[i : i + 9]}}]})
            for i in range(0, len(arguments), 9)
        ),
        chunk({}, "tool_calls"),
    ]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


class _Tags(HTMLParser):
    """Every tag name and attribute name of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.attributes.update(name for name, _ in attrs)


def _html(tmp_path: Path, recording: Path, *extra: str) -> Path:
    out = tmp_path / (recording.stem + ".html")
    done = subprocess.run(
        [sys.executable, "-m", "decisions", "inspect", str(recording), "--html", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return out


def _chromium(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--user-data-dir=" + str(page.parent / "profile"),
            *flags,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_a_screenshot_of_each_example(tmp_path: Path, example: object) -> None:
    recording = EXAMPLE_DIR / example.file  # type: ignore[attr-defined]
    page = _html(tmp_path, recording, "--tools", "decisions.examples:TOOLS", "--policy", "decisions.examples:POLICY")
    shot = tmp_path / f"{recording.stem}.png"
    done = _chromium(page, "--window-size=1200,1600", f"--screenshot={shot}")
    assert shot.exists(), done.stderr
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a rendered page, not a blank one
    dom = _chromium(page, "--dump-dom").stdout
    expected = example.expected  # type: ignore[attr-defined]
    assert ("decision: " + expected) in dom if expected in ("tool", "final") else f"error {expected}" in dom
    assert "Timeline" in dom


def test_nothing_from_the_recording_runs_or_loads(tmp_path: Path) -> None:
    recording = tmp_path / "hostile.sse"
    recording.write_bytes(_hostile_stream())
    page = _html(tmp_path, recording, "--tools", "decisions.examples:TOOLS", "--policy", "decisions.examples:POLICY")
    text = page.read_text(encoding="utf-8")
    # The page's own markup, as a parser reads it: only these tags and attributes, so no script,
    # no handler, nothing that loads or links anything; and a CSP that forbids it all the same.
    tags = _Tags()
    tags.feed(text)
    assert tags.names <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "h3",
        "div",
        "p",
        "span",
        "b",
        "code",
        "pre",
        "mark",
        "table",
        "tr",
        "th",
        "td",
    }, tags.names
    assert tags.attributes <= {"lang", "charset", "http-equiv", "content", "name", "class"}, tags.attributes
    assert 'Content-Security-Policy" content="default-src &#x27;none&#x27;;' in text
    assert "&lt;script&gt;document.documentElement.setAttribute(&#x27;data-pwned&#x27;,&#x27;1&#x27;)" in text
    dom = _chromium(page, "--dump-dom", "--virtual-time-budget=2000").stdout
    assert "<html" in dom and "data-pwned=" not in dom.split(">", 1)[0]
    assert "<title>decisions inspect" in dom and "pwned</title>" not in dom
    assert "&lt;script&gt;" in dom  # the markup is shown as text
    shot = tmp_path / "hostile.png"
    _chromium(page, "--window-size=1200,1600", f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
