"""decisions: turn LLM provider output into validated, typed decisions.

It takes a whole response body or a Server-Sent-Events stream from OpenAI
Chat Completions, OpenAI Responses, Anthropic Messages or Google Gemini and
turns it into either "call these tools with these arguments" or "here is the
final answer", or a typed error that names the layer and the code of what is
wrong. It never executes a tool.
"""

from __future__ import annotations

from . import _backend
from ._backend import BACKEND
from ._version import __version__
from .errors import (
    ERROR_CODES,
    DomainError,
    OutputError,
    ParseError,
    PolicyError,
    SchemaError,
    StreamError,
    TransportError,
)
from .limits import DEFAULT_LIMITS, Limits
from .providers import PROVIDERS
from .recover.repair import (
    RepairBudget,
    apply_fixes,
    fingerprint,
    fix_invalid_escapes,
    fix_response,
    is_repairable,
    repair_prompt,
)
from .recover.results import ResultBook, ToolResult, result_messages
from .recover.trace import Redactor, parse_record
from .request.capabilities import STRATEGIES, Capabilities, Strategy, capabilities
from .request.conversion import convert_schema, schema_digest
from .request.definitions import OutputDefinition, ToolDefinition
from .request.fragments import (
    RequestPlan,
    RequestRecord,
    build_request,
    choose_strategy,
    output_fragment,
    tool_fragment,
)
from .request.textcalls import parse_json_text, parse_tool_calls, tool_calls_response
from .stream import wire
from .types import FixedResponse, NormalizedResponse
from .validate.decide import check_complete, decide, parse_arguments
from .validate.decision import CallVerdict, Decision, FinalDecision, ToolCall, ToolDecision
from .validate.domain import Tool, ToolRegistry
from .validate.policy import PathArg, Policy, Run, ToolRule, resolve_path
from .validate.schema import Schema
from .validate.versions import SchemaRef, SchemaRegistry, VersionedSchema, tool_name_args_to_calls

loads = _backend.impl.loads
SSEDecoder = _backend.impl.SSEDecoder
StreamAssembler = _backend.impl.StreamAssembler
normalize = _backend.impl.normalize

__all__ = [
    "BACKEND",
    "Capabilities",
    "OutputDefinition",
    "Redactor",
    "RepairBudget",
    "RequestPlan",
    "RequestRecord",
    "STRATEGIES",
    "Strategy",
    "ToolDefinition",
    "apply_fixes",
    "build_request",
    "capabilities",
    "choose_strategy",
    "convert_schema",
    "fingerprint",
    "fix_invalid_escapes",
    "fix_response",
    "FixedResponse",
    "NormalizedResponse",
    "is_repairable",
    "output_fragment",
    "parse_json_text",
    "parse_record",
    "parse_tool_calls",
    "repair_prompt",
    "schema_digest",
    "tool_calls_response",
    "tool_fragment",
    "CallVerdict",
    "Decision",
    "FinalDecision",
    "PathArg",
    "Policy",
    "ResultBook",
    "Run",
    "Schema",
    "SchemaRef",
    "SchemaRegistry",
    "Tool",
    "ToolCall",
    "ToolDecision",
    "ToolRegistry",
    "ToolResult",
    "ToolRule",
    "VersionedSchema",
    "check_complete",
    "decide",
    "parse_arguments",
    "resolve_path",
    "result_messages",
    "tool_name_args_to_calls",
    "DEFAULT_LIMITS",
    "DomainError",
    "ERROR_CODES",
    "Limits",
    "PROVIDERS",
    "OutputError",
    "ParseError",
    "PolicyError",
    "SSEDecoder",
    "SchemaError",
    "StreamAssembler",
    "StreamError",
    "TransportError",
    "__version__",
    "loads",
    "normalize",
    "wire",
]

# After the decision: the execution ledger, result checks and completion checks.
from .errors import CompletionError, ResultError  # noqa: E402
from .ledger import (  # noqa: E402
    Claim,
    Effect,
    Entry,
    FileEffects,
    Ledger,
    ResultCheck,
    check_completion,
    open_ledger,
)

__all__ += [
    "Claim",
    "CompletionError",
    "Effect",
    "Entry",
    "FileEffects",
    "Ledger",
    "ResultCheck",
    "ResultError",
    "check_completion",
    "open_ledger",
]
