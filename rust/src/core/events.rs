//! Canonical events: the provider-neutral stream every mapper produces and the
//! assembler consumes. Mirrors `decisions.types` (the binding layer converts
//! these to and from those Python classes).

/// Normalized finish reason (`decisions.types.FinishReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Refusal,
    Cancelled,
    Error,
    Unknown,
}

impl FinishReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Refusal => "refusal",
            FinishReason::Cancelled => "cancelled",
            FinishReason::Error => "error",
            FinishReason::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<FinishReason> {
        Some(match s {
            "stop" => FinishReason::Stop,
            "tool_calls" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            "refusal" => FinishReason::Refusal,
            "cancelled" => FinishReason::Cancelled,
            "error" => FinishReason::Error,
            "unknown" => FinishReason::Unknown,
            _ => return None,
        })
    }
}

/// The kind of a non-tool item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Text,
    Refusal,
    Reasoning,
}

impl ItemKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ItemKind::Text => "text",
            ItemKind::Refusal => "refusal",
            ItemKind::Reasoning => "reasoning",
        }
    }
}

/// What a tool call asks the executor to run (`decisions.types.CallKind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CallKind {
    /// A declared function: the arguments are a JSON object's text.
    #[default]
    Function,
    /// An OpenAI Responses custom tool: the arguments are its free-form input text.
    Custom,
    LocalShell,
    Computer,
    ApplyPatch,
    Shell,
}

impl CallKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            CallKind::Function => "function",
            CallKind::Custom => "custom",
            CallKind::LocalShell => "local_shell",
            CallKind::Computer => "computer",
            CallKind::ApplyPatch => "apply_patch",
            CallKind::Shell => "shell",
        }
    }

    pub fn parse(s: &str) -> Option<CallKind> {
        Some(match s {
            "function" => CallKind::Function,
            "custom" => CallKind::Custom,
            "local_shell" => CallKind::LocalShell,
            "computer" => CallKind::Computer,
            "apply_patch" => CallKind::ApplyPatch,
            "shell" => CallKind::Shell,
            _ => return None,
        })
    }
}

/// Token counts (`decisions.types.Usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
}

/// One canonical event (`decisions.types.CanonicalEvent`).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    ResponseStarted {
        response_id: Option<String>,
        model: Option<String>,
    },
    ItemStarted {
        item_id: String,
        kind: ItemKind,
        /// Where the item goes among the response's items, when it came
        /// after later ones (see [`crate::core::assemble::Assembler::place`]).
        position: Option<usize>,
    },
    TextDelta {
        item_id: String,
        delta: String,
    },
    RefusalDelta {
        item_id: String,
        delta: String,
    },
    ReasoningDelta {
        item_id: String,
        delta: String,
        signature: Option<String>,
    },
    ToolCallStarted {
        item_id: String,
        call_id: String,
        name: String,
        call_id_generated: bool,
        call_kind: CallKind,
    },
    ToolArgumentsDelta {
        item_id: String,
        delta: String,
    },
    ItemEnded {
        item_id: String,
    },
    Usage(Usage),
    ResponseFinished {
        finish_reason: FinishReason,
        raw_finish_reason: Option<String>,
    },
    ResponseFailed {
        code: String,
        message: String,
        retryable: bool,
        error_type: Option<String>,
    },
}
