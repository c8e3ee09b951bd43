//! Kubernetes' format library: named string formats
//! (`format.dns1123Label()`, `format.named('uuid')`, ...) whose
//! `validate(s)` returns `optional.none()` for a valid string, or the
//! list of reasons it is not.

use std::sync::LazyLock;

use apimachinery::validation as v;
use base64::Engine as _;
use cel::common::functions::Function;
use cel::common::types::{CelList, CelOptional, CelString, Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{arg, opaque_val, take, text};

const FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");
static FORMAT_TYPE_REF: Type = FORMAT_TYPE;

/// A named format and the check behind it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Format {
    name: &'static str,
    check: fn(&str) -> Vec<String>,
}

/// Formats are equal when they are the same format.
impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

opaque_val!(Format, FORMAT_TYPE_REF);

static UUID: LazyLock<Result<regex::Regex, regex::Error>> = LazyLock::new(|| {
    regex::Regex::new("^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});

fn one(ok: bool, reason: &str) -> Vec<String> {
    if ok {
        Vec::new()
    } else {
        vec![reason.to_owned()]
    }
}

/// The formats by the name `format.named` and `format.<name>()` use.
const FORMATS: &[Format] = &[
    Format {
        name: "dns1123Label",
        check: |s| v::name_is_dns_label(s, false),
    },
    Format {
        name: "dns1123Subdomain",
        check: |s| v::name_is_dns_subdomain(s, false),
    },
    Format {
        name: "dns1035Label",
        check: |s| v::name_is_dns1035_label(s, false),
    },
    Format {
        name: "qualifiedName",
        check: v::is_qualified_name,
    },
    Format {
        name: "dns1123LabelPrefix",
        check: |s| v::name_is_dns_label(s, true),
    },
    Format {
        name: "dns1123SubdomainPrefix",
        check: |s| v::name_is_dns_subdomain(s, true),
    },
    Format {
        name: "dns1035LabelPrefix",
        check: |s| v::name_is_dns1035_label(s, true),
    },
    Format {
        name: "labelValue",
        check: v::is_label_value,
    },
    Format {
        name: "uri",
        check: |s| super::urls::parse(s).err().into_iter().collect(),
    },
    Format {
        name: "uuid",
        check: |s| {
            let ok = UUID.as_ref().is_ok_and(|re| re.is_match(s));
            one(ok, "does not match the UUID format")
        },
    },
    Format {
        name: "byte",
        check: |s| {
            let ok = base64::engine::general_purpose::STANDARD.decode(s).is_ok();
            one(ok, "invalid base64")
        },
    },
    Format {
        name: "date",
        check: |s| {
            let ok = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok();
            one(ok, "invalid date")
        },
    },
    Format {
        name: "datetime",
        check: |s| {
            let ok = chrono::DateTime::parse_from_rfc3339(s).is_ok();
            one(ok, "invalid datetime")
        },
    },
];

/// Declares one zero-argument overload per format (overloads are plain
/// functions, so each needs its own), listed in `CONSTANTS`.
macro_rules! constants {
    ($($f:ident => $name:literal),* $(,)?) => {
        $(
            fn $f<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                let [] = take(args)?;
                constant($name)
            }
        )*
        const CONSTANTS: &[(&str, Function)] = &[$(($name, $f)),*];
    };
}

constants! {
    dns1123_label => "dns1123Label",
    dns1123_subdomain => "dns1123Subdomain",
    dns1035_label => "dns1035Label",
    qualified_name => "qualifiedName",
    dns1123_label_prefix => "dns1123LabelPrefix",
    dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    dns1035_label_prefix => "dns1035LabelPrefix",
    label_value => "labelValue",
    uri => "uri",
    uuid => "uuid",
    byte => "byte",
    date => "date",
    datetime => "datetime",
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(FORMAT_TYPE)?;
    for (name, op) in CONSTANTS {
        let name = format!("format.{name}");
        env.add_overload(&name, &name, vec![], *op)?;
    }
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload(
        "validate",
        "format-validate",
        FORMAT_TYPE,
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

fn find(name: &str) -> Option<Format> {
    FORMATS.iter().find(|f| f.name == name).copied()
}

/// The value of `format.<name>()`.
fn constant<'b, 'v>(name: &str) -> Result<CowVal<'b, 'v>, ExecutionError> {
    find(name)
        .map(CowVal::owned)
        .ok_or_else(|| ExecutionError::function_error("format", format!("no format {name:?}")))
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [name] = take(args)?;
    let found = find(text(name.as_ref())?);
    Ok(CowVal::owned(match found {
        Some(f) => CelOptional::of(Box::new(f)),
        None => CelOptional::none(),
    }))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [format, s] = take(args)?;
    let reasons = (arg::<Format>(format.as_ref())?.check)(text(s.as_ref())?);
    if reasons.is_empty() {
        return Ok(CowVal::owned(CelOptional::none()));
    }
    let list: Vec<Box<dyn Val + 'v>> = reasons
        .into_iter()
        .map(|r| Box::new(CelString::from(r)) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelOptional::of(Box::new(CelList::from(
        list,
    )))))
}
