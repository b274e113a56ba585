"""Mutation testing of the guard modules (``make mutation``).

Each module runs on its own, under the pure backend (``DECISIONS_PURE=1``),
against its own test files only, with mutmut on a copy of the tree (mutmut
wants the package at the top of the tree it mutates; ours lives under
``python/``). The copy is ``.mutation/<module>/``; mutmut's report and the
mutated sources stay there for ``mutmut show`` / ``mutmut browse``.

The score counts the mutants that change behaviour: a mutant that differs from
the original only inside string literals (a message, a hint's wording) is
counted apart, and so is a mutant listed in ``scripts/mutation-equivalent.txt``
(its name, the fingerprint of its change, then ``#`` and one line of why no
test can tell it apart). A timeout counts as killed (the mutant hangs where the
original does not); "no tests" counts as survived. Exit status 1 if a module is
under its bar, or if a listed mutant is killed (it was not equivalent).

Mutant names are numbered within a function, so they shift when the function
changes. The fingerprint (the function's name and the lines the mutant changes,
hashed; ``--survivors`` prints it beside each name) keeps a listed entry on the
change it was written for: if the named mutant now makes another change, the
entry follows its fingerprint to the mutant that makes it (reported as moved,
so the list can be updated); if no mutant makes it any more, the entry is
reported as stale and counts for nothing. Neither fails the run.

    python scripts/mutation.py [module ...]   # default: every module, guards first
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENT = ROOT / "scripts" / "mutation-equivalent.txt"


@dataclass(frozen=True)
class Module:
    """A module under mutation, its own test files, and the bar it must reach."""

    path: str  # inside python/
    tests: tuple[str, ...]  # inside tests/; tests/test_mutation_<name>*.py are added
    bar: float  # the share of behaviour-changing, non-equivalent mutants to kill
    #: run under a throwaway PostgreSQL server (``scripts/postgres.sh run``), so the
    #: tests' PostgreSQL half runs too: the module has code only that database reaches
    postgres: bool = False


GUARD = 1.0
OTHER = 0.9
#: The Responses mapper's and its shapes' own test files.
_RESPONSES_TESTS: tuple[str, ...] = (
    "test_provider_openai_responses.py",
    "test_fidelity_responses.py",
    "test_fidelity_bodies.py",
    "test_boundary_heads.py",
    "test_adversarial_terminal.py",
    "test_adversarial_streams.py",
)

MODULES: dict[str, Module] = {
    "policy": Module("decisions/validate/policy.py", ("test_policy.py", "test_adversarial_policy.py"), GUARD),
    "paths": Module(
        "decisions/validate/paths.py",
        ("test_policy.py", "test_adversarial_policy.py", "test_mutation_policy.py"),
        GUARD,
    ),
    "decide": Module(
        "decisions/validate/decide.py",
        (
            "test_decide.py",
            "test_decide_fixtures.py",
            "test_decide_properties.py",
            "test_decide_plain.py",
            "test_responses_call_kinds.py",
            "test_adversarial_items.py",
            "test_adversarial_policy.py",
        ),
        GUARD,
    ),
    "textcalls": Module("decisions/request/textcalls.py", ("test_textcalls.py", "test_adversarial_text.py"), GUARD),
    "envelope": Module(
        "decisions/_pure/envelope.py",
        (
            "test_adversarial_boundary.py",
            "test_pure_unkeyed.py",
            "test_pure_fast_paths.py",
            "test_pure_number_screen.py",
        ),
        GUARD,
    ),
    "openai_chat": Module(
        "decisions/_pure/providers/openai_chat.py",
        (
            "test_provider_openai_chat.py",
            "test_fidelity_bodies.py",
            "test_adversarial_terminal.py",
            "test_adversarial_calls.py",
            "test_adversarial_hunt.py",
            "test_pure_fast_paths.py",
            "test_pure_unkeyed.py",
        ),
        GUARD,
    ),
    "anthropic": Module(
        "decisions/_pure/providers/anthropic.py",
        (
            "test_provider_anthropic.py",
            "test_fidelity_bodies.py",
            "test_adversarial_terminal.py",
            "test_adversarial_calls.py",
            "test_pure_fast_paths.py",
        ),
        GUARD,
    ),
    "gemini": Module(
        "decisions/_pure/providers/gemini.py",
        (
            "test_provider_gemini.py",
            "test_fidelity_gemini.py",
            "test_fidelity_bodies.py",
            "test_adversarial_terminal.py",
            "test_adversarial_hunt.py",
        ),
        GUARD,
    ),
    "openai_responses": Module(
        "decisions/_pure/providers/openai_responses.py",
        _RESPONSES_TESTS,
        GUARD,
    ),
    "responses_shapes": Module(
        "decisions/_pure/providers/_responses_shapes.py",
        (*_RESPONSES_TESTS, "test_mutation_openai_responses.py"),
        GUARD,
    ),
    "ledger_completion": Module(
        "decisions/ledger/completion.py",
        ("test_ledger.py", "test_ledger_checks.py", "test_adversarial_ledger.py"),
        GUARD,
    ),
    "ledger_claims": Module(
        "decisions/ledger/claims.py",
        (
            "test_ledger.py",
            "test_adversarial_ledger.py",
            "test_adversarial_ledger_claims.py",
            "test_adversarial_ledger_results.py",
        ),
        GUARD,
        postgres=True,
    ),
    "ledger_results": Module(
        "decisions/ledger/results.py",
        ("test_ledger.py", "test_ledger_checks.py", "test_adversarial_ledger_results.py"),
        GUARD,
    ),
    "ledger_core": Module(
        "decisions/ledger/core.py",
        (
            "test_ledger.py",
            "test_adversarial_ledger.py",
            "test_adversarial_ledger_claims.py",
            "test_adversarial_ledger_results.py",
            "test_mutation_ledger_claims.py",
        ),
        GUARD,
        postgres=True,
    ),
    "pipeline": Module(
        "decisions/_pure/pipeline.py",
        (
            "test_pure_fast_paths.py",
            "test_pure_unkeyed.py",
            "test_assembler.py",
            "test_adversarial_streams.py",
            "test_adversarial_terminal.py",
            "test_adversarial_modes.py",
            "test_adversarial_parser.py",
            "test_provider_openai_chat.py",
            "test_provider_anthropic.py",
            "test_provider_gemini.py",
            "test_provider_openai_responses.py",
            "test_boundary_heads.py",
            "test_fidelity_bodies.py",
            "test_fidelity_responses.py",
            "test_detect.py",
            "test_wire.py",
            "test_capabilities.py",
        ),
        GUARD,
    ),
    "integrations": Module(
        "decisions/integrations.py",
        ("test_integrations.py", "test_adversarial_detect.py", "test_adversarial_modes.py"),
        GUARD,
    ),
    "detect": Module(
        "decisions/detect.py", ("test_detect.py", "test_adversarial_detect.py", "test_adversarial_modes.py"), GUARD
    ),
    "conversion": Module(
        "decisions/request/conversion.py",
        ("test_requests.py", "test_adversarial_requests.py", "test_adversarial_unions.py"),
        GUARD,
    ),
    "repair": Module("decisions/recover/repair.py", ("test_repair.py", "test_repair_targets.py"), OTHER),
    "schema": Module("decisions/validate/schema.py", ("test_schema.py", "test_schema_engines.py"), OTHER),
    "schema_issues": Module("decisions/validate/_issues.py", ("test_schema.py", "test_schema_engines.py"), OTHER),
    "schema_shapes": Module("decisions/validate/_shapes.py", ("test_schema.py", "test_schema_engines.py"), OTHER),
    "schema_engines": Module("decisions/validate/_engines.py", ("test_schema.py", "test_schema_engines.py"), OTHER),
    "ecma": Module("decisions/validate/_ecma.py", ("test_schema_patterns.py",), GUARD),
    "shown": Module("decisions/validate/_shown.py", ("test_adversarial_work.py",), GUARD),
    "domain": Module("decisions/validate/domain.py", ("test_domain.py",), OTHER),
    "assemble": Module("decisions/_pure/assemble.py", ("test_assembler.py", "test_fidelity_responses.py"), OTHER),
    "sse": Module("decisions/_pure/sse.py", ("test_sse.py",), OTHER),
    "json": Module(
        "decisions/_pure/json.py", ("test_loads.py", "test_jsontestsuite.py", "test_pure_number_screen.py"), OTHER
    ),
    "jsonexact": Module("decisions/_pure/jsonexact.py", ("test_loads.py", "test_jsontestsuite.py"), OTHER),
}


def test_files(name: str) -> list[str]:
    """The module's own test files, then its mutation test files."""
    own = [f"tests/{t}" for t in MODULES[name].tests]
    extra = sorted(f"tests/{p.name}" for p in (ROOT / "tests").glob(f"test_mutation_{name}*.py"))
    return own + extra


def prepare(name: str) -> Path:
    """A fresh copy of the package (without the native build) and the tests,
    with mutmut's and pytest's configuration, in ``.mutation/<name>``."""
    work = WORK / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")
    shutil.copytree(ROOT / "python" / "decisions", work / "decisions", ignore=skip)
    shutil.copytree(ROOT / "tests", work / "tests", ignore=skip)
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    config = {
        "source_paths": ["decisions"],
        "only_mutate": [MODULES[name].path],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:randomly"],
        "pytest_add_cli_args_test_selection": test_files(name),
        "use_git_change_detection": False,
    }
    lines = ["[tool.mutmut]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in config.items()]
    lines += ["", "[tool.pytest.ini_options]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in pytest_options.items()]
    (work / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return work


def _blank_strings(tree: ast.AST) -> str:
    """The tree's dump with every string constant replaced by one value."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree, include_attributes=False)


def _functions(source: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function definition in the mutated file, by name (methods too)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
    return found


def _original_of(key: str) -> str:
    return key.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Module:
    copy = ast.parse(ast.unparse(fn))
    node = copy.body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    node.name = "f"
    return copy


@dataclass(frozen=True)
class Listed:
    """One line of the equivalents list."""

    name: str
    fingerprint: str | None  # None: an old entry, trusted by name only
    why: str


def equivalents() -> list[Listed]:
    """The mutants listed as equivalent, in file order."""
    found: list[Listed] = []
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                head, _, why = line.partition("#")
                name, *rest = head.split()
                found.append(Listed(name, rest[0] if rest else None, why.strip()))
    return found


def fingerprint(key: str, mutant: ast.Module, original: ast.Module) -> str:
    """The change a mutant makes, independent of its number: a short hash of its
    function's name and the lines it removes and adds."""
    function = key.rsplit("__mutmut_", 1)[0]
    changed = [
        line
        for line in difflib.unified_diff(
            ast.unparse(original).splitlines(), ast.unparse(mutant).splitlines(), lineterm="", n=0
        )
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return hashlib.sha256("\n".join([function, *changed]).encode()).hexdigest()[:10]


def bind(listed: list[Listed], prefix: str, prints: dict[str, str]) -> tuple[set[str], list[str]]:
    """The module's mutants the list names as equivalent, and the notes to print
    (entries that moved to another number, entries that match nothing)."""
    by_print: dict[str, list[str]] = {}
    for full, fp in prints.items():
        by_print.setdefault(fp, []).append(full)
    bound: set[str] = set()
    notes: list[str] = []
    for entry in listed:
        if not entry.name.startswith(prefix):
            continue
        if entry.fingerprint is None:
            if entry.name in prints:
                bound.add(entry.name)
                notes.append(f"unpinned (no fingerprint; now {prints[entry.name]}): {entry.name}")
            else:
                notes.append(f"stale (no such mutant): {entry.name}")
        elif prints.get(entry.name) == entry.fingerprint:
            bound.add(entry.name)
        elif len(by_print.get(entry.fingerprint, [])) == 1:
            moved = by_print[entry.fingerprint][0]
            bound.add(moved)
            notes.append(f"moved: {entry.name} is now {moved}")
        else:
            notes.append(f"stale (its change {entry.fingerprint} is not made by one mutant): {entry.name}")
    return bound, notes


def report(name: str, seconds: float, show: bool) -> dict[str, object]:
    """Read mutmut's results, classify each mutant, print the row and the survivors."""
    from mutmut.stats import status_by_exit_code  # installed by `make mutation`

    work = WORK / name
    mutated = work / "mutants" / MODULES[name].path
    meta = json.loads(Path(str(mutated) + ".meta").read_text())
    functions = _functions(mutated.read_text())
    prefix = MODULES[name].path.removesuffix(".py").replace("/", ".") + "."
    bodies = {}
    prints = {}
    for full in meta["exit_code_by_key"]:
        key = full.removeprefix(prefix)
        bodies[full] = (_body(functions[key]), _body(functions[_original_of(key)]))
        prints[full] = fingerprint(key, *bodies[full])
    listed, notes = bind(equivalents(), prefix, prints)
    rows: dict[str, list[str]] = {
        "killed": [],
        "survived": [],
        "string": [],
        "string_killed": [],
        "equivalent": [],
        "unchecked": [],
    }
    wrongly_listed = []
    for full, code in sorted(meta["exit_code_by_key"].items()):
        status = status_by_exit_code[code]
        if status in ("not checked", "check was interrupted by user"):  # a run stopped early, or still going
            rows["unchecked"].append(full)
            continue
        killed = status in ("killed", "timeout", "segfault")
        mutant, original = bodies[full]
        string_only = _blank_strings(mutant) == _blank_strings(original)
        if full in listed:
            rows["equivalent"].append(full)
            if killed:
                wrongly_listed.append(full)
        elif string_only:
            rows["string_killed" if killed else "string"].append(full)
        else:
            rows["killed" if killed else "survived"].append(full)
        if show and not killed and not string_only and full not in listed:
            diff = difflib.unified_diff(
                ast.unparse(original).splitlines(),
                ast.unparse(mutant).splitlines(),
                lineterm="",
                n=1,
            )
            print(f"--- {full} {prints[full]} ({status})")
            print("\n".join(list(diff)[2:]))
    behaviour = len(rows["killed"]) + len(rows["survived"])
    score = len(rows["killed"]) / behaviour if behaviour else 1.0
    row: dict[str, object] = {
        "module": name,
        "mutants": len(meta["exit_code_by_key"]),
        "killed": len(rows["killed"]),
        "survived": len(rows["survived"]),
        "string_only": len(rows["string"]) + len(rows["string_killed"]),
        "string_only_survived": len(rows["string"]),
        "equivalent": len(rows["equivalent"]),
        "unchecked": len(rows["unchecked"]),
        "score": round(score, 4),
        "bar": MODULES[name].bar,
        "seconds": round(seconds),
        "equivalent_but_killed": wrongly_listed,
        "equivalent_notes": notes,
    }
    (work / "summary.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


#: Collects the tests of the files given, then asks for each by its id, in
#: one process as mutmut does (its runs call pytest in-process).
_ASK_BY_ID = """
import sys, pytest
class Ids:
    ids = []
    def pytest_collection_modifyitems(self, items):
        self.ids += [item.nodeid for item in items]
ids = Ids()
if pytest.main(["--collect-only", "-q", "-p", "no:randomly", *sys.argv[1:]], plugins=[ids]) != 0:
    sys.exit("the tests were not collected")
sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:randomly", *ids.ids]))
"""


def check_test_ids(name: str, env: dict[str, str]) -> None:
    """Exit unless every test of the module's selection can be asked for by
    its id: mutmut runs a mutant's tests by id, and pytest's error for an id
    it cannot find (an id holding a backslash) counts as a kill."""
    found = subprocess.run(
        [sys.executable, "-c", _ASK_BY_ID, *test_files(name)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if found.returncode != 0:
        lost = [line for line in (found.stdout + found.stderr).splitlines() if "not found" in line]
        sys.exit(f"{name}: tests that cannot be run by their id (give them ids without backslashes): {lost[:5]}")


def run(name: str) -> float:
    """mutmut over one module, one worker, pure backend (and a PostgreSQL
    server when the module asks for one); the wall time."""
    # the `mutation` hypothesis profile (tests/conftest.py): few examples, derandomized
    env = dict(os.environ, DECISIONS_PURE="1", PYTHONPATH="", HYPOTHESIS_PROFILE="mutation")
    env.pop("DECISIONS_REQUIRE_NATIVE", None)
    check_test_ids(name, env)
    work = prepare(name)
    mutmut = Path(sys.executable).parent / "mutmut"
    start = time.monotonic()
    command = [str(mutmut), "run", "--max-children", "1"]
    if MODULES[name].postgres:
        command = [str(ROOT / "scripts" / "postgres.sh"), "run", *command]
    subprocess.run(command, cwd=work, env=env, check=True)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(MODULES)} (default: all, guards first)")
    parser.add_argument(
        "--report-only", action="store_true", help="re-read the last run's results (a run still going: so far)"
    )
    parser.add_argument("--survivors", action="store_true", help="print each surviving mutant's diff")
    args = parser.parse_args()
    unknown = set(args.modules) - set(MODULES)
    if unknown:
        parser.error(f"unknown modules: {sorted(unknown)}")
    rows = []
    for name in args.modules or list(MODULES):
        if args.report_only:
            summary = WORK / name / "summary.json"
            seconds = float(json.loads(summary.read_text())["seconds"]) if summary.exists() else 0.0
        else:
            seconds = run(name)
        rows.append(report(name, seconds, args.survivors))
    print("| module | mutants | killed | survived | string-only (survived) | equivalent | score | time |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    for r in rows:
        print(
            f"| {r['module']} | {r['mutants']} | {r['killed']} | {r['survived']} | "
            f"{r['string_only']} ({r['string_only_survived']}) | {r['equivalent']} | "
            f"{float(r['score']):.1%} | {r['seconds']} s |"  # type: ignore[arg-type]
        )
        if r.get("unchecked"):
            print(f"  partial: {r['unchecked']} mutants not checked (the run did not finish); the score is of the rest")
            failed = True
        for note in r.get("equivalent_notes", []):  # type: ignore[attr-defined]
            print(f"  equivalents list: {note}")
        if r["equivalent_but_killed"]:
            print(f"  listed as equivalent but killed: {r['equivalent_but_killed']}")
            failed = True
        failed = failed or float(r["score"]) < float(r["bar"])  # type: ignore[arg-type]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
