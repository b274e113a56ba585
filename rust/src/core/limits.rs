//! The core's copy of `decisions.Limits`. The binding layer fills it from the
//! Python object; the defaults here must equal the Python defaults (a Python
//! test compares them through `_native.default_limits()`).

/// Every bound the core enforces. Sizes are bytes of UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_document_bytes: usize,
    pub max_depth: usize,
    pub max_string_bytes: usize,
    pub max_array_items: usize,
    pub max_object_members: usize,
    pub max_values: usize,
    pub max_number_length: usize,
    pub max_call_argument_bytes: usize,
    pub max_calls_per_response: usize,
    pub max_items_per_response: usize,
    pub max_response_bytes: usize,
    pub max_sse_line_bytes: usize,
    pub max_sse_event_bytes: usize,
    pub max_stream_events: usize,
    pub max_stream_bytes: usize,
    pub max_bytes_without_data: usize,
}

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

impl Limits {
    /// The defaults, as a constant (the binding uses it when `limits` is None).
    pub const DEFAULT: Limits = Limits {
        max_document_bytes: 8 * MIB,
        max_depth: 64,
        max_string_bytes: 4 * MIB,
        max_array_items: 100_000,
        max_object_members: 10_000,
        max_values: 1_000_000,
        max_number_length: 100,
        max_call_argument_bytes: 8 * MIB,
        max_calls_per_response: 128,
        max_items_per_response: 4096,
        max_response_bytes: 32 * MIB,
        max_sse_line_bytes: 32 * MIB,
        max_sse_event_bytes: 32 * MIB,
        max_stream_events: 2_000_000,
        max_stream_bytes: 256 * MIB,
        max_bytes_without_data: MIB,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Field names, in the order of the struct, as in `decisions.Limits`.
pub const FIELD_NAMES: [&str; 16] = [
    "max_document_bytes",
    "max_depth",
    "max_string_bytes",
    "max_array_items",
    "max_object_members",
    "max_values",
    "max_number_length",
    "max_call_argument_bytes",
    "max_calls_per_response",
    "max_items_per_response",
    "max_response_bytes",
    "max_sse_line_bytes",
    "max_sse_event_bytes",
    "max_stream_events",
    "max_stream_bytes",
    "max_bytes_without_data",
];

impl Limits {
    /// Build from values in [`FIELD_NAMES`] order.
    pub fn from_values(v: [usize; 16]) -> Limits {
        let [a, b, c, d, e, f, g, h, i, p, j, k, l, m, n, o] = v;
        Limits {
            max_document_bytes: a,
            max_depth: b,
            max_string_bytes: c,
            max_array_items: d,
            max_object_members: e,
            max_values: f,
            max_number_length: g,
            max_call_argument_bytes: h,
            max_calls_per_response: i,
            max_items_per_response: p,
            max_response_bytes: j,
            max_sse_line_bytes: k,
            max_sse_event_bytes: l,
            max_stream_events: m,
            max_stream_bytes: n,
            max_bytes_without_data: o,
        }
    }

    /// Values in [`FIELD_NAMES`] order.
    pub fn values(&self) -> [usize; 16] {
        [
            self.max_document_bytes,
            self.max_depth,
            self.max_string_bytes,
            self.max_array_items,
            self.max_object_members,
            self.max_values,
            self.max_number_length,
            self.max_call_argument_bytes,
            self.max_calls_per_response,
            self.max_items_per_response,
            self.max_response_bytes,
            self.max_sse_line_bytes,
            self.max_sse_event_bytes,
            self.max_stream_events,
            self.max_stream_bytes,
            self.max_bytes_without_data,
        ]
    }
}
