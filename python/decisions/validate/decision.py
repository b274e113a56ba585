"""What ``decide`` returns: a tool decision with one verdict per call, or a
final answer. Frozen and typed; nothing here executes anything.

A :class:`ToolDecision` is *executable* only when every call's verdict allows
it. A call that needs approval stays non-executable until
:meth:`ToolDecision.approve` returns a new decision that records who approved
it; the original decision is never changed in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping, TypeAlias, Union, get_args

from .. import _backend
from ..errors import OutputError
from ..types import CallKind

__all__ = [
    "ToolCall",
    "VerdictStatus",
    "CallVerdict",
    "ToolDecision",
    "FinalDecision",
    "Decision",
    "BatchMode",
]

#: ``allowed``/``approved``: may run. ``needs_approval``: waits for
#: :meth:`ToolDecision.approve`. ``denied``: this call failed a policy check
#: (``error`` says which); only returned in ``per_call`` batch mode.
VerdictStatus = Literal["allowed", "approved", "needs_approval", "denied"]

#: ``all_or_nothing``: one call that fails policy makes the whole batch
#: non-executable (``decide`` raises, naming the call). ``per_call``: each
#: call stands on its own verdict.
BatchMode = Literal["all_or_nothing", "per_call"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call the model asked for, with its arguments parsed and
    validated. ``validated`` is the tool schema's result (a Pydantic model
    instance when the tool declared a model, else the parsed object).
    ``arguments`` is the JSON object the executor should use: for a Pydantic
    tool, ``validated`` dumped by field name (aliases resolved, defaults and
    validators applied), so it holds exactly the values the policy checked;
    else the parsed object itself. ``tool_version`` is the registered version
    of the tool that validated it (None without a registry). ``call_kind``
    is the call's kind (:data:`~decisions.types.CallKind`): for ``custom``
    (a text tool) ``arguments`` is the input *text* itself, never parsed.
    A ``call_id_generated`` id from a response without a response id names
    nothing the provider sent, so it is prefixed with a digest of the
    response (``gen-<hex>:call_0``): a run and its ledger tell turns apart,
    and the same response decided twice is still refused as a replay."""

    call_id: str
    name: str
    arguments: dict[str, Any] | str
    index: int = 0
    item_id: str | None = None
    call_id_generated: bool = False
    tool_version: str | None = None
    validated: Any = None
    call_kind: CallKind = "function"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallVerdict:
    """The policy layer's verdict on one call. ``paths`` maps each checked
    path argument (as a JSON path into :attr:`ToolCall.arguments`, such as
    ``$.calls[0].arguments.path``) to the resolved absolute path the executor
    should use; ``empty_paths`` lists the path arguments a rule names that
    were left empty (absent or null) and so not checked; ``reasons`` says why
    an approval is needed; ``approved_by`` who approved it."""

    call_id: str
    status: VerdictStatus
    error: OutputError | None = None
    reasons: tuple[str, ...] = ()
    paths: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    empty_paths: tuple[str, ...] = ()
    approved_by: str | None = None

    @property
    def executable(self) -> bool:
        """True when this call may run."""
        return self.status in ("allowed", "approved")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDecision:
    """Call these tools. ``text`` is the text the model wrote beside the
    calls: kept as trace, never parsed for actions."""

    calls: tuple[ToolCall, ...]
    verdicts: tuple[CallVerdict, ...]
    batch: BatchMode = "all_or_nothing"
    text: str = ""
    provider: str | None = None
    response_id: str | None = None
    model: str | None = None
    #: The tag of :data:`Decision`: ``if decision.kind == "tool"`` narrows it.
    kind: Literal["tool"] = field(default="tool", init=False)

    def __post_init__(self) -> None:
        if not self.calls:
            raise ValueError("a ToolDecision needs at least one call")
        if tuple(v.call_id for v in self.verdicts) != tuple(c.call_id for c in self.calls):
            raise ValueError("verdicts must pair with calls, in order")
        if self.batch not in get_args(BatchMode):
            raise ValueError(f"ToolDecision.batch must be 'all_or_nothing' or 'per_call', not {self.batch!r}")
        for v in self.verdicts:
            if v.status not in get_args(VerdictStatus):
                raise ValueError(f"the verdict of call {v.call_id!r} has no known status: {v.status!r}")

    @property
    def executable(self) -> bool:
        """True when every call may run now."""
        return all(v.executable for v in self.verdicts)

    @property
    def needs_approval(self) -> bool:
        """True when some call waits for an approval."""
        return any(v.status == "needs_approval" for v in self.verdicts)

    @property
    def executable_calls(self) -> tuple[ToolCall, ...]:
        """The calls that may run now: all or none in ``all_or_nothing``
        mode, each on its own verdict in ``per_call`` mode."""
        if self.batch == "per_call":
            return tuple(c for c, v in zip(self.calls, self.verdicts) if v.executable)
        return self.calls if self.executable else ()

    @property
    def pending_approval(self) -> tuple[ToolCall, ...]:
        """The calls waiting for an approval."""
        return tuple(c for c, v in zip(self.calls, self.verdicts) if v.status == "needs_approval")

    def verdict(self, call_id: str) -> CallVerdict:
        """The verdict for ``call_id`` (KeyError if no such call)."""
        for v in self.verdicts:
            if v.call_id == call_id:
                return v
        raise KeyError(call_id)

    def approve(self, *call_ids: str, approver: str | None = None) -> ToolDecision:
        """A new decision with these calls approved (all pending ones when
        none is named). Only a call that needs approval can be approved."""
        wanted = set(call_ids) if call_ids else {c.call_id for c in self.pending_approval}
        known = {v.call_id: v for v in self.verdicts}
        for call_id in sorted(wanted):
            verdict = known.get(call_id)
            if verdict is None:
                raise KeyError(call_id)
            if verdict.status != "needs_approval":
                raise ValueError(f"call {call_id!r} is {verdict.status}, not waiting for approval")
        verdicts = tuple(
            replace(v, status="approved", approved_by=approver) if v.call_id in wanted else v for v in self.verdicts
        )
        return replace(self, verdicts=verdicts)


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalDecision:
    """The final answer. ``value`` is the validated value (a Pydantic model
    instance when the output schema is a model, the parsed JSON for a JSON
    Schema, the text itself when no output schema was given); ``text`` is
    what the model wrote; ``schema_id`` the registered schema that validated
    it (``agent.decision@2.1.0``), if any. A final decision says the model
    answered; it never says the task is done."""

    value: Any
    text: str
    schema_id: str | None = None
    provider: str | None = None
    response_id: str | None = None
    model: str | None = None
    #: The tag of :data:`Decision`: ``if decision.kind == "final"`` narrows it.
    kind: Literal["final"] = field(default="final", init=False)


# Builders of the classes above from positional values in field order,
# without ``__init__`` or ``__post_init__`` (see ``decisions._native.Constructor``):
# for ``decide`` and the policy layer, whose values hold the invariants by
# construction. tests/test_native_objects.py holds what they build equal to
# what ``__init__`` builds.
new_tool_call: Callable[..., ToolCall] = _backend.impl.Constructor(ToolCall)
new_verdict: Callable[..., CallVerdict] = _backend.impl.Constructor(CallVerdict)
new_tool_decision: Callable[..., ToolDecision] = _backend.impl.Constructor(ToolDecision)

#: What :func:`decisions.decide` returns: a :class:`ToolDecision` (``kind ==
#: "tool"``) or a :class:`FinalDecision` (``kind == "final"``), a tagged union
#: that type checkers narrow by ``kind`` (or ``isinstance``).
Decision: TypeAlias = Union[ToolDecision, FinalDecision]
Decision.__doc__ = """What :func:`decisions.decide` returns: ToolDecision | FinalDecision.

A tagged union: ``decision.kind`` is ``"tool"`` for a :class:`ToolDecision`
(calls to run, each with its verdict) and ``"final"`` for a
:class:`FinalDecision` (the answer); ``if decision.kind == "tool":`` narrows
it for mypy and pyright, as ``isinstance`` does."""
