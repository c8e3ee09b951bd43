//! Query parameters of API requests, parsed into typed options with
//! upstream's validation (list options, resourceVersion semantics, write
//! options). Every value goes through upstream's parameter conversions
//! ([`apimachinery::query_params`]): the first of repeated values counts,
//! booleans are false only for `0` and `false`, and an integer that does
//! not parse is a 400 with `strconv.ParseInt`'s message.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::query_params::QueryParams;
use apimachinery::status::ApiError;
use serde_json::json;
use storage::ReadVersion;

pub struct Query {
    params: QueryParams,
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Self {
        Query {
            params: QueryParams::parse(raw.unwrap_or("")),
        }
    }

    /// Every parameter, as upstream's parameter codec reads them.
    pub fn params(&self) -> &QueryParams {
        &self.params
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.first(key)
    }

    /// Every value of `key`, in order (`dryRun`).
    pub fn all(&self, key: &str) -> Vec<String> {
        self.params
            .all(key)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// A boolean option: set unless `0` or `false` (in any case).
    pub fn flag(&self, key: &str) -> bool {
        self.params.bool(key)
    }

    /// An optional boolean option (unset when absent).
    pub fn opt_flag(&self, key: &str) -> Option<bool> {
        self.params.opt_bool(key)
    }

    /// An optional integer option (a 400 when it does not parse).
    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.params.int64(key).map_err(ApiError::bad_request)
    }

    /// `dryRun=All` (the only value upstream accepts, however often given).
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        let values = self.params.all("dryRun");
        if values.iter().all(|v| *v == "All") {
            return Ok(!values.is_empty());
        }
        Err(ApiError::bad_request(format!(
            "dryRun: Unsupported value: \"{}\": supported values: \"All\"",
            values.iter().find(|v| **v != "All").copied().unwrap_or("")
        )))
    }

    /// `fieldValidation`: Ignore, Warn (the default) or Strict.
    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.get("fieldValidation") {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}"
            ))),
        }
    }

    /// The read version of a GET.
    pub fn get_version(&self) -> Result<ReadVersion, ApiError> {
        match self.get("resourceVersion").unwrap_or("") {
            "" => Ok(ReadVersion::MostRecent),
            "0" => Ok(ReadVersion::Any),
            rv => parse_rv(rv).map(ReadVersion::NotOlderThan),
        }
    }

    /// List options with upstream's resourceVersion/resourceVersionMatch
    /// rules (`ValidateListOptions`).
    pub fn list_options(&self) -> Result<ListParams, ApiError> {
        let limit = self.int("limit")?.filter(|l| *l > 0);
        let timeout_seconds = self.int("timeoutSeconds")?;
        let continue_token = self.get("continue").filter(|c| !c.is_empty());
        let rv = self.get("resourceVersion").unwrap_or("");
        let rv_match = self.get("resourceVersionMatch").unwrap_or("");
        let watch = self.flag("watch");
        let mut errors = Vec::new();
        if continue_token.is_some() && !rv.is_empty() && rv != "0" {
            errors.push(FieldError::forbidden(
                &Path::new("resourceVersion"),
                "specifying resource version is not allowed when using continue",
            ));
        }
        let send_initial_events = self.opt_flag("sendInitialEvents");
        if watch {
            watch_list_errors(rv_match, send_initial_events, continue_token, &mut errors);
        } else if send_initial_events.is_some() {
            errors.push(FieldError::forbidden(
                &Path::new("sendInitialEvents"),
                "sendInitialEvents is forbidden for list",
            ));
        }
        let version = match (rv_match, rv) {
            (_, _) if watch => watch_version(rv)?,
            ("", "") => ReadVersion::MostRecent,
            ("", "0") => ReadVersion::Any,
            // A paginated list at a given version reads exactly that version.
            ("", rv) if limit.is_some() && continue_token.is_none() => {
                ReadVersion::Exact(parse_rv(rv)?)
            }
            ("", rv) => ReadVersion::NotOlderThan(parse_rv(rv)?),
            (_, "") => {
                errors.push(FieldError::forbidden(
                    &Path::new("resourceVersionMatch"),
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
                ReadVersion::MostRecent
            }
            ("NotOlderThan", "0") => ReadVersion::Any,
            ("NotOlderThan", rv) => ReadVersion::NotOlderThan(parse_rv(rv)?),
            ("Exact", "0") => {
                errors.push(FieldError::forbidden(
                    &Path::new("resourceVersionMatch"),
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
                ReadVersion::Any
            }
            ("Exact", rv) => ReadVersion::Exact(parse_rv(rv)?),
            (other, _) => {
                errors.push(FieldError::not_supported(
                    &Path::new("resourceVersionMatch"),
                    json!(other),
                    &["Exact", "NotOlderThan", ""],
                ));
                ReadVersion::MostRecent
            }
        };
        if !errors.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", &errors));
        }
        Ok(ListParams {
            version,
            limit,
            continue_token: continue_token.map(str::to_owned),
            label_selector: self.get("labelSelector").unwrap_or("").to_owned(),
            field_selector: self.get("fieldSelector").unwrap_or("").to_owned(),
            watch,
            watch_from: if watch { parse_watch_rv(rv)? } else { 0 },
            allow_bookmarks: self.flag("allowWatchBookmarks"),
            send_initial_events,
            timeout_seconds,
        })
    }
}

/// Upstream's rules for `resourceVersionMatch` and `sendInitialEvents` on
/// a watch (the streaming list of the WatchList feature, on by default).
fn watch_list_errors(
    rv_match: &str,
    send_initial_events: Option<bool>,
    continue_token: Option<&str>,
    errors: &mut Vec<FieldError>,
) {
    let path = Path::new("resourceVersionMatch");
    if send_initial_events.is_some() && rv_match != "NotOlderThan" {
        errors.push(FieldError::forbidden(
            &path,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if rv_match.is_empty() {
        return;
    }
    if send_initial_events.is_none() {
        errors.push(FieldError::forbidden(
            &path,
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if rv_match != "NotOlderThan" {
        errors.push(FieldError::not_supported(
            &path,
            json!(rv_match),
            &["NotOlderThan"],
        ));
    }
    if continue_token.is_some() {
        errors.push(FieldError::forbidden(
            &path,
            "resourceVersionMatch is forbidden when continue is provided",
        ));
    }
}

/// The snapshot a watch's initial events come from: unset is the most
/// recent state, "0" any state, a revision one not older than it.
fn watch_version(rv: &str) -> Result<ReadVersion, ApiError> {
    Ok(match rv {
        "" => ReadVersion::MostRecent,
        "0" => ReadVersion::Any,
        rv => ReadVersion::NotOlderThan(parse_rv(rv)?),
    })
}

fn parse_rv(rv: &str) -> Result<i64, ApiError> {
    rv.parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

fn parse_watch_rv(rv: &str) -> Result<i64, ApiError> {
    if rv.is_empty() {
        return Ok(0);
    }
    parse_rv(rv)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

#[derive(Debug, Clone)]
pub struct ListParams {
    pub version: ReadVersion,
    pub limit: Option<i64>,
    pub continue_token: Option<String>,
    pub label_selector: String,
    pub field_selector: String,
    pub watch: bool,
    /// For watches: send events after this revision (0: current state first).
    pub watch_from: i64,
    pub allow_bookmarks: bool,
    /// For watches: upstream's `sendInitialEvents` (a streaming list when
    /// true; only what follows `resourceVersion` when false).
    pub send_initial_events: Option<bool>,
    pub timeout_seconds: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(q: &str) -> Result<ListParams, ApiError> {
        Query::parse(Some(q)).list_options()
    }

    #[test]
    fn resource_version_semantics_follow_upstream() {
        assert_eq!(list("").map(|l| l.version), Ok(ReadVersion::MostRecent));
        assert_eq!(
            list("resourceVersion=0").map(|l| l.version),
            Ok(ReadVersion::Any)
        );
        assert_eq!(
            list("resourceVersion=7").map(|l| l.version),
            Ok(ReadVersion::NotOlderThan(7))
        );
        assert_eq!(
            list("resourceVersion=7&limit=5").map(|l| l.version),
            Ok(ReadVersion::Exact(7))
        );
        assert_eq!(
            list("resourceVersion=7&resourceVersionMatch=Exact").map(|l| l.version),
            Ok(ReadVersion::Exact(7))
        );
    }

    #[test]
    fn invalid_combinations_are_rejected() {
        let err = list("resourceVersionMatch=Exact").expect_err("forbidden");
        assert_eq!(err.code, 422);
        assert_eq!(list("resourceVersion=abc").expect_err("bad").code, 400);
        assert_eq!(list("limit=x").expect_err("bad").code, 400);
        assert_eq!(
            list("continue=abc&resourceVersion=5")
                .expect_err("bad")
                .code,
            422
        );
    }

    #[test]
    fn watch_lists_follow_upstream_rules() {
        let ok = list("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
            .expect("a streaming list");
        assert_eq!(ok.send_initial_events, Some(true));
        assert_eq!(ok.version, ReadVersion::MostRecent);
        let at = list(
            "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=9",
        );
        assert_eq!(at.map(|l| l.version), Ok(ReadVersion::NotOlderThan(9)));
        for bad in [
            "watch=1&sendInitialEvents=true",
            "watch=1&resourceVersionMatch=NotOlderThan",
            "watch=1&sendInitialEvents=false&resourceVersionMatch=Exact&resourceVersion=5",
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=5",
        ] {
            assert_eq!(list(bad).expect_err(bad).code, 422, "{bad}");
        }
        let err = list("watch=1&sendInitialEvents=true").expect_err("no match");
        assert!(err
            .message
            .contains("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        // Any value but 0 and false is true, as upstream converts it.
        let maybe = list("watch=1&sendInitialEvents=maybe&resourceVersionMatch=NotOlderThan");
        assert_eq!(maybe.map(|l| l.send_initial_events), Ok(Some(true)));
    }

    #[test]
    fn parameters_convert_as_upstream() {
        for on in ["watch=True", "watch=yes", "watch=1", "watch=", "watch=TRUE"] {
            assert_eq!(list(on).map(|l| l.watch), Ok(true), "{on}");
        }
        for off in [
            "",
            "watch=false",
            "watch=False",
            "watch=0",
            "watch=0&watch=1",
        ] {
            assert_eq!(list(off).map(|l| l.watch), Ok(false), "{off}");
        }
        assert_eq!(list("limit=5&limit=abc").map(|l| l.limit), Ok(Some(5)));
        assert_eq!(list("bogus=1&limit=2").map(|l| l.limit), Ok(Some(2)));
        let err = list("limit=abc").expect_err("not a number");
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "strconv.ParseInt: parsing \"abc\": invalid syntax")
        );
        let err = list("timeoutSeconds=99999999999999999999").expect_err("overflow");
        assert_eq!(
            err.message,
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(list("limit=").expect_err("empty").code, 400);
        assert_eq!(
            list("timeoutSeconds=30").map(|l| l.timeout_seconds),
            Ok(Some(30))
        );
    }

    #[test]
    fn dry_run_accepts_only_all() {
        assert_eq!(Query::parse(Some("dryRun=All")).dry_run(), Ok(true));
        assert_eq!(
            Query::parse(Some("dryRun=All&dryRun=All")).dry_run(),
            Ok(true)
        );
        assert_eq!(Query::parse(None).dry_run(), Ok(false));
        for bad in ["dryRun=Some", "dryRun=", "dryRun=All&dryRun=x"] {
            assert!(Query::parse(Some(bad)).dry_run().is_err(), "{bad}");
        }
    }
}
