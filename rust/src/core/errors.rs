//! Error codes the core can produce. The names are the stable codes of
//! `decisions.errors.ERROR_CODES`; a Python test checks that every code here is
//! in that table with the same layer.

macro_rules! codes {
    ($($name:ident => $layer:literal),* $(,)?) => {
        /// A stable error code. `as_str` is the code's name in the Python table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        pub enum Code { $($name),* }

        impl Code {
            /// Every code, for the drift test.
            pub const ALL: &'static [Code] = &[$(Code::$name),*];

            /// The code as it appears in `ERROR_CODES`.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$name => stringify!($name)),* }
            }

            /// The layer (`"parse"`, `"stream"`, `"transport"`) the code belongs to.
            pub const fn layer(self) -> &'static str {
                match self { $(Code::$name => $layer),* }
            }
        }
    };
}

codes! {
    // transport
    CONNECTION_CLOSED => "transport",
    PROVIDER_ERROR => "transport",
    // SSE framing
    SSE_INVALID_UTF8 => "stream",
    SSE_LINE_TOO_LONG => "stream",
    SSE_EVENT_TOO_LARGE => "stream",
    SSE_TOO_MANY_EVENTS => "stream",
    SSE_STREAM_TOO_LARGE => "stream",
    SSE_NO_DATA => "stream",
    SSE_UNTERMINATED_EVENT => "stream",
    // event mapping
    MALFORMED_EVENT => "stream",
    MULTIPLE_CHOICES => "stream",
    OUTPUT_MISMATCH => "stream",
    CONTENT_FILTERED => "stream",
    // assembly
    EVENT_BEFORE_START => "stream",
    DUPLICATE_START => "stream",
    DELTA_BEFORE_START => "stream",
    DELTA_AFTER_END => "stream",
    UNKNOWN_ITEM => "stream",
    DUPLICATE_ITEM_ID => "stream",
    DUPLICATE_CALL_ID => "stream",
    CALL_NAME_CHANGED => "stream",
    SEQUENCE_NOT_MONOTONIC => "stream",
    ITEM_NOT_ENDED => "stream",
    NO_TERMINAL_EVENT => "stream",
    EVENT_AFTER_TERMINAL => "stream",
    STREAM_CANCELLED => "stream",
    STREAM_FAILED => "stream",
    ARGUMENTS_TOO_LARGE => "stream",
    TOO_MANY_CALLS => "stream",
    TOO_MANY_ITEMS_IN_RESPONSE => "stream",
    RESPONSE_TOO_LARGE => "stream",
    TOO_MANY_EVENTS => "stream",
    // whole bodies
    RESPONSE_NOT_FINISHED => "stream",
    BODY_NOT_FINISHED => "stream",
    NOT_A_RESPONSE_BODY => "stream",
    UNSUPPORTED_ITEM => "stream",
    // strict JSON
    EMPTY_INPUT => "parse",
    INVALID_UTF8 => "parse",
    UTF16_INPUT => "parse",
    BOM => "parse",
    UNEXPECTED_END => "parse",
    UNEXPECTED_CHARACTER => "parse",
    TRAILING_CONTENT => "parse",
    MARKDOWN_FENCE => "parse",
    COMMENT => "parse",
    SINGLE_QUOTES => "parse",
    TRAILING_COMMA => "parse",
    KEY_NOT_STRING => "parse",
    DUPLICATE_KEY => "parse",
    INVALID_NUMBER => "parse",
    LEADING_ZERO => "parse",
    NAN_OR_INFINITY => "parse",
    NUMBER_OUT_OF_RANGE => "parse",
    NUMBER_TOO_LONG => "parse",
    INVALID_ESCAPE => "parse",
    INVALID_UNICODE_ESCAPE => "parse",
    LONE_SURROGATE => "parse",
    CONTROL_CHARACTER => "parse",
    DOCUMENT_TOO_LARGE => "parse",
    DEPTH_EXCEEDED => "parse",
    STRING_TOO_LONG => "parse",
    TOO_MANY_ITEMS => "parse",
    TOO_MANY_MEMBERS => "parse",
    TOO_MANY_VALUES => "parse",
}

#[cfg(test)]
mod tests {
    use super::Code;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}

/// A failure in the core: its code, a message (the same text the pure twin
/// renders), and where it applies the character offset into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreError {
    pub code: Code,
    pub message: String,
    pub offset: Option<usize>,
    /// Overrides the code's default `retryable` (e.g. a provider's
    /// `overloaded_error` is retryable, its `invalid_request_error` is not).
    pub retryable: Option<bool>,
    /// The JSON path of the place the error is about, where there is one.
    pub path: Option<String>,
}

impl CoreError {
    pub fn new(code: Code, message: impl Into<String>) -> CoreError {
        CoreError {
            code,
            message: message.into(),
            offset: None,
            retryable: None,
            path: None,
        }
    }

    pub fn at(code: Code, message: impl Into<String>, offset: usize) -> CoreError {
        CoreError {
            code,
            message: message.into(),
            offset: Some(offset),
            retryable: None,
            path: None,
        }
    }
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for CoreError {}
