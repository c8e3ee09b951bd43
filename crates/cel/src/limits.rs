//! Upstream's fixed CEL limits (k8s.io/apiserver/pkg/cel/limits.go and
//! pkg/apis/cel/config.go), the sizes behind the cost estimate.

/// The largest request the estimate assumes a value can come from.
pub(crate) const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
/// The longest JSON duration string (quotes included).
pub(crate) const MAX_DURATION_SIZE_JSON: u64 = 32;
/// The longest JSON date-time string (quotes included).
pub(crate) const MAX_DATETIME_SIZE_JSON: u64 = 32;
/// The shortest JSON duration string: `"0"`.
pub(crate) const MIN_DURATION_SIZE_JSON: u64 = 3;
/// A JSON date: `"YYYY-MM-DD"`.
pub(crate) const JSON_DATE_SIZE: u64 = 12;
/// The shortest JSON date-time string.
pub(crate) const MIN_DATETIME_SIZE_JSON: u64 = 21;
/// `""`.
pub(crate) const MIN_STRING_SIZE: u64 = 2;
/// `true`.
pub(crate) const MIN_BOOL_SIZE: u64 = 4;
/// `0`.
pub(crate) const MIN_NUMBER_SIZE: u64 = 1;

/// The most a single rule may cost when evaluated once.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The runtime budget of all the rules evaluated for one object.
pub const RUNTIME_CEL_COST_BUDGET: i64 = 10_000_000;
/// The most a single rule's static estimate, times how often it can run,
/// may cost before the CRD is rejected.
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// The most all the rules of a schema may be estimated to cost together.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// The longest message a `messageExpression` may produce.
pub(crate) const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES: usize = 5 * 1024;
