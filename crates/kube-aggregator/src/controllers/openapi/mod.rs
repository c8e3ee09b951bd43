//! Keeps the OpenAPI documents of remote APIServices (upstream's
//! `pkg/controllers/openapi` `AggregationController` with the v3 one of
//! `openapiv3`): a second after an APIService is added or changed, then
//! every minute, its server's `/openapi/v2` (filtered and merged by
//! [`aggregator`]) and its group version's v3 document are downloaded;
//! a failure is retried with a backoff from a minute to an hour.

pub mod aggregator;
pub mod downloader;
pub mod v3;

use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::user::UserInfo;
use client_go::tools::cache::{Lister, SharedInformer};
use client_go::util::workqueue::{
    run_workers, ItemExponentialFailureRateLimiter, RateLimitingQueue,
};
use client_go::CancellationToken;
use http::StatusCode;
use serde_json::Value;

use super::follow_remote;
use aggregator::{filter, Entry, Specs};
use downloader::{Handler, Handlers};

/// upstream's `successfulUpdateDelay` and `failedUpdateMaxExpDelay`.
const REFRESH: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// What the controller reads and writes.
#[derive(Clone)]
pub struct Controller {
    pub handlers: Handlers,
    pub specs: Specs,
}

impl Controller {
    /// Follows the APIServices of `informer` until `stop`.
    pub async fn run(self, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let limiter = ItemExponentialFailureRateLimiter::new(REFRESH, MAX_BACKOFF);
        let queue = RateLimitingQueue::new(limiter);
        follow_remote(
            &informer,
            &queue,
            Duration::from_secs(1),
            REFRESH,
            stop.clone(),
        );
        informer.wait_for_sync().await;
        let lister = informer.lister();
        run_workers(queue, 1, stop, move |name: String| {
            let (this, lister) = (self.clone(), lister.clone());
            async move { this.sync(&lister, &name).await }
        })
        .await;
    }

    /// Downloads the documents of the APIService `name` (or forgets them).
    async fn sync(&self, lister: &Lister, name: &str) -> Result<(), String> {
        let api_service = lister.get(None, name).filter(|s| super::is_remote(s));
        let Some(api_service) = api_service else {
            self.specs.update(name, |_| {}, false);
            return Ok(());
        };
        let spec = &api_service["spec"];
        let text = |k: &str| spec[k].as_str().unwrap_or_default().to_owned();
        let (group, version) = (text("group"), text("version"));
        let Some(handler) = (self.handlers)(&group, &version) else {
            return Err(format!("no route to APIService {name} yet"));
        };
        let held = self.specs.get(name).unwrap_or_default();
        let priority = (
            spec["groupPriorityMinimum"].as_i64().unwrap_or_default(),
            spec["versionPriority"].as_i64().unwrap_or_default(),
        );
        let v2 = download_v2(&handler, &held, &group, &version).await;
        let v3 = v3::download(&handler, held.v3.as_ref(), &group, &version).await;
        let v3_changed =
            matches!(&v3, Ok(d) if d.as_ref().map(|d| &d.2) != held.v3.as_ref().map(|h| &h.2));
        if priority != held.priority || matches!(v2, Ok(Some(_))) || v3_changed {
            self.specs.update(
                name,
                |e| {
                    e.priority = priority;
                    if let Ok(Some(v2)) = &v2 {
                        e.v2 = Some(v2.clone());
                    }
                    if let Ok(v3) = &v3 {
                        e.v3 = v3.clone();
                    }
                },
                true,
            );
        }
        v2.map(|_| ()).and(v3.map(|_| ()))
    }
}

/// The filtered v2 document when it changed (None on a 304).
async fn download_v2(
    handler: &Handler,
    held: &Entry,
    group: &str,
    version: &str,
) -> Result<Option<(Arc<Value>, String)>, String> {
    let etag = held.v2.as_ref().map(|(_, e)| e.as_str());
    let user = UserInfo {
        name: "system:aggregator".into(),
        ..UserInfo::default()
    };
    let got = downloader::get(handler, "/openapi/v2", "application/json", etag, user).await?;
    let same = !got.etag.is_empty() && etag == Some(got.etag.as_str());
    match got.status {
        StatusCode::NOT_MODIFIED => Ok(None),
        StatusCode::OK if same => Ok(None),
        StatusCode::OK => {
            let (group, version) = (group.to_owned(), version.to_owned());
            let filtered = tokio::task::spawn_blocking(move || {
                serde_json::from_slice::<Value>(&got.body)
                    .map(|spec| Arc::new(filter(&spec, &group, &version)))
                    .map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())??;
            Ok(Some((filtered, got.etag)))
        }
        status => Err(format!(
            "failed to download /openapi/v2: {}",
            status.as_u16()
        )),
    }
}
