"""Where a model's text *quotes* rather than says: the Markdown ranges (code
spans, fenced and indented code blocks, block quotes, verbatim HTML blocks)
that ``<tool_call>`` blocks written inside are text, not calls.

A small scanner of the CommonMark 0.31 block structure (block quotes and list
items as containers; paragraphs, ATX and setext headings, thematic breaks,
fenced and indented code, the seven kinds of HTML block as leaves, with
lazy continuation lines) and of its code spans (backtick strings of equal
length within one paragraph, backslash escapes outside them). It answers one
question, for positions asked in increasing order: is this position quoted?

Two things a whole-document Markdown parser cannot do are why it is its own
scanner: the ``<tool_call>`` blocks that are calls are *atoms* -- their JSON is
never read as Markdown (a backtick inside an argument string does not open a
code span that swallows the next call; a blank line inside the JSON does not
end the paragraph), which needs the parse to resume after each block in the
state it had before it; and the cost must follow the prose, not the
arguments: the text between a call's tags is skipped by the caller, never
scanned line by line.

Inline raw HTML that hides its content -- a comment, a processing
instruction, a CDATA section within a paragraph -- quotes it too (a call
the model commented out is not a call). Deliberately not modelled
(CommonMark details that cannot turn quoted text into a call): link
reference definitions, raw HTML tags, declarations (``<!X ... >``, which
the tag's own ``>`` would close) and autolinks (their precedence over
backticks).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Final

__all__ = ["QuotedRanges"]

_NEWLINE: Final = re.compile(r"\r\n?|\n")
_FENCE: Final = re.compile(r"`{3,}|~{3,}")
_ATX: Final = re.compile(r"#{1,6}(?=[ \t]|$)")
_THEMATIC: Final = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})")
_SETEXT: Final = re.compile(r"(?:=+|-+)[ \t]*")
_BULLET: Final = re.compile(r"[-+*](?=[ \t]|$)")
_ORDERED: Final = re.compile(r"(\d{1,9})[.)](?=[ \t]|$)")
_CLOSING_SPACE: Final = re.compile(r"[ \t]*")
_HTML_VERBATIM: Final = (
    (
        re.compile(r"<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I),
        re.compile(r"</(?:script|pre|style|textarea)>", re.I),
    ),
    (re.compile(r"<!--"), re.compile(r"-->")),
    (re.compile(r"<\?"), re.compile(r"\?>")),
    (re.compile(r"<![A-Za-z]"), re.compile(r">")),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>")),
)
_HTML_BLOCK_NAMES: Final = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|"
    "dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|"
    "li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|"
    "tfoot|th|thead|title|tr|track|ul"
)
_HTML_TYPE6: Final = re.compile(rf"</?(?:{_HTML_BLOCK_NAMES})(?:[ \t]|/?>|$)", re.I)
_ATTRIBUTE: Final = (
    r"""(?:[ \t]++[A-Za-z_:][A-Za-z0-9_.:-]*+(?:[ \t]*+=[ \t]*+(?:[^ \t"'=<>`]++|'[^']*+'|"[^"]*+"))?+)"""
)
_HTML_TYPE7: Final = re.compile(
    rf"(?:<[A-Za-z][A-Za-z0-9-]*+{_ATTRIBUTE}*+[ \t]*+/?>|</[A-Za-z][A-Za-z0-9-]*+[ \t]*+>)[ \t]*+$"
)
#: A backslash escape, a backtick string, or the opening of inline raw HTML
#: that hides its content -- a comment, a processing instruction, a CDATA
#: section (CommonMark 6.1, 6.6 and 2.4).
_ESCAPE_OR_RUN: Final = re.compile(r"\\[!-/:-@\[-`{-~]|`+|<!--|<\?|<!\[CDATA\[")
#: Where each kind of inline raw HTML opened by ``_ESCAPE_OR_RUN`` ends.
_HTML_CLOSERS: Final = {"<!--": "-->", "<?": "?>", "<![CDATA[": "]]>"}
_RUN: Final = re.compile(r"`+")

_QUOTE: Final = -1  # a block quote on the container stack; a list item is its content column


def _advance(text: str, pos: int, end: int, col: int, limit: int | None = None) -> tuple[int, int]:
    """Past the spaces and tabs at ``pos`` (up to column ``limit``): the new
    position and column (tabs stop at multiples of four)."""
    while pos < end and (limit is None or col < limit):
        char = text[pos]
        if char == " ":
            col += 1
        elif char == "\t":
            stop = col + 4 - col % 4
            if limit is not None and stop > limit:
                return pos, limit  # part of the tab is consumed; the rest counts from ``limit``
            col = stop
        else:
            break
        pos += 1
    return pos, col


@dataclass(slots=True)
class _Line:
    """One parsed line: its span, whether it is quoted, and the paragraph
    content on it (``segment``; ``new_paragraph`` when it opens one)."""

    start: int
    end: int
    next_start: int
    quoted: bool = False
    segment: tuple[int, int] | None = None
    new_paragraph: bool = False


@dataclass(slots=True)
class _Blocks:
    """The CommonMark block parser's state between lines (copyable, so a
    paragraph's end can be found by parsing ahead)."""

    text: str
    pos: int = 0
    stack: list[int] = field(default_factory=list)
    empty_items: set[int] = field(default_factory=set)  # stack indexes of items still without content
    quotes: list[int] = field(default_factory=list)  # stack indexes of the block quotes, ascending
    line_start: int = 0  # where the line being parsed starts
    thematic_tails: dict[str, int] | None = None  # see ``_thematic``, for the line being parsed
    leaf: str | None = None  # "paragraph", "fence", "code", "html"
    fence: tuple[str, int] = ("", 0)
    html_end: re.Pattern[str] | None = None
    html_quoted: bool = False

    def copy(self) -> _Blocks:
        return _Blocks(
            self.text,
            self.pos,
            list(self.stack),
            set(self.empty_items),
            list(self.quotes),
            leaf=self.leaf,
            fence=self.fence,
            html_end=self.html_end,
            html_quoted=self.html_quoted,
        )

    def next_line(self) -> _Line | None:
        """Parse the line at ``pos`` and move past it; None at the end."""
        text = self.text
        start = self.pos
        if start >= len(text):
            return None
        newline = _NEWLINE.search(text, start)
        end, next_start = (newline.start(), newline.end()) if newline else (len(text), len(text))
        self.pos = next_start
        line = _Line(start, end, next_start)
        self.line_start, self.thematic_tails = start, None
        pos, col = start, 0
        matched = 0
        # The first character that is no space or tab at or after ``pos``, and
        # its column (columns count from the line's start, so it stands while
        # ``pos`` only crosses spaces): found once, not once per container.
        first, first_col = _advance(text, pos, end, col)
        for index, container in enumerate(self.stack):
            if first < pos:
                first, first_col = _advance(text, pos, end, col)
            if first >= end:  # blank from here: it stays in the containers up to a quote or an empty item
                matched = self._blank_reach(index)
                break
            if container == _QUOTE:
                if first < end and text[first] == ">" and first_col - col <= 3:
                    pos, col = first + 1, first_col + 1
                    if pos < end and text[pos] in " \t":
                        pos, col = _advance(text, pos, end, col, col + 1)
                    matched += 1
                    continue
                break
            if first_col < container:
                break
            pos, col = _advance(text, pos, end, col, container)
            self.empty_items.discard(index)
            matched += 1
        if matched < len(self.stack):
            if self.leaf == "paragraph" and self._lazy(pos, end, col):
                line.quoted = bool(self.quotes)
                if not line.quoted:
                    first, _ = _advance(text, pos, end, col)
                    line.segment = (first, end)
                return line
            del self.stack[matched:]
            del self.quotes[bisect_left(self.quotes, matched) :]
            self.empty_items = {index for index in self.empty_items if index < matched}
            self.leaf = None
        if self.leaf not in ("fence", "html") and not (
            self.leaf == "code" and _advance(text, pos, end, col)[1] - col >= 4
        ):
            pos, col = self._open_containers(pos, end, col)
        self._leaf(line, pos, end, col)
        if self.quotes:
            line.quoted = True
            line.segment = None
            line.new_paragraph = False
        return line

    def _blank_reach(self, index: int) -> int:
        """How many containers a line that is blank from container ``index``
        on stays in: a list item holds a blank line unless it is still
        without content (an item begins with at most one), a block quote
        never does. Found without walking the containers one by one (a blank
        line under thousands of open items cost each of them)."""
        reach = len(self.stack)
        at = bisect_left(self.quotes, index)
        if at < len(self.quotes):
            reach = self.quotes[at]
        for item in self.empty_items:
            if index <= item < reach:
                reach = item
        return reach

    def _thematic(self, first: int, end: int) -> bool:
        """Whether the line's rest from ``first`` (no space) is a thematic
        break: the line's longest tails of one break character with spaces
        and tabs are found once per line, so each list marker of a line
        asks in constant time (the rest of the line was read per marker)."""
        text = self.text
        char = text[first]
        if char not in "*-_":
            return False
        tails = self.thematic_tails
        if tails is None:
            start = self.line_start
            line = text[start:end]
            tails = self.thematic_tails = {c: start + len(line.rstrip(c + " \t")) for c in "*-_"}
        return first >= tails[char] and text.count(char, first, end) >= 3

    def _lazy(self, pos: int, end: int, col: int) -> bool:
        """Whether the rest of a line would continue a paragraph (CommonMark's
        lazy continuation): not blank and opening no other block."""
        first, first_col = _advance(self.text, pos, end, col)
        if first >= end:
            return False
        if first_col - col >= 4:
            return True
        return not self._starts_block(first, end)

    def _starts_block(self, first: int, end: int) -> bool:
        """Whether a line whose container prefixes did not all match opens a
        block (cmark's rules: any list marker does, an HTML block of kind 7
        does not)."""
        text = self.text
        char = text[first]
        if char == ">":
            return True
        if self._fence_start(first, end) is not None or _ATX.match(text, first, end):
            return True
        if _THEMATIC.fullmatch(text, first, end):
            return True
        if self._list_marker(first, end, paragraph=False) is not None:
            return True
        return self._html_start(first, end, paragraph=True) is not None

    def _fence_start(self, first: int, end: int) -> tuple[str, int] | None:
        match = _FENCE.match(self.text, first, end)
        if match is None:
            return None
        run = match.group()
        if run[0] == "`" and "`" in self.text[match.end() : end]:
            return None
        return run[0], len(run)

    def _list_marker(self, first: int, end: int, *, paragraph: bool) -> int | None:
        """The end of a list marker at ``first`` that may start an item here."""
        text = self.text
        if self._thematic(first, end):
            return None
        match = _BULLET.match(text, first, end)
        if match is None:
            match = _ORDERED.match(text, first, end)
            if match is None or (paragraph and match.group(1) != "1"):
                return None
        if paragraph and _advance(text, match.end(), end, 0)[0] >= end:
            return None  # an empty item cannot interrupt a paragraph
        return match.end()

    def _html_start(self, first: int, end: int, *, paragraph: bool) -> tuple[re.Pattern[str] | None, bool] | None:
        text = self.text
        if text[first] != "<":
            return None
        for opening, closing in _HTML_VERBATIM:
            if opening.match(text, first, end):
                return closing, True
        if _HTML_TYPE6.match(text, first, end) or (not paragraph and _HTML_TYPE7.match(text, first, end)):
            return None, False
        return None

    def _open_containers(self, pos: int, end: int, col: int) -> tuple[int, int]:
        text = self.text
        while True:
            first, first_col = _advance(text, pos, end, col)
            if first >= end or first_col - col >= 4:
                return pos, col
            if text[first] == ">":
                self.quotes.append(len(self.stack))
                self.stack.append(_QUOTE)
                self.leaf = None
                pos, col = first + 1, first_col + 1
                if pos < end and text[pos] in " \t":
                    pos, col = _advance(text, pos, end, col, col + 1)
                continue
            marker_end = self._list_marker(first, end, paragraph=self.leaf == "paragraph")
            if marker_end is None:
                return pos, col
            marker_col = first_col + (marker_end - first)
            content, content_col = _advance(text, marker_end, end, marker_col)
            if content >= end or content_col - marker_col >= 5:
                content, content_col = _advance(text, marker_end, end, marker_col, marker_col + 1)
            if content >= end:
                self.empty_items.add(len(self.stack))
            self.stack.append(content_col)
            self.leaf = None
            pos, col = content, content_col

    def _leaf(self, line: _Line, pos: int, end: int, col: int) -> None:
        text = self.text
        first, first_col = _advance(text, pos, end, col)
        indent = first_col - col
        blank = first >= end
        if self.leaf == "fence":
            char, length = self.fence
            line.quoted = True
            if indent <= 3 and not blank and text.startswith(char * length, first):
                run = _advance_run(text, first, end, char)
                if _CLOSING_SPACE.fullmatch(text, run, end):
                    self.leaf = None
            return
        if self.leaf == "html":
            line.quoted = self.html_quoted
            if self.html_end is None:
                if blank:
                    self.leaf = None
            elif self.html_end.search(text, pos, end):
                self.leaf = None
            return
        if blank:
            if self.leaf != "code":
                self.leaf = None
            return
        if indent >= 4 and self.leaf != "paragraph":
            self.leaf = "code"
            line.quoted = True
            return
        if indent < 4:
            fence = self._fence_start(first, end)
            if fence is not None:
                self.leaf, self.fence = "fence", fence
                line.quoted = True
                return
            if _ATX.match(text, first, end):
                self.leaf = None
                line.segment, line.new_paragraph = (first, end), True
                return
            if self.leaf == "paragraph" and _SETEXT.fullmatch(text, first, end):
                self.leaf = None
                return
            if _THEMATIC.fullmatch(text, first, end):
                self.leaf = None
                return
            html = self._html_start(first, end, paragraph=self.leaf == "paragraph")
            if html is not None:
                self.leaf, (self.html_end, self.html_quoted) = "html", html
                line.quoted = self.html_quoted
                if self.html_end is not None and self.html_end.search(text, first, end):
                    self.leaf = None
                return
        line.new_paragraph = self.leaf != "paragraph"
        self.leaf = "paragraph"
        line.segment = (first, end)


def _advance_run(text: str, pos: int, end: int, char: str) -> int:
    while pos < end and text[pos] == char:
        pos += 1
    return pos


class QuotedRanges:
    """Answers, for positions in increasing order (from ``start`` on),
    whether ``text`` quotes them. After a ``<tool_call>`` block that is a call, :meth:`resume` tells
    where it ended: parsing goes on from there as if the block were one atom
    of the paragraph it opened in."""

    def __init__(self, text: str, start: int = 0) -> None:
        """Markdown read from ``start`` of ``text`` on, as if it began there."""
        self._text = text
        self._blocks = _Blocks(text, start)
        self._line: _Line | None = None
        self._scan = start  # where the code-span scan of the current paragraph stands
        self._span_end = -1  # end of the last code span found
        #: (end, backtick strings by length, raw-HTML closers found) ahead of _scan
        self._paragraph: tuple[int, dict[int, list[int]], dict[str, int]] | None = None

    def quoted(self, position: int) -> bool:
        """Whether ``position`` is inside quoted text (not before any position asked earlier)."""
        line = self._line
        while line is None or line.next_start <= position and line.next_start < len(self._text):
            line = self._blocks.next_line()
            if line is None:
                return False
            self._line = line
            if line.new_paragraph and line.segment is not None:
                self._start_paragraph(line.segment[0])
        if line.quoted:
            return True
        segment = line.segment
        if segment is None or not segment[0] <= position < segment[1]:
            return False
        return self._in_code_span(position)

    def resume(self, end: int) -> None:
        """The call block that opened on the current line ended at ``end``: the
        rest of that line continues the paragraph (or HTML block) it was in."""
        text = self._text
        if self._line is not None and end <= self._line.end:
            line_end, next_start = self._line.end, self._line.next_start
        else:
            newline = _NEWLINE.search(text, end)
            line_end, next_start = (newline.start(), newline.end()) if newline else (len(text), len(text))
        self._blocks.pos = next_start
        if self._blocks.leaf not in ("paragraph", "html"):
            self._blocks.leaf = "paragraph"
        paragraph = self._blocks.leaf == "paragraph"
        self._line = _Line(end, line_end, next_start, segment=(end, line_end) if paragraph else None)
        ahead = self._paragraph
        self._start_paragraph(end)
        if ahead is not None and line_end <= ahead[0]:
            # The lines read ahead kept the block's lines in the paragraph: from
            # here on they parse as they did there, so its end and runs stand.
            self._paragraph = ahead

    def _start_paragraph(self, start: int) -> None:
        self._scan = start
        self._span_end = -1
        self._paragraph = None

    def _in_code_span(self, position: int) -> bool:
        """Whether ``position`` of the current paragraph is inside a code
        span or inline raw HTML that hides its content."""
        text = self._text
        if position < self._span_end:
            return True
        while True:
            match = _ESCAPE_OR_RUN.search(text, self._scan, position)
            if match is None:
                self._scan = max(self._scan, position)
                return False
            opener = match.group()
            if opener[0] == "\\":
                self._scan = match.end()
                continue
            if opener[0] == "<":
                span_end = self._html_end(opener, match.end())
            else:
                closer = self._closer(match.end(), len(opener))
                span_end = closer + len(opener) if closer >= 0 else -1
            if span_end < 0:
                self._scan = match.end()
                continue
            self._scan = self._span_end = span_end
            if position < self._span_end:
                return True

    def _ahead(self) -> tuple[int, dict[int, list[int]], dict[str, int]]:
        """The current paragraph's end, its backtick strings by length (from
        ``_scan`` on) and the raw-HTML closers found so far, read once."""
        if self._paragraph is None:
            ahead = self._blocks.copy()
            assert self._line is not None
            end = self._line.end
            while (line := ahead.next_line()) is not None and line.segment is not None and not line.new_paragraph:
                end = line.end
            runs: dict[int, list[int]] = {}
            for run in _RUN.finditer(self._text, self._scan, end):
                runs.setdefault(run.end() - run.start(), []).append(run.start())
            self._paragraph = (end, runs, {})
        return self._paragraph

    def _closer(self, start: int, length: int) -> int:
        """The first backtick string of exactly ``length`` at or after
        ``start`` in the current paragraph, or -1."""
        starts = self._ahead()[1].get(length, [])
        index = bisect_left(starts, start)
        return starts[index] if index < len(starts) else -1

    def _html_end(self, opener: str, start: int) -> int:
        """The end of the inline raw HTML that ``opener`` opens (its text goes
        on at ``start``) in the current paragraph, or -1 when it is not closed
        there. A closer found is kept, so a run of unclosed openers costs one
        search (the scan only moves forward)."""
        text = self._text
        if opener == "<!--":
            if text.startswith(">", start):
                return start + 1  # <!--> is a whole comment
            if text.startswith("->", start):
                return start + 2  # and so is <!--->
        closer = _HTML_CLOSERS[opener]
        end, _, found = self._ahead()
        at = found.get(closer)
        if at is None or 0 <= at < start:
            at = found[closer] = text.find(closer, start, end)
        return at + len(closer) if at >= 0 else -1
