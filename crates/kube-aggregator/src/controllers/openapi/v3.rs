//! The OpenAPI v3 document of a remote APIService's group version
//! (upstream's `pkg/controllers/openapiv3`, downloaded by this controller
//! with the v2 one): the backend's `/openapi/v3`
//! index names the document's URL (with its hash), which is downloaded
//! again only when that changes, and served by the chain at
//! `/openapi/v3/apis/<group>/<version>`. Only the APIService's own group
//! version is taken (upstream joins every path a backend lists, the last
//! one read winning where two servers list the same).

use std::sync::Arc;

use apiserver::authentication::user::UserInfo;
use http::StatusCode;
use serde_json::Value;

use super::downloader::{self, Handler};

/// Path, document and the URL (with hash) it was read from.
pub type Document = (String, Arc<Value>, String);

fn aggregator() -> UserInfo {
    UserInfo {
        name: "system:aggregator".into(),
        ..UserInfo::default()
    }
}

/// The group version's document: `held` again when the index still names
/// the same URL, None when the backend lists none.
pub async fn download(
    handler: &Handler,
    held: Option<&Document>,
    group: &str,
    version: &str,
) -> Result<Option<Document>, String> {
    let index = downloader::get(
        handler,
        "/openapi/v3",
        "application/json",
        None,
        aggregator(),
    )
    .await?;
    if index.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if index.status != StatusCode::OK {
        return Err(format!(
            "failed to download /openapi/v3: {}",
            index.status.as_u16()
        ));
    }
    let index: Value = serde_json::from_slice(&index.body).map_err(|e| e.to_string())?;
    let path = format!("apis/{group}/{version}");
    let Some(url) = index["paths"][&path]["serverRelativeURL"].as_str() else {
        return Ok(None);
    };
    if let Some(held) = held.filter(|h| h.2 == url) {
        return Ok(Some(held.clone()));
    }
    let doc = downloader::get(handler, url, "application/json", None, aggregator()).await?;
    if doc.status != StatusCode::OK {
        return Err(format!("failed to download {url}: {}", doc.status.as_u16()));
    }
    let parsed: Value = serde_json::from_slice(&doc.body).map_err(|e| e.to_string())?;
    Ok(Some((path, Arc::new(parsed), url.to_owned())))
}
