//! Pure API machinery shared by the API server: Status errors, field
//! errors, label and field selectors, request info resolution, object
//! metadata validation and accessors (upstream's `k8s.io/apimachinery`
//! plus the request-info part of `k8s.io/apiserver`). Nothing here does
//! I/O.

pub mod duration;
pub mod field_errors;
pub mod fields;
pub mod go_duration;
pub mod go_time;
pub mod labels;
pub mod meta;
pub mod quantity;
pub mod query_params;
pub mod request_info;
pub mod serializer;
pub mod status;
pub mod util;
pub mod validation;
pub mod version;

pub use field_errors::{ErrorList, ErrorType, FieldError, Path};
pub use fields::FieldSelector;
pub use labels::Selector as LabelSelector;
pub use meta::{GroupKind, GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource};
pub use quantity::Quantity;
pub use request_info::{RequestInfo, RequestInfoResolver};
pub use status::{ApiError, Status, StatusCause, StatusDetails, StatusReason};
