"""decisions: turn LLM provider output into validated, typed decisions.

It takes a whole response body or a Server-Sent-Events stream from OpenAI
Chat Completions, OpenAI Responses, Anthropic Messages or Google Gemini and
turns it into either "call these tools with these arguments" or "here is the
final answer", or a typed error that names the layer and the code of what is
wrong. It never executes a tool.
"""

import typing as _typing

from . import _backend
from ._backend import BACKEND
from ._version import __version__
from .detect import AutoAssembler, StreamAssembler, normalize
from .errors import (
    ERROR_CODES,
    DomainError,
    ErrorCode,
    Layer,
    OutputError,
    ParseError,
    PolicyError,
    SchemaError,
    StreamError,
    TransportError,
    error_class,
)
from .limits import DEFAULT_LIMITS, Limits
from .providers import PROVIDER_IDS, PROVIDERS
from .recover.repair import (
    FIXES,
    TRUNCATION_CODES,
    Fingerprint,
    Fix,
    Fixed,
    RepairBudget,
    apply_fixes,
    fingerprint,
    fix_invalid_escapes,
    fix_response,
    is_repairable,
    repair_prompt,
)
from .recover.results import RESULT_PROVIDERS, ResultBook, ResultStatus, ToolResult, result_messages
from .recover.trace import DEFAULT_FIELDS, RECORD_FIELDS, Redactor, parse_record
from .request.capabilities import ANNOTATION_KEYWORDS, STRATEGIES, Capabilities, Strategy, capabilities
from .request.conversion import ConvertedSchema, DroppedKeyword, OnUnsupported, convert_schema, schema_digest
from .request.definitions import OutputDefinition, ToolDefinition
from .request.fragments import (
    RequestRecord,
    choose_strategy,
    json_text_instructions,
    output_fragment,
    tool_fragment,
)
from .request.plan import RequestPlan, build_request
from .request.textcalls import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TextCall,
    TextCalls,
    TextValue,
    parse_json_text,
    parse_tool_calls,
    tool_calls_response,
)
from .stream import wire
from .stream.partial import PartialJSON
from .types import (
    CanonicalEvent,
    FinishReason,
    FixedResponse,
    Item,
    NormalizedResponse,
    ReasoningItem,
    RefusalItem,
    ResponseSnapshot,
    TextItem,
    ToolCallItem,
    Usage,
)
from .validate.decide import TextPolicy, check_complete, decide, parse_arguments
from .validate.decision import BatchMode, CallVerdict, Decision, FinalDecision, ToolCall, ToolDecision, VerdictStatus
from .validate.domain import Tool, ToolRegistry
from .validate.policy import Access, PathArg, Policy, RunState, ToolRule, apply_policy, resolve_path
from .validate.schema import ISSUE_CODES, Schema
from .validate.versions import Adapter, SchemaRef, SchemaRegistry, VersionedSchema, tool_name_args_to_calls

if _typing.TYPE_CHECKING:  # the stub's signatures, whichever backend is live
    from ._native import SSEDecoder as SSEDecoder
    from ._native import loads as loads
else:
    loads = _backend.impl.loads
    SSEDecoder = _backend.impl.SSEDecoder

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
    "RunState",
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
    "AutoAssembler",
    "BatchMode",
    "CanonicalEvent",
    "ErrorCode",
    "FinishReason",
    "Fingerprint",
    "Fix",
    "Fixed",
    "Item",
    "Layer",
    "ReasoningItem",
    "RefusalItem",
    "ResponseSnapshot",
    "TextItem",
    "TextPolicy",
    "ToolCallItem",
    "Usage",
    "VerdictStatus",
    "error_class",
    "FIXES",
    "TRUNCATION_CODES",
    "RESULT_PROVIDERS",
    "ResultStatus",
    "DEFAULT_FIELDS",
    "RECORD_FIELDS",
    "ANNOTATION_KEYWORDS",
    "ConvertedSchema",
    "DroppedKeyword",
    "OnUnsupported",
    "json_text_instructions",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "TextCall",
    "TextCalls",
    "TextValue",
    "PartialJSON",
    "Access",
    "apply_policy",
    "ISSUE_CODES",
    "Adapter",
    "PROVIDER_IDS",
]

# After the decision: the execution ledger, result checks and completion checks.
from .errors import CompletionError, ResultError  # noqa: E402
from .ledger import (  # noqa: E402
    Claim,
    Effect,
    Entry,
    FileEffects,
    Ledger,
    Run,
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
    "ResultError",
    "check_completion",
    "open_ledger",
]
