"""The policy layer: a call that is well-formed and known may still not be
allowed.

:class:`Policy` says which tools may run, which path arguments read or write
where (scopes under one workspace root), which calls wait for an approval,
and a state check the application runs last. A :class:`RunState` (such as
:class:`decisions.Run`) carries what changes during a run: cancellation,
and the call ids already decided (a replayed call id is decided once only).

Paths are checked *after* resolution. A path argument is refused as
``PATH_INVALID`` when it is not a string, is empty, holds a NUL or another
control character (a trailing newline, an escape sequence), a backslash,
a ``~`` home form, a Windows drive (``C:``) or UNC (``//host``) form, or is
longer than 4096 bytes (``PATH_MAX``: resolving costs the square of the length); else it
is joined to the workspace root, every symlink and ``..`` is resolved, and the
result must lie inside the root (component-wise: ``/ws-old`` is not inside
``/ws``) or it is ``PATH_OUTSIDE_WORKSPACE``; then inside one of the scopes
for its access (``read`` or ``write``) or it is ``SCOPE_DENIED``. An absolute
path is accepted only if it resolves inside the workspace. The resolved path
is recorded on the verdict: the executor should use it, not the raw argument.
(A check cannot close the race with a process that changes the file system
between the check and the use: run tools in a sandbox as well.)

Path rules check the values the executor receives: a call's *validated*
arguments (the tool model's fields, by field name, whatever alias carried
them, defaults and validators applied), and the raw arguments only for a
tool with no schema. A rule names a field by a *selector*: a field name
(``path``), ``.`` into a nested object (``options.root``), ``[*]`` for every
item of an array (``files[*].path``, ``edits[*].file``); a name is any run of
characters other than ``.``, ``[``, ``]`` and whitespace. A value that is an
array where the selector ends is checked item by item. A selector that names
something the tool's schema does not define is a configuration error
(ValueError), raised when the policy first meets the registry. A path left
empty (absent, or ``null``) is not checked, and the verdict lists it in
``empty_paths``. Scopes, like the root, are resolved once, when the policy
is built.

Tool names are matched exactly. Before any rule is looked up, a call whose
name is a look-alike of a ruled or registered name (case, a ``functions.``
prefix, Unicode look-alikes) is ``AMBIGUOUS_TOOL_NAME``, and a name holding
whitespace or control characters ``INVALID_TOOL_NAME`` (both
:class:`~decisions.errors.DomainError`, see :mod:`decisions.validate.domain`), so no
spelling of a tool slips past its rules.
"""

from __future__ import annotations

import copy
import os
import weakref
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence, TypeVar

from ..errors import PolicyError, at_call, in_batch, json_path
from .decision import _EMPTY, BatchMode, CallVerdict, ToolCall, new_tool_call, new_verdict
from .domain import ToolNames, ToolRegistry
from .paths import Access, Scopes, Step, _reject, parse_selector, resolve_in, resolve_path, resolve_scope, select_paths

__all__ = [
    "Access",
    "PathArg",
    "ToolRule",
    "Policy",
    "RunState",
    "resolve_path",
    "apply_policy",
]

_WHOLE_WORKSPACE = ("",)
#: A value of a mapping :func:`_plain_keys` copies.
_V = TypeVar("_V")


@dataclass(frozen=True, slots=True)
class PathArg:
    """A path argument: its access, and (optionally) scopes of its own that
    replace the tool's or the policy's for this argument."""

    access: Access
    scopes: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRule:
    """Policy for one tool. ``paths`` maps a field selector (``path``,
    ``files[*].path``; see the module docstring) to its access
    (``"read"``/``"write"`` or a :class:`PathArg`); the value it selects may be
    a string or an array of strings. ``read_scopes``/``write_scopes`` replace
    the policy's for this tool. ``approval`` True (or a reason) makes every
    call of the tool wait for an approval. ``allowed`` False denies the tool."""

    paths: Mapping[str, Access | PathArg] = field(default_factory=dict)
    read_scopes: tuple[str, ...] | None = None
    write_scopes: tuple[str, ...] | None = None
    approval: bool | str = False
    allowed: bool = True

    def __post_init__(self) -> None:
        # read by their truth, "false" would allow a tool and 0 excuse it from approval: only bools do
        if type(self.allowed) is not bool:
            raise ValueError(f"ToolRule.allowed must be a bool, not {type(self.allowed).__name__}")
        if type(self.approval) is not bool and not isinstance(self.approval, str):
            raise ValueError(f"ToolRule.approval must be a bool or a reason (str), not {type(self.approval).__name__}")
        if type(self.approval) is not bool and type(self.approval) is not str:
            object.__setattr__(self, "approval", str.__str__(self.approval))
        # the rule keeps its own read-only copy: the paths shown are the paths a policy enforces
        object.__setattr__(self, "paths", MappingProxyType(_plain_keys(self.paths, "path rules for")))


def _plain_keys(mapping: Mapping[str, _V], what: str) -> dict[str, _V]:
    """A copy of ``mapping`` whose keys of a str subclass are the plain str
    each holds (looked up by a plain name, a key hashing or comparing
    otherwise would never be found); ValueError for two keys holding one
    str."""
    plain: dict[str, _V] = {}
    for key, value in dict(mapping).items():
        if isinstance(key, str):
            key = str.__str__(key)
            if key in plain:
                raise ValueError(f"two {what} {key!r}")
        plain[key] = value
    return plain


#: ``state_check(call)`` returns None or True to allow, False or a reason to
#: refuse; if it raises or returns anything else, the call is refused. It
#: (and ``approval``) is given a copy of the call: what it changes there is
#: not what the decision carries.
StateCheck = Callable[[ToolCall], "bool | str | None"]
#: ``approval(call)`` returns a reason when the call needs an approval, else
#: None; if it raises, the call needs an approval.
ApprovalCheck = Callable[[ToolCall], "str | None"]


@dataclass(frozen=True, slots=True)
class _PathPlan:
    """One path rule, compiled: its selector, steps, access, resolved
    scopes, and for a selector that is one field name, the name and its
    JSON path suffix (``.path``)."""

    selector: str
    steps: tuple[Step, ...]
    access: Access
    scopes: Scopes
    field: tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class _Plan:
    """A policy compiled against one registry (or none): the names it knows,
    and each ruled tool's path rules."""

    names: ToolNames
    paths: Mapping[str, tuple[_PathPlan, ...]]
    root: Scopes | None
    version: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """What may run. ``workspace`` is the root every path argument must stay
    in (resolved once, here; required when any tool has path arguments).
    ``read_scopes``/``write_scopes`` are paths relative to it (``""`` is the
    whole workspace; default: read anywhere inside, write nowhere).
    ``tools`` holds per-tool rules; a tool without a rule is allowed when
    ``default`` is ``"allow"``, denied (``TOOL_DENIED``) when ``"deny"``.
    ``batch`` says whether one bad call blocks the others (see
    :data:`~decisions.validate.decision.BatchMode`)."""

    workspace: str | os.PathLike[str] | None = None
    read_scopes: tuple[str, ...] = _WHOLE_WORKSPACE
    write_scopes: tuple[str, ...] = ()
    tools: Mapping[str, ToolRule] = field(default_factory=dict)
    default: Literal["allow", "deny"] = "allow"
    approval: ApprovalCheck | None = None
    state_check: StateCheck | None = None
    batch: BatchMode = "all_or_nothing"
    root: str | None = field(init=False, default=None)
    _bare: _Plan = field(init=False, repr=False, compare=False)
    _plans: weakref.WeakKeyDictionary[ToolRegistry, _Plan] = field(init=False, repr=False, compare=False)
    #: The registry last planned for (weakly) and its plan: a decide loop meets one registry.
    _last: tuple[weakref.ref[ToolRegistry], _Plan] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for text in ("default", "batch"):  # a str subclass is kept as the str it holds
            value = getattr(self, text)
            if isinstance(value, str) and type(value) is not str:
                object.__setattr__(self, text, str.__str__(value))
        if self.default not in ("allow", "deny"):
            raise ValueError("Policy.default must be 'allow' or 'deny'")
        if self.batch not in ("all_or_nothing", "per_call"):
            raise ValueError("Policy.batch must be 'all_or_nothing' or 'per_call'")
        object.__setattr__(self, "tools", MappingProxyType(_plain_keys(self.tools, "rules for")))
        for scopes in self._all_scopes():  # a string is an iterable of one-letter scopes: never what was meant
            if isinstance(scopes, str) or not all(isinstance(scope, str) for scope in scopes):
                raise ValueError(f"scopes must be a tuple of paths, not {scopes!r}")
        root = None
        if self.workspace is not None:
            root = os.path.realpath(os.fspath(self.workspace))
            if not os.path.isdir(root):
                raise ValueError(f"workspace {os.fspath(self.workspace)!r} is not a directory")
        object.__setattr__(self, "root", root)
        needs_root = any(rule.paths for rule in self.tools.values())
        if needs_root and root is None:
            raise ValueError("a Policy with path arguments needs a workspace")
        if root is not None:
            for scopes in self._all_scopes():
                for scope in scopes:
                    resolve_scope(root, scope)
        paths: dict[str, tuple[_PathPlan, ...]] = {}
        for name, rule in self.tools.items():
            plans = []
            for selector, access in rule.paths.items():
                arg = access if isinstance(access, PathArg) else PathArg(access)
                if arg.access not in ("read", "write"):
                    raise ValueError(f"the access of {name!r} {selector!r} must be 'read' or 'write'")
                assert root is not None  # checked above: path rules need a workspace
                scopes = tuple(resolve_scope(root, s) for s in self.scopes(rule, arg))
                steps = parse_selector(selector)
                first = steps[0]
                one = (first, json_path((first,), root="")) if len(steps) == 1 and first is not None else None
                plans.append(_PathPlan(selector, steps, arg.access, Scopes(scopes), one))
            if plans:
                paths[name] = tuple(plans)
        bare = _Plan(ToolNames(self.tools), MappingProxyType(paths), None if root is None else Scopes((root,)))
        object.__setattr__(self, "_bare", bare)
        object.__setattr__(self, "_plans", weakref.WeakKeyDictionary())
        object.__setattr__(self, "_last", None)

    def _all_scopes(self) -> list[tuple[str, ...]]:
        out = [self.read_scopes, self.write_scopes]
        for rule in self.tools.values():
            out += [s for s in (rule.read_scopes, rule.write_scopes) if s is not None]
            out += [a.scopes for a in rule.paths.values() if isinstance(a, PathArg) and a.scopes is not None]
        return out

    def plan(self, registry: ToolRegistry | None) -> _Plan:
        """This policy compiled against ``registry`` (once per registry and
        registration; None: the rules alone). ValueError when a rule names a
        look-alike of a registered tool, or a field its schema does not define."""
        if registry is None:
            return self._bare
        last = self._last
        if last is not None and last[0]() is registry and last[1].version == registry.version:
            return last[1]
        cached = self._plans.get(registry)
        if cached is not None and cached.version == registry.version:
            object.__setattr__(self, "_last", (weakref.ref(registry), cached))
            return cached
        names = ToolNames(registry.names)
        for name in self.tools:
            if name not in registry:
                known = names.look_alike(name)
                if known is not None:
                    raise ValueError(f"the policy has a rule for {name!r}, but the tool is registered as {known!r}")
                names.add(name)
        for name, plans in self._bare.paths.items():
            tool = registry.get(name)
            if tool is not None and tool.kind == "custom":
                raise ValueError(f"the policy has path rules for {name!r}, a custom tool whose input is text")
            if tool is None or tool.schema is None:
                continue
            for path_plan in plans:
                try:
                    tool.schema.check_selector(path_plan.steps)
                except ValueError as error:
                    raise ValueError(
                        f"the policy's path rule {path_plan.selector!r} for {name!r} does not fit the tool: {error}"
                    ) from None
        compiled = _Plan(names, self._bare.paths, self._bare.root, registry.version)
        self._plans[registry] = compiled
        object.__setattr__(self, "_last", (weakref.ref(registry), compiled))
        return compiled

    def scopes(self, rule: ToolRule | None, arg: PathArg) -> tuple[str, ...]:
        """The scopes that apply to one path argument."""
        if arg.scopes is not None:
            return arg.scopes
        if rule is not None:
            own = rule.read_scopes if arg.access == "read" else rule.write_scopes
            if own is not None:
                return own
        return self.read_scopes if arg.access == "read" else self.write_scopes


class RunState(Protocol):
    """What policy consults about the run a decision belongs to (see
    :class:`decisions.Run`, which keeps it in the execution ledger)."""

    @property
    def cancelled(self) -> bool: ...
    def decided(self, call_id: str) -> bool: ...
    def claim(self, call_ids: Sequence[str]) -> tuple[str, ...]: ...


def _cancelled() -> PolicyError:
    return PolicyError("RUN_CANCELLED", path="$", hint="the run was cancelled; nothing may execute")


def _check_call(
    call: ToolCall,
    index: int,
    policy: Policy,
    plan: _Plan,
    registry: ToolRegistry | None,
    run: RunState | None,
    repaired: bool,
) -> CallVerdict:
    """One call's verdict; raises the PolicyError that denies it."""
    if run is not None and run.decided(call.call_id):
        raise _reject(
            "CALL_ALREADY_DECIDED",
            f"call {call.call_id!r} was already decided",
            path=f"$.calls[{index}].call_id",
            expected="a new call id",
            hint="this call was already handled; do not repeat it",
        )
    name = call.name
    rule = policy.tools.get(name)
    if (rule is None and policy.default == "deny") or (rule is not None and not rule.allowed):
        raise _reject(
            "TOOL_DENIED",
            f"policy does not allow the tool {name!r}",
            path=f"$.calls[{index}].name",
            expected="an allowed tool",
            hint="this tool is not allowed here",
        )
    if repaired:
        tool = registry.get(name) if registry is not None else None
        if tool is None or tool.side_effects:
            raise _reject(
                "REPAIRED_CALL_REFUSED",
                f"a repaired call may not run the side-effecting tool {name!r}",
                path=f"$.calls[{index}].name",
                expected="a read-only tool",
                hint="send the call again without repair",
            )
    paths: Mapping[str, str] = _EMPTY
    empty_paths: tuple[str, ...] = ()
    path_plans = plan.paths.get(name)
    if path_plans:
        paths, empty_paths = _check_paths(call, index, path_plans, plan.root)
    # the host's checks see a copy: what one of them changes in it is not what the decision carries
    shown = call if policy.state_check is None and policy.approval is None else _copy_of(call)
    if policy.state_check is not None:
        _check_state(shown, index, policy.state_check)
    if (rule is None or not rule.approval) and policy.approval is None:
        return new_verdict(call.call_id, "allowed", None, (), paths, empty_paths, None)
    reasons: list[str] = []
    if rule is not None and rule.approval:
        reasons.append(rule.approval if isinstance(rule.approval, str) else f"{name!r} requires approval")
    if policy.approval is not None:
        approval_reason = _approval_reason(policy.approval, shown)
        if approval_reason is not None:
            reasons.append(approval_reason)
    status: Literal["needs_approval", "allowed"] = "needs_approval" if reasons else "allowed"
    return new_verdict(call.call_id, status, None, tuple(reasons), paths, empty_paths, None)


def _check_paths(
    call: ToolCall, index: int, path_plans: tuple[_PathPlan, ...], root: Scopes | None
) -> tuple[Mapping[str, str], tuple[str, ...]]:
    """The resolved path arguments of one call (JSON path -> resolved path)
    and the JSON paths of those left empty; raises the PolicyError of the
    first path that may not be used."""
    assert root is not None  # Policy.__post_init__ requires it
    base = f"$.calls[{index}].arguments"
    value = call.arguments if call.validated is None else call.validated
    paths: dict[str, str] = {}
    empty_paths: list[str] = []
    for path_plan in path_plans:
        found, empty = select_paths(value, path_plan.steps, path_plan.field, base, index)
        empty_paths.extend(empty)
        for where, raw in found:
            target = resolve_in(root, raw, where)
            if not path_plan.scopes.holds(target):
                raise _reject(
                    "SCOPE_DENIED",
                    f"{call.name!r} may not {path_plan.access} {os.path.relpath(target, root.dirs[0])!r}",
                    path=where,
                    expected=f"a path this tool may {path_plan.access}",
                    hint=f"this tool may not {path_plan.access} there",
                )
            paths[where] = target
    return (MappingProxyType(paths) if paths else _EMPTY), tuple(empty_paths)


def _json_copy(value: Any) -> Any:
    """A copy of a JSON value that shares no dict or list with it (any depth)."""
    if type(value) is not dict and type(value) is not list:
        return value
    root = value.copy()
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        for key in node.keys() if type(node) is dict else range(len(node)):
            child = node[key]
            if type(child) is dict or type(child) is list:
                child = node[key] = child.copy()
                stack.append(child)
    return root


def _copy_of(call: ToolCall) -> ToolCall:
    """A copy of ``call`` that shares nothing mutable with it: its arguments
    (JSON) copied, its validated value (a Pydantic model) deep-copied, or
    the copied arguments where they are one object."""
    arguments = _json_copy(call.arguments)
    validated = call.validated
    if validated is call.arguments:
        validated = arguments
    elif validated is not None:
        validated = copy.deepcopy(validated)
    return new_tool_call(
        call.call_id,
        call.name,
        arguments,
        call.index,
        call.item_id,
        call.call_id_generated,
        call.tool_version,
        validated,
        call.call_kind,
    )


def _approval_reason(approval: ApprovalCheck, call: ToolCall) -> str | None:
    """The reason ``approval`` gives for ``call`` as plain text, or None; a
    check that raises, also while its answer is read (``__bool__``,
    ``__str__``), asks for a human: fail closed."""
    try:
        outcome = approval(call)
        if isinstance(outcome, str):
            return str.__str__(outcome) or None  # the text itself, not a subclass's overrides
        if not outcome:
            return None
        return str.__str__(str(outcome))  # ``str`` may give a subclass: its text itself
    except Exception as error:  # fail closed: a broken check asks for a human
        return f"the approval check raised {type(error).__name__}"


def _check_state(call: ToolCall, index: int, state_check: StateCheck) -> None:
    """The PolicyError of a call the host's state check refuses (a check
    that raises, or returns anything but None, True, False or a reason,
    refuses too: fail closed)."""
    try:
        outcome = state_check(call)
    except Exception as error:  # fail closed: a broken check refuses
        outcome = f"the state check raised {type(error).__name__}"
    if outcome is not None and outcome is not True:
        if isinstance(outcome, str):
            reason = str.__str__(outcome)  # the text itself, never a subclass's overrides
        elif outcome is False:
            reason = "the state check refused the call"
        else:
            reason = f"the state check returned {type(outcome).__name__}, not None, True, False or a reason"
        raise _reject(
            "STATE_CHECK_FAILED",
            reason,
            path=f"$.calls[{index}]",
            expected="a call the current state allows",
            hint="this action is not possible in the current state",
        )


def apply_policy(
    calls: Sequence[ToolCall],
    policy: Policy,
    *,
    registry: ToolRegistry | None = None,
    run: RunState | None = None,
    repaired: bool = False,
) -> tuple[CallVerdict, ...]:
    """Every call's verdict, in call order.

    A cancelled run raises ``RUN_CANCELLED``. In ``per_call`` mode a denied
    call comes back with status ``denied`` and its error. In
    ``all_or_nothing`` mode a denied call raises its own error, whatever the
    size of the batch (code, path and issues are the call's own; so is
    ``error.code``, for code that branches on it). It names the call
    (``call_index``, ``call_id``, ``tool``) and, in a batch of several,
    ``error.batch`` lists every call of the batch: the denied ones with their
    own codes, the others ``not_run`` with ``BATCH_REJECTED``. Every denied
    call's error names its call the same way in ``per_call`` mode. The call
    ids are recorded in ``run`` only when verdicts are returned.

    Every call's name is checked first, against the policy's rules and the
    registry: a look-alike of a known name raises
    :class:`~decisions.errors.DomainError` ``AMBIGUOUS_TOOL_NAME``, a name
    with whitespace or control characters ``INVALID_TOOL_NAME``.
    """
    plan = policy.plan(registry)
    for index, call in enumerate(calls):
        plan.names.check(call.name, path=f"$.calls[{index}].name")
    return _apply(calls, policy, plan, registry=registry, run=run, repaired=repaired)


def _open(calls: Sequence[ToolCall], policy: Policy, run: RunState | None, repaired: bool) -> bool:
    """Whether every call is allowed as it is, with nothing to check: no run,
    no repair, no host check, default allow and no rule for any call's tool
    (so no path rule either). :func:`_check_call` gives each such call the
    plain ``allowed`` verdict."""
    if run is not None or repaired or policy.default != "allow":
        return False
    if policy.approval is not None or policy.state_check is not None:
        return False
    rules = policy.tools
    if rules:
        for call in calls:
            if call.name in rules:
                return False
    return True


def _allowed(calls: Sequence[ToolCall]) -> tuple[CallVerdict, ...]:
    """The plain ``allowed`` verdict of each call, in order (what the open
    policy gives calls with nothing to check)."""
    verdicts = []
    for call in calls:
        verdicts.append(new_verdict(call.call_id, "allowed", None, (), _EMPTY, (), None))
    return tuple(verdicts)


def _apply(
    calls: Sequence[ToolCall],
    policy: Policy,
    plan: _Plan,
    *,
    registry: ToolRegistry | None,
    run: RunState | None,
    repaired: bool,
) -> tuple[CallVerdict, ...]:
    """:func:`apply_policy` once the names are checked."""
    if run is not None and run.cancelled:
        raise _cancelled()
    ids: Sequence[str] = [c.call_id for c in calls] if len(calls) > 1 else ()
    if ids and len(set(ids)) < len(ids):
        repeated = sorted({c for c in ids if ids.count(c) > 1})
        raise _reject(
            "CALL_ALREADY_DECIDED",
            f"call ids repeat within one response: {repeated}",
            path="$.calls",
            expected="one call per call id",
            hint="give every call its own id",
        )
    if _open(calls, policy, run, repaired):
        return _allowed(calls)
    verdicts: list[CallVerdict] = []
    denied: list[tuple[int, PolicyError]] = []
    for index, call in enumerate(calls):
        try:
            verdicts.append(_check_call(call, index, policy, plan, registry, run, repaired))
        except PolicyError as error:
            at_call(error, index, call.call_id, call.name)
            denied.append((index, error))
            verdicts.append(CallVerdict(call_id=call.call_id, status="denied", error=error))
    if denied and policy.batch == "all_or_nothing":
        first = denied[0][1]
        if len(calls) > 1:
            in_batch(
                first,
                (
                    {
                        "index": i,
                        "call_id": call.call_id,
                        "tool": call.name,
                        "status": "denied" if verdict.error is not None else "not_run",
                        "code": verdict.error.code if verdict.error is not None else "BATCH_REJECTED",
                    }
                    for i, (call, verdict) in enumerate(zip(calls, verdicts))
                ),
            )
        raise first
    if run is not None:
        fresh = [v.call_id for v in verdicts if v.error is None or v.error.code != "CALL_ALREADY_DECIDED"]
        replayed = run.claim(fresh)
        if replayed:
            raise _reject(
                "CALL_ALREADY_DECIDED",
                f"call ids already decided: {list(replayed)}",
                path="$.calls",
                expected="new call ids",
                hint="these calls were already handled; do not repeat them",
            )
    return tuple(verdicts)
