"""The ``decisions`` command: the main job on recorded provider output.

``decisions inspect [FILE]`` reads a recorded stream or body (raw SSE, one JSON
event per line, a whole JSON body, or ``-`` for stdin), detects the provider,
assembles or normalizes it, runs ``decide`` and shows the events, the
NormalizedResponse, the decision or the typed error with its position, and the
repair message that would go back to the model. Without FILE it runs over the
bundled example recordings (``decisions.examples``). ``--json`` prints the
stable machine shape described in :func:`inspect_bytes`.

``decisions bench`` measures parsing and stream assembly on this machine and
prints ratios (see :mod:`decisions._bench`).

Exit codes: 0 a decision, 1 a typed failure, 2 a usage error. For the bundled
examples, 0 means every example gave the outcome it was recorded to show.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn, TextIO

from ._bench import render as render_bench
from ._bench import run as run_bench
from .examples import run_examples
from .inspection import (
    _PROVIDER_CHOICES,
    EXIT_DECISION,
    EXIT_FAILURE,
    EXIT_USAGE,
    JSON_SHAPE_VERSION,
    UsageError,
    detect_format,
    inspect_bytes,
    render,
)
from .ledger import cli as _ledger_cli
from .limits import DEFAULT_LIMITS
from .report import render_html
from .validate.domain import ToolRegistry
from .validate.policy import Policy
from .validate.schema import Schema
from .validate.versions import VersionedSchema

__all__ = ["main", "inspect_bytes", "detect_format", "render_html", "EXIT_DECISION", "EXIT_FAILURE", "EXIT_USAGE"]


# ---------------------------------------------------------------- commands


#: What each option's object must be (checked before the chain runs).
_EXPECTED: Final[Mapping[str, tuple[tuple[type, ...], str]]] = {
    "--tools": (
        (ToolRegistry, list, tuple, dict),
        "a decisions.ToolRegistry (or a list of Tool, or a name -> schema dict)",
    ),
    "--policy": ((Policy,), "a decisions.Policy"),
    "--output": ((type, dict, Schema, VersionedSchema), "a Pydantic model, a JSON Schema dict or a decisions.Schema"),
}


def _load_object(spec: str | None, option: str) -> Any:
    """``MODULE:OBJ`` imported (the current directory first on the path, as
    ``python -m`` has it) and checked for its type: a usage error otherwise."""
    if spec is None:
        return None
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{option} takes MODULE:OBJ, not {spec!r}")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"{option}: cannot import {module_name!r}: {error}") from error
    except Exception as error:  # the module itself failed: still a problem with the command line's input
        raise UsageError(f"{option}: importing {module_name!r} failed: {type(error).__name__}: {error}") from error
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{option}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    kinds, wanted = _EXPECTED[option]
    if not any(isinstance(obj, kind) for kind in kinds):  # (no narrowing: obj stays Any)
        raise UsageError(f"{option}: {spec} is of type {type(obj).__name__}, not {wanted}")
    if option == "--tools":
        try:
            return ToolRegistry.of(obj)
        except (TypeError, ValueError) as error:
            raise UsageError(f"{option}: {spec} is not a usable tool registry: {error}") from error
    return obj


#: The most an input may hold: the largest the default limits let any input be
#: (a stream), read no further so a huge file or device is refused before it is held.
_MAX_INPUT: Final = max(DEFAULT_LIMITS.max_stream_bytes, DEFAULT_LIMITS.max_response_bytes)


def _read(file: str) -> bytes:
    """The bytes of ``file`` (``-``: stdin), at most :data:`_MAX_INPUT`; a
    UsageError for anything but a readable regular file within that bound
    (a FIFO, socket or device is never waited on nor read without end)."""
    if file == "-":
        data = sys.stdin.buffer.read(_MAX_INPUT + 1)
    else:
        try:
            fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as error:
            raise UsageError(f"cannot read {file}: {error.strerror}") from error
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
                raise UsageError(f"cannot read {file}: {what}")
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(_MAX_INPUT + 1)
        except OSError as error:
            raise UsageError(f"cannot read {file}: {error.strerror}") from error
        finally:
            os.close(fd)
    if len(data) > _MAX_INPUT:
        raise UsageError(f"cannot read {file}: larger than {_MAX_INPUT} bytes, more than any input may hold")
    return data


def _inspect(args: argparse.Namespace, out: TextIO) -> int:
    tools = _load_object(args.tools, "--tools")
    output = _load_object(args.output, "--output")
    policy = _load_object(args.policy, "--policy")
    if args.file is None and args.html is not None:
        raise UsageError("--html needs FILE: one page per recording")
    if args.file is None:
        report = run_examples()
        if args.json:
            json.dump(dict(report, shape_version=JSON_SHAPE_VERSION), out, indent=2, ensure_ascii=False)
            out.write("\n")
        else:
            for example in report["examples"]:
                out.write(f"## {example['name']}: {example['title']}\n")
                out.write(
                    f"   expected: {example['expected']}  -> {'ok' if example['as_expected'] else 'UNEXPECTED'}\n"
                )
                render(example["result"], out)
            matched = sum(1 for example in report["examples"] if example["as_expected"])
            out.write(
                f"{matched}/{len(report['examples'])} examples gave the outcome they were recorded to show "
                f"(backend {report['backend']}).\n"
            )
        return EXIT_DECISION if report["all_as_expected"] else EXIT_FAILURE
    data = _read(args.file)
    result = inspect_bytes(
        data,
        provider=args.provider,
        tools=tools,
        output=output,
        policy=policy,
        source="<stdin>" if args.file == "-" else args.file,
        accept_unterminated=args.accept_unterminated,
    )
    if args.html is not None:
        try:
            Path(args.html).write_text(render_html(result, data), encoding="utf-8")
        except OSError as error:
            raise UsageError(f"cannot write {args.html}: {error.strerror}") from error
    if args.json:
        json.dump(dict(result, shape_version=JSON_SHAPE_VERSION), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        render(result, out)
        if args.html is not None:
            out.write(f"wrote {args.html}\n")
    code: int = result["exit_code"]
    return code


def _bench(args: argparse.Namespace, out: TextIO) -> int:
    report = run_bench(quick=args.quick)
    if args.json:
        json.dump(report, out, indent=2)
        out.write("\n")
    else:
        render_bench(report, out)
    return EXIT_DECISION


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (a :class:`UsageError`), not usage text and an exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="decisions",
        description="Turn recorded LLM provider output into a typed decision or a typed error.",
        epilog="Exit codes: 0 decision, 1 typed failure, 2 usage error.",
    )
    sub = parser.add_subparsers(dest="command")
    inspect = sub.add_parser("inspect", help="run the chain over a recording (or the bundled examples)")
    inspect.add_argument("file", nargs="?", help="raw SSE, JSON lines, a whole JSON body, or - for stdin")
    inspect.add_argument("--provider", default="auto", choices=_PROVIDER_CHOICES)
    inspect.add_argument("--tools", metavar="MODULE:OBJ", help="a decisions.ToolRegistry to decide against")
    inspect.add_argument(
        "--output", metavar="MODULE:OBJ", help="the final answer's schema (Pydantic model or JSON Schema)"
    )
    inspect.add_argument("--policy", metavar="MODULE:OBJ", help="a decisions.Policy for the calls")
    inspect.add_argument("--json", action="store_true", help="print the stable machine-readable shape")
    inspect.add_argument(
        "--accept-unterminated",
        action="store_true",
        help="read an SSE file that lacks the blank line closing its last event as if it had it",
    )
    inspect.add_argument(
        "--html", metavar="OUT", help="also write one self-contained HTML page of the recording to OUT"
    )
    bench = sub.add_parser("bench", help="parse and assembly timings on this machine, as ratios")
    bench.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    bench.add_argument("--json", action="store_true", help="print the figures as JSON")
    _ledger_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the console script and ``python -m decisions``."""
    stream = out if out is not None else sys.stdout
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        arguments = ["inspect"]
    parser = build_parser()
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exit_:  # --help
        return EXIT_USAGE if exit_.code not in (0, None) else EXIT_DECISION
    except UsageError as error:
        sys.stderr.write(f"decisions: {error}\n")
        return EXIT_USAGE
    try:
        if args.command == "bench":
            return _bench(args, stream)
        if args.command == "ledger":
            return _ledger_cli.run(args, stream)
        return _inspect(args, stream)
    except UsageError as error:
        sys.stderr.write(f"decisions: {error}\n")
        return EXIT_USAGE
