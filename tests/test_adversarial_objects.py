"""What a caller hands in is not what it seems: a mapping whose methods
answer otherwise than the members it holds, a dict changed after it was
handed in, keys of a str subclass. Each is taken as the plain value it holds
when it is handed in, or refused; never checked as one value and carried,
digested or declared as another."""

from __future__ import annotations

import json
import time
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from pydantic import BaseModel

import decisions
from decisions import Schema, Tool, ToolDefinition, ToolRegistry, tool_fragment
from decisions._payload import plain_json
from decisions.integrations import feed_sdk_event, normalize_sdk
from decisions.types import NormalizedResponse, ToolCallItem
from decisions.validate import domain as domain_module
from ledger_helpers import decision as ledger_decision
from ledger_helpers import new_run
from openai_mutations import JSON_VALUES


def _reply(name: str, arguments: str) -> NormalizedResponse:
    call = ToolCallItem(item_id="i", call_id="c", name=name, arguments=arguments)
    return NormalizedResponse(
        provider="openai-chat", response_id="r", model="m", items=(call,), finish_reason="tool_calls"
    )


def _outcome(tools: ToolRegistry, name: str, arguments: str) -> Any:
    """The decided arguments, or the error code."""
    try:
        return decisions.decide(_reply(name, arguments), tools=tools).calls[0].arguments
    except decisions.OutputError as error:
        return error.code


def _integer_n(unique: str) -> dict[str, Any]:
    """A schema of one integer field (``unique`` keeps its digest to this test)."""
    return {"type": "object", "description": unique, "properties": {"n": {"type": "integer"}}}


class _ItemsLie(dict):  # type: ignore[type-arg]
    """Holds one schema, and shows another through ``items()`` (what
    ``json.dumps`` reads of a dict subclass)."""

    def __init__(self, held: dict[str, Any], shown: dict[str, Any]) -> None:
        super().__init__(held)
        self._shown = shown

    def items(self) -> Any:
        return self._shown.items()


def test_a_mapping_that_lies_cannot_lend_its_validator_to_another_tool() -> None:
    """The compiled schemas are shared by digest: the digest was taken of
    what ``items()`` showed and the validator compiled from what the dict
    held, so a plain tool whose schema had that digest got the other's
    validator (a string accepted where its schema says integer)."""
    strict = _integer_n("lent validator")
    loose = {**strict, "properties": {"n": {"type": "string"}}}
    liar = Tool(name="liar", parameters=_ItemsLie(loose, shown=strict))
    plain = ToolRegistry([Tool(name="plain", parameters=dict(strict))])
    assert _outcome(plain, "plain", '{"n": 1}') == {"n": 1}
    assert _outcome(plain, "plain", '{"n": "x"}') == "SCHEMA_MISMATCH"
    # the liar is read as what it holds, and declared as what it is checked against
    assert liar.schema is not None and liar.schema.spec == loose and type(liar.schema.spec) is dict
    assert _outcome(ToolRegistry([liar]), "liar", '{"n": "x"}') == {"n": "x"}
    assert ToolDefinition.of(liar).schema == loose


def test_a_schema_changed_after_the_tool_was_built_is_not_declared() -> None:
    """The tool keeps the schema it was built with: the request declares the
    schema ``decide`` validates with (it declared the caller's dict as it
    had since become, while ``decide`` validated as it was)."""
    spec = _integer_n("changed after")
    tool = Tool(name="count", parameters=spec)
    spec["properties"]["n"] = {"type": "string"}
    spec["properties"]["extra"] = {"type": "string"}
    registry = ToolRegistry([tool])
    assert _outcome(registry, "count", '{"n": 1}') == {"n": 1}
    assert _outcome(registry, "count", '{"n": "x"}') == "SCHEMA_MISMATCH"
    assert _outcome(registry, "count", '{"n": 1, "extra": "y"}') == "SCHEMA_MISMATCH"
    assert ToolDefinition.of(tool).schema["properties"] == {"n": {"type": "integer"}}
    declared = tool_fragment(ToolDefinition.of(tool), "anthropic")[0]["input_schema"]
    assert declared["properties"] == {"n": {"type": "integer"}}
    assert tool.schema is not None and tool.schema.json_schema()["properties"] == {"n": {"type": "integer"}}


def test_a_schema_changed_after_its_definition_was_built_is_not_declared() -> None:
    spec = _integer_n("definition changed after")
    definition = ToolDefinition("count", spec)
    spec["properties"]["n"]["type"] = "string"
    assert definition.schema["properties"] == {"n": {"type": "integer"}}


class _Key(str):
    """A str subclass whose instances hash and compare by identity."""

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "object", "const": float("nan")}, "nan is not JSON"),
        ({"type": "object", "properties": {1: {"type": "string"}}}, "keys must be str, not int"),
        ({"type": "object", "enum": [{"a"}]}, "a set is not JSON"),
        ({"type": "object", "properties": {_Key("a"): {"type": "string"}, _Key("a"): {}}}, "the key 'a' is repeated"),
    ],
    ids=["nan", "int-key", "set", "one-key-twice"],
)
def test_a_json_schema_that_is_not_json_is_refused(spec: dict[str, Any], message: str) -> None:
    """A schema that is no JSON value is a ValueError when it is built: it
    was compiled as it was (an int key never matching a member, a key of a
    str subclass held twice that is one member in any JSON text) and
    never kept under a digest."""
    with pytest.raises(ValueError, match=f"a JSON Schema must be JSON: {message}"):
        Schema(spec)
    with pytest.raises(ValueError, match="a JSON Schema must be JSON"):
        Tool(name="t", parameters=spec)


#: One level of a schema around ``inner``, by the keyword that nests it: the
#: ones checked with the most Python frames per level (``allOf``,
#: ``properties``) and the fewest (``items``, ``not``).
_NESTING: dict[str, Any] = {
    "items": lambda inner: {"type": "array", "items": inner},
    "not": lambda inner: {"not": inner},
    "allOf": lambda inner: {"allOf": [inner]},
    "properties": lambda inner: {"type": "object", "properties": {"a": inner}},
    "$defs": lambda inner: {"$defs": {"a": inner}, "type": "string"},
}


def _nested(keyword: str, json_levels: int) -> Any:
    """A schema whose objects and arrays nest ``json_levels`` deep (built without recursion)."""
    wrap = _NESTING[keyword]
    per_level = 2 if keyword in ("allOf", "properties", "$defs") else 1
    spec: Any = {"type": "string"}
    for _ in range((json_levels - 1) // per_level):
        spec = wrap(spec)
    if (json_levels - 1) % per_level:
        spec = {"not": spec}
    return spec


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


@pytest.mark.parametrize("keyword", list(_NESTING))
def test_a_schema_nested_past_the_bound_is_refused_when_built(keyword: str) -> None:
    """A schema from elsewhere (the tool list an MCP server sends) nested
    deeper than 64 levels is a ValueError when its tool is built: checking it
    recursed in ``jsonschema`` until a ``RecursionError`` (120 levels of
    ``items``, 80 of ``allOf``), and took 65 levels of ``items`` as they
    were. 64 levels are built, and validate."""
    deepest = _nested(keyword, 64)
    assert _depth(deepest) == 64
    assert Schema(deepest).spec == deepest
    parameters = {"type": "object", "properties": {"v": _nested(keyword, 62)}}
    assert _depth(parameters) == 64
    tools = ToolRegistry([Tool(name="t", parameters=parameters)])
    accepted = jsonschema.Draft202012Validator(parameters).is_valid({"v": "x"})
    assert _outcome(tools, "t", '{"v": "x"}') == ({"v": "x"} if accepted else "SCHEMA_MISMATCH")
    too_deep = _nested(keyword, 65)
    assert _depth(too_deep) == 65
    parameters = {"type": "object", "properties": {"v": _nested(keyword, 63)}}
    for build in (lambda: Schema(too_deep), lambda: Tool(name="t", parameters=parameters)):
        with pytest.raises(ValueError, match="^a JSON Schema may nest objects and arrays at most 64 levels deep$"):
            build()


def test_a_schema_ten_thousand_levels_deep_is_refused_at_once() -> None:
    spec = _nested("items", 10_000)
    started = time.perf_counter()
    with pytest.raises(ValueError, match="at most 64 levels deep"):
        Tool(name="t", parameters=spec)
    assert time.perf_counter() - started < 5


def test_a_schema_built_on_a_deep_stack_is_a_value_error() -> None:
    """Within the bound, on a caller's stack that leaves too little for the
    check: a ValueError that says so, never the validator's RecursionError."""
    spec = {**_nested("allOf", 64), "title": "built on a deep stack"}  # compiled here first (not cached)

    def build_at(depth: int) -> None:
        if depth:
            build_at(depth - 1)
            return
        Schema(spec)

    with pytest.raises(ValueError, match="the caller's stack was already too deep"):
        build_at(800)
    Schema(spec)  # the same schema on a shallow stack


class _Text(str):
    def __str__(self) -> str:
        return "overridden"

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise ZeroDivisionError("a subclass method ran")


class _Number(int):
    def __int__(self) -> int:
        return 7

    def __index__(self) -> int:
        return 7


def test_scalars_of_subclasses_are_read_as_their_content() -> None:
    spec = {_Text("type"): _Text("object"), "properties": {"n": {"type": "integer", "maximum": _Number(3)}}}
    schema = Schema(spec)
    assert json.dumps(schema.spec) == '{"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}}'
    assert all(type(key) is str for key in schema.spec)
    assert type(schema.spec["properties"]["n"]["maximum"]) is int
    with pytest.raises(decisions.SchemaError):
        schema.validate({"n": 4})


class _Spelled(str):
    """A tool name or id that compares and hashes as ``read_file`` whatever it spells."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash("read_file")

    __ne__ = str.__ne__


_READ = Tool(
    name="read_file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    side_effects=False,
)


def test_a_call_is_checked_as_the_name_it_carries() -> None:
    """A hand-built call whose name is a str subclass equal to every str was
    checked as ``read_file`` (the registry's lookup asked its ``__eq__``)
    while the decision carried the subclass, spelling ``delete_all``, to the
    executor; it is read as the str it holds, so it is an unknown tool."""
    registry = ToolRegistry([_READ])
    assert _outcome(registry, "read_file", '{"path": "a"}') == {"path": "a"}
    assert _outcome(registry, _Spelled("delete_all"), '{"path": "a"}') == "UNKNOWN_TOOL"


def test_a_decided_call_carries_plain_strs() -> None:
    call = ToolCallItem(
        item_id=_Spelled("i"), call_id=_Spelled("c"), name=_Spelled("read_file"), arguments=_Text('{"path": "a"}')
    )
    text = decisions.TextItem(item_id="t", text=_Text("note"))
    response = NormalizedResponse(
        provider="openai-chat", response_id="r", model="m", items=(text, call), finish_reason="tool_calls"
    )
    decision = decisions.decide(response, tools=ToolRegistry([_READ]))
    (decided,) = decision.calls
    assert (type(decided.name), type(decided.call_id), decided.arguments) == (str, str, {"path": "a"})
    assert (decided.name, decided.call_id) == ("read_file", "c")


def _path_outcome(tools: ToolRegistry | None, policy: decisions.Policy, name: str, path: str) -> Any:
    try:
        decision = decisions.decide(_reply(name, json.dumps({"path": path})), tools=tools, policy=policy)
    except decisions.OutputError as error:
        return error.code
    return decision.calls[0].name


@pytest.mark.parametrize("registry", [ToolRegistry([_READ]), None], ids=["registry", "no-registry"])
def test_rules_keyed_by_a_str_subclass_apply_to_the_name_they_hold(workspace: Any, registry: Any) -> None:
    """A rule keyed by a str subclass that hashes otherwise than its str was
    never found for the plain name a call carries: with a registry the
    policy was a ValueError naming ``read_file`` twice, without one every
    call of the tool was ``AMBIGUOUS_TOOL_NAME``; a rule denying the tool
    did not deny it. Keys are read as the str they hold."""
    rules = {_Key("read_file"): decisions.ToolRule(paths={_Key("path"): "read"})}
    policy = decisions.Policy(workspace=workspace, tools=rules)
    assert _path_outcome(registry, policy, "read_file", "../x") == "PATH_OUTSIDE_WORKSPACE"
    assert _path_outcome(registry, policy, "read_file", "x") == "read_file"
    denied = decisions.Policy(tools={_Key("read_file"): decisions.ToolRule(allowed=False)})
    assert _path_outcome(registry, denied, "read_file", "x") == "TOOL_DENIED"
    assert all(type(name) is str for name in policy.tools)


def test_two_rules_for_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two rules for 'read_file'"):
        decisions.Policy(tools={_Key("read_file"): decisions.ToolRule(), _Key("read_file"): decisions.ToolRule()})
    with pytest.raises(ValueError, match="two path rules for 'path'"):
        decisions.ToolRule(paths={_Key("path"): "read", _Key("path"): "write"})


def test_a_tool_named_by_a_str_subclass_is_called_by_its_str() -> None:
    """A tool registered under a str subclass that hashes otherwise could
    not be called at all (``AMBIGUOUS_TOOL_NAME`` against itself)."""
    tool = Tool(name=_Key("read_file"), parameters=_READ.parameters, version=_Text("2"), kind=_Key("function"))
    assert (type(tool.name), type(tool.version), type(tool.kind)) == (str, str, str)
    assert _outcome(ToolRegistry([tool]), "read_file", '{"path": "a"}') == {"path": "a"}


def test_path_rules_changed_after_the_rule_was_built_are_not_shown(workspace: Any) -> None:
    """The policy enforces the rules as they were when it was built; the
    rule showed the caller's dict as it had since become (no rule at all)."""
    paths = {"path": "read"}
    rule = decisions.ToolRule(paths=paths)
    policy = decisions.Policy(workspace=workspace, tools={"read_file": rule})
    paths.clear()
    assert dict(policy.tools["read_file"].paths) == {"path": "read"}
    assert _path_outcome(ToolRegistry([_READ]), policy, "read_file", "../x") == "PATH_OUTSIDE_WORKSPACE"
    with pytest.raises(TypeError):
        rule.paths["other"] = "write"  # type: ignore[index]


class _Paths(BaseModel):
    path: str
    more: list[str] = []


def _rewrite(call: decisions.ToolCall) -> None:
    """A host check that changes the call it is shown."""
    assert isinstance(call.arguments, dict)
    call.arguments["path"] = "../../etc/passwd"
    if isinstance(call.validated, _Paths):
        call.validated.path = "../../etc/passwd"
        call.validated.more.append("../x")


@pytest.mark.parametrize("hook", ["state_check", "approval"])
@pytest.mark.parametrize("parameters", [_READ.parameters, _Paths], ids=["json-schema", "pydantic"])
def test_a_host_check_cannot_change_the_call_it_allowed(workspace: Any, hook: str, parameters: Any) -> None:
    """The state check and the approval check ran on the call the decision
    carries, after its paths were checked: one that changed the arguments
    (or the validated model) in place made the decision carry a path never
    checked. They are shown a copy."""
    tools = ToolRegistry([Tool(name="read_file", parameters=parameters, side_effects=False)])
    rule = decisions.ToolRule(paths={"path": "read"})
    policy = decisions.Policy(workspace=workspace, tools={"read_file": rule}, **{hook: _rewrite})
    decision = decisions.decide(_reply("read_file", '{"path": "a"}'), tools=tools, policy=policy)
    (call,) = decision.calls
    assert call.arguments["path"] == "a"  # type: ignore[index]
    if parameters is _Paths:
        assert call.validated == _Paths(path="a")
    assert dict(decision.verdicts[0].paths) == {"$.calls[0].arguments.path": str(workspace.resolve() / "a")}


_COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}
_MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


def test_an_sdk_object_holding_what_json_cannot_write_is_malformed() -> None:
    """An SDK object given a field value JSON cannot write (set by hand, or
    an extra field) made its JSON dump raise pydantic's own
    ``PydanticSerializationError``; it is ``MALFORMED_EVENT`` as the same
    payload given as a dict is."""
    chat = pytest.importorskip("openai.types.chat")
    completion = chat.ChatCompletion.model_validate({**_COMPLETION, "surprise": object()})
    with pytest.raises(decisions.StreamError) as caught:
        normalize_sdk(completion)
    assert (caught.value.code, caught.value.message) == ("MALFORMED_EVENT", "event payload is not JSON-serialisable")
    assert normalize_sdk(chat.ChatCompletion.model_validate(_COMPLETION)).items[0].text == "hi"


def test_a_streamed_sdk_event_json_cannot_write_fails_the_stream() -> None:
    types = pytest.importorskip("anthropic.types")
    assembler = decisions.StreamAssembler("anthropic")
    event = types.RawMessageStartEvent.model_validate({**_MESSAGE_START, "surprise": {"at": object()}})
    with pytest.raises(decisions.StreamError) as caught:
        feed_sdk_event(assembler, event)
    assert caught.value.code == "MALFORMED_EVENT"
    assert assembler.state == "failed"


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # the field holds a value of another type
def test_a_gemini_object_json_cannot_write_is_malformed() -> None:
    genai_types = pytest.importorskip("google.genai.types")
    response = genai_types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"parts": [{"text": "a"}], "role": "model"}, "finishReason": "STOP"}]}
    )
    object.__setattr__(response, "model_version", object())
    with pytest.raises(decisions.StreamError) as caught:
        normalize_sdk(response)
    assert caught.value.code == "MALFORMED_EVENT"


@pytest.mark.parametrize("allowed", ["false", "no", 0, None, 1])
def test_a_rule_allows_or_denies_by_a_bool_only(allowed: Any) -> None:
    """``allowed="false"`` was read by its truth: the tool ran."""
    with pytest.raises(ValueError, match="ToolRule.allowed must be a bool"):
        decisions.ToolRule(allowed=allowed)


@pytest.mark.parametrize("approval", [0, 1, None, ["x"]])
def test_a_rule_asks_for_approval_by_a_bool_or_a_reason_only(approval: Any) -> None:
    with pytest.raises(ValueError, match="ToolRule.approval must be a bool or a reason"):
        decisions.ToolRule(approval=approval)
    assert type(decisions.ToolRule(approval=_Text("ask first")).approval) is str


@pytest.mark.parametrize("side_effects", [0, None, "false", 1])
def test_a_tool_is_read_only_by_a_bool_only(side_effects: Any) -> None:
    """``side_effects=0`` or ``None`` was read by its truth: a read-only tool,
    whose repaired calls run and whose dead worker's call is claimed again."""
    with pytest.raises(ValueError, match="Tool.side_effects must be a bool"):
        Tool(name="write_file", side_effects=side_effects)


def test_a_policy_keeps_the_strs_its_modes_hold() -> None:
    policy = decisions.Policy(default=_Key("deny"), batch=_Key("per_call"))
    assert (type(policy.default), type(policy.batch)) == (str, str)
    decision = decisions.decide(_reply("anything", "{}"), policy=policy)
    assert decision.executable_calls == ()
    assert decision.verdicts[0].error is not None and decision.verdicts[0].error.code == "TOOL_DENIED"


def test_a_tool_registered_while_another_thread_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry shared with a thread that registers tools: a decision on an
    unknown name, suggesting near names as the other thread registered one,
    raised ``RuntimeError`` (dictionary changed size during iteration). The
    registration is made where the other thread may run: between two names
    compared."""
    registry = ToolRegistry([Tool(name="read_file"), Tool(name="list_dir")])
    distance = domain_module._distance
    registered: list[str] = []

    def register_meanwhile(a: str, b: str, bound: int) -> int:
        if not registered:
            registered.append("write_file")
            registry.register(Tool(name="write_file"))
        return distance(a, b, bound)

    monkeypatch.setattr(domain_module, "_distance", register_meanwhile)
    assert _outcome(registry, "read_fil", "{}") == "UNKNOWN_TOOL"
    assert "write_file" in registry


def test_a_sensitive_tool_named_by_a_str_subclass_is_not_stored(ledger: decisions.Ledger) -> None:
    """``sensitive`` and ``idempotent`` named by a str subclass that hashes
    otherwise were never found for a call's plain name: the arguments of the
    sensitive tool were stored, and the idempotent one was not."""
    run = new_run()
    secret = "hunter2-very-secret-value"
    made = ledger_decision(("a", "login", "allowed"), password=secret)
    ledger.record(made, run_id=run, sensitive=[_Key("login")], idempotent=[_Key("login")])
    claim = ledger.claim("a", run_id=run, worker="w")
    assert claim.granted and claim.arguments is None
    assert ledger.entry("a", run_id=run).idempotent


class _ContentLie(dict):  # type: ignore[type-arg]
    """Holds ``{"n": 1}`` and writes ``{"n": "evil"}`` (``json`` reads ``items()``)."""

    def items(self) -> Any:
        return [("n", "evil")]


def _rewrite_content(arguments: Any, result: decisions.ToolResult) -> tuple[Any, ...]:
    """An effect check that changes the content it is shown."""
    result.content["n"] = 1
    return ()


_COUNT_RETURNS = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.mark.parametrize(
    "content, effects",
    [(_ContentLie({"n": 1}), None), ({"n": "evil"}, _rewrite_content)],
    ids=["content-that-lies", "effect-check-that-rewrites"],
)
@pytest.mark.parametrize("how", ["commit", "reconcile"])
def test_a_result_is_checked_as_it_is_stored(url: str, content: Any, effects: Any, how: str) -> None:
    """The result schema was checked on the caller's content object after the
    content was written: a dict whose ``items()`` lies, or an effect check
    that changed the content, made the ledger commit ``{"n": "evil"}`` as
    matching a schema that asks for an integer. The check reads the result
    back from what is stored, the schema before any effect check runs."""
    tool = Tool(name="count", side_effects=True, returns=_COUNT_RETURNS, effects=effects)
    registry = ToolRegistry([tool])
    run = new_run()
    with decisions.open_ledger(url, tools=registry) as ledger:
        ledger.record(ledger_decision(("a", "count", "allowed")), run_id=run)
        claim = ledger.claim("a", run_id=run, worker="w", lease_seconds=0.001 if how == "reconcile" else 60.0)
        result = decisions.ToolResult("a", "ok", content)
        if how == "commit":
            entry = ledger.commit(claim, result)
        else:
            time.sleep(0.01)
            ledger.entries(run)  # the lease expired: a call with side effects is unknown
            entry = ledger.reconcile("a", result, run_id=run, actor="ops")
    assert entry.state == "failed"
    assert entry.error is not None and entry.error.code == "RESULT_SCHEMA_MISMATCH"
    assert entry.result is None or entry.result.content == {"n": "evil"}


@given(value=JSON_VALUES)
def test_the_plain_copy_of_json_is_the_value(value: Any) -> None:
    copied = plain_json(value)
    assert json.dumps(copied) == json.dumps(value)
    assert copied is not value or not isinstance(value, (dict, list))


def test_the_plain_copy_goes_any_depth_and_refuses_a_cycle() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    copied = plain_json(deep)
    for _ in range(100_000):  # compared level by level: == itself would recurse
        assert type(copied) is list and len(copied) == 1 and copied is not deep
        copied, deep = copied[0], deep[0]
    assert copied == [] and copied is not deep
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        plain_json({"a": looped})
    shared = {"x": 1}
    assert plain_json([shared, shared]) == [{"x": 1}, {"x": 1}]  # met twice, no cycle
