//! The tokens controller (upstream's kube-controller-manager
//! `serviceaccount-token` controller), run in-process so that a lone server
//! fills `kubernetes.io/service-account-token` secrets: each one naming its
//! account in the `kubernetes.io/service-account.name` annotation gets a
//! signed legacy token, the cluster CA (`ca.crt`) and its namespace, and
//! the account's UID annotation. A secret whose account is missing (or was
//! recreated with another UID) is deleted, as are an account's token
//! secrets when the account is deleted. Filling only empty fields keeps it
//! harmless next to a real controller-manager.

use std::convert::Infallible;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use apiserver::registry::DeleteOptions;
use apiserver::server::GenericApiServer;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};
use storage::{ListOptions, Preconditions};

use super::authentication::AuthenticationSetup;
use crate::authenticator::serviceaccount::getter::str_at;
use crate::authenticator::serviceaccount::{legacy, TokenGenerator};

use crate::controller_manager::ControllerManager;

const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
const NAME_POINTER: &str = "/metadata/annotations/kubernetes.io~1service-account.name";
const UID_POINTER: &str = "/metadata/annotations/kubernetes.io~1service-account.uid";

struct Controller {
    secrets: Arc<Store>,
    accounts: Arc<Store>,
    requests: Arc<crate::authenticator::token_request::TokenRequests>,
    /// PEM of the cluster CA, for `ca.crt`.
    root_ca: Option<String>,
}

/// Starts the controller after the server starts, when a signing key is
/// configured (without one no token can be made).
pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    setup: &AuthenticationSetup,
    manager: &ControllerManager,
) {
    let (Some(secrets), Some(accounts), Some(requests)) = (
        server.store("", "v1", "secrets"),
        server.store("", "v1", "serviceaccounts"),
        setup.token_requests.clone(),
    ) else {
        return;
    };
    let (Some(secret_informer), Some(account_informer)) = (
        informers.informer_for("", "secrets"),
        informers.informer_for("", "serviceaccounts"),
    ) else {
        return;
    };
    let controller = Arc::new(Controller {
        secrets,
        accounts,
        requests,
        root_ca: setup.root_ca.clone(),
    });
    let manager = manager.clone();
    server.add_post_start_hook(
        "start-service-account-token-controller",
        Arc::new(move |_ctx| {
            let informers = [secret_informer.clone(), account_informer.clone()];
            let controller = controller.clone();
            manager.spawn(move |stop| controller.clone().run(informers.clone(), stop));
            Box::pin(async { Ok(()) })
        }),
    );
}

fn is_token_secret(secret: &Value) -> bool {
    str_at(secret, "/type") == TOKEN_TYPE && secret.pointer("/metadata/deletionTimestamp").is_none()
}

/// The decoded bytes of a secret's data key.
fn data(secret: &Value, key: &str) -> Option<Vec<u8>> {
    let encoded = secret.get("data")?.get(key)?.as_str()?;
    STANDARD.decode(encoded).ok()
}

/// A deleted account whose token secrets go: namespace, name and uid.
type AccountKey = (String, String, String);

impl Controller {
    /// Syncs token secrets as they are added or change, by namespace and
    /// name, and deletes the tokens of deleted accounts.
    async fn run(self: Arc<Self>, informers: [Arc<SharedInformer>; 2], stop: CancellationToken) {
        let [secrets, accounts] = informers;
        let secret_queue = RateLimitingQueue::<(String, String)>::with_default_limiter();
        let enqueue = secret_queue.clone();
        // A look at each Secret, not a tree kept for it in the watch cache
        // (see `storage::object`).
        let on_secret = ResourceEventHandlerFuncs::on_any(move |secret| {
            secret.peek(|secret| {
                if is_token_secret(secret) {
                    let ns = str_at(secret, "/metadata/namespace").to_owned();
                    enqueue.add((ns, str_at(secret, "/metadata/name").to_owned()));
                }
            })
        });
        secrets.add_event_handler_until(on_secret, &stop);
        let account_queue = RateLimitingQueue::<AccountKey>::with_default_limiter();
        let enqueue = account_queue.clone();
        let on_account = ResourceEventHandlerFuncs {
            delete: Some(Box::new(move |account| {
                let field = |f: &str| str_at(account, f).to_owned();
                let key = ("/metadata/namespace", "/metadata/name", "/metadata/uid");
                enqueue.add((field(key.0), field(key.1), field(key.2)));
            })),
            ..Default::default()
        };
        accounts.add_event_handler_until(on_account, &stop);
        secrets.wait_for_sync().await;
        accounts.wait_for_sync().await;
        let (lister, this) = (secrets.lister(), self.clone());
        let sync_secrets = run_workers(secret_queue, 1, stop.clone(), move |(ns, name)| {
            let (lister, this) = (lister.clone(), this.clone());
            async move {
                let secret = lister.get(Some(&ns), &name);
                if let Some(secret) = secret.filter(|s| is_token_secret(s)) {
                    this.sync_secret(&secret).await;
                }
                Ok::<(), Infallible>(())
            }
        });
        let delete_tokens = run_workers(account_queue, 1, stop, move |account: AccountKey| {
            let this = self.clone();
            async move {
                this.delete_tokens_of(&account).await;
                Ok::<(), Infallible>(())
            }
        });
        tokio::join!(sync_secrets, delete_tokens);
    }

    /// Deletes the secret, or fills what it lacks from its account.
    async fn sync_secret(&self, secret: &Value) {
        let ns = str_at(secret, "/metadata/namespace");
        let name = str_at(secret, "/metadata/name");
        let sa_name = str_at(secret, NAME_POINTER);
        if sa_name.is_empty() {
            return;
        }
        let account = match self
            .accounts
            .get(Some(ns), sa_name, Default::default())
            .await
        {
            Ok(account) => Some(account),
            Err(e) if e.code == 404 => None,
            Err(e) => {
                tracing::warn!(namespace = ns, secret = name, error = %e.message, "reading the service account of a token secret failed");
                return;
            }
        };
        let wanted_uid = str_at(secret, UID_POINTER);
        let account =
            account.filter(|a| wanted_uid.is_empty() || str_at(a, "/metadata/uid") == wanted_uid);
        let Some(account) = account else {
            self.delete_secret(secret).await;
            return;
        };
        if let Err(e) = self.fill(secret, &account).await {
            tracing::warn!(namespace = ns, secret = name, error = %e.message, "filling a service account token secret failed");
        }
    }

    /// Writes the token, CA, namespace and account UID when missing.
    async fn fill(&self, secret: &Value, account: &Value) -> Result<(), ApiError> {
        let ns = str_at(secret, "/metadata/namespace").to_owned();
        let name = str_at(secret, "/metadata/name").to_owned();
        let ca = self.root_ca.as_deref().unwrap_or("").as_bytes().to_vec();
        let needs_ca = !ca.is_empty() && data(secret, "ca.crt").as_deref() != Some(ca.as_slice());
        let needs_ns = data(secret, "namespace").as_deref() != Some(ns.as_bytes());
        let needs_token = data(secret, legacy::TOKEN_KEY).is_none_or(|t| t.is_empty());
        let needs_uid = str_at(secret, UID_POINTER).is_empty();
        if !(needs_ca || needs_ns || needs_token || needs_uid) {
            return Ok(());
        }
        let token = if needs_token {
            Some(sign(&self.requests.generator, account, &name)?)
        } else {
            None
        };
        let sa_uid = str_at(account, "/metadata/uid").to_owned();
        let sa_name = str_at(account, "/metadata/name").to_owned();
        let secret_uid = str_at(secret, "/metadata/uid").to_owned();
        let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
            let mut live = current
                .cloned()
                .ok_or_else(|| ApiError::internal_error("the secret is gone"))?;
            if str_at(&live, "/metadata/uid") != secret_uid {
                return Err(ApiError::conflict(
                    "",
                    "secrets",
                    "",
                    "the secret was replaced",
                ));
            }
            let annotations = live
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
                .map(|meta| meta.entry("annotations").or_insert_with(|| json!({})));
            if let Some(Value::Object(annotations)) = annotations {
                annotations.insert(NAME_ANNOTATION.into(), json!(sa_name));
                annotations.insert(UID_ANNOTATION.into(), json!(sa_uid));
            }
            let mut fields = vec![("namespace", ns.as_bytes())];
            if !ca.is_empty() {
                fields.push(("ca.crt", ca.as_slice()));
            }
            // A token written meanwhile (by another controller) is kept.
            let has_token = data(&live, legacy::TOKEN_KEY).is_some_and(|t| !t.is_empty());
            if let (Some(token), false) = (&token, has_token) {
                fields.push((legacy::TOKEN_KEY, token.as_bytes()));
            }
            if let Some(obj) = live.as_object_mut() {
                let data = obj.entry("data").or_insert_with(|| json!({}));
                if !data.is_object() {
                    *data = json!({});
                }
                if let Some(data) = data.as_object_mut() {
                    for (key, value) in fields {
                        data.insert(key.to_owned(), json!(STANDARD.encode(value)));
                    }
                }
            }
            Ok(live)
        });
        let name = str_at(secret, "/metadata/name");
        let ns = str_at(secret, "/metadata/namespace");
        self.secrets
            .update(
                Some(ns),
                name,
                Target::Main,
                mutate,
                &WriteOptions::default(),
            )
            .await
            .map(|_| ())
            .or_else(|e| if e.code == 404 { Ok(()) } else { Err(e) })
    }

    /// Deletes a token secret, only the incarnation that was looked at.
    async fn delete_secret(&self, secret: &Value) {
        let ns = str_at(secret, "/metadata/namespace");
        let name = str_at(secret, "/metadata/name");
        let opts = DeleteOptions {
            preconditions: Some(Preconditions {
                uid: Some(str_at(secret, "/metadata/uid").to_owned()),
                resource_version: None,
            }),
            ..DeleteOptions::default()
        };
        match self.secrets.delete(Some(ns), name, &opts).await {
            Ok(_) => {}
            Err(e) if matches!(e.code, 404 | 409) => {}
            Err(e) => {
                tracing::warn!(namespace = ns, secret = name, error = %e.message, "deleting a service account token secret failed")
            }
        }
    }

    /// Deletes the token secrets of a deleted account.
    async fn delete_tokens_of(&self, (ns, sa_name, sa_uid): &AccountKey) {
        let (ns, sa_name, sa_uid) = (ns.as_str(), sa_name.as_str(), sa_uid.as_str());
        let list = match self.secrets.list(Some(ns), ListOptions::default()).await {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(namespace = ns, error = %e.message, "listing secrets failed");
                return;
            }
        };
        for secret in list.items {
            let uid = str_at(&secret, UID_POINTER);
            if is_token_secret(&secret)
                && str_at(&secret, NAME_POINTER) == sa_name
                && (uid.is_empty() || uid == sa_uid)
            {
                self.delete_secret(&secret).await;
            }
        }
    }
}

/// A signed legacy token of `account` for the secret `secret_name`.
fn sign(
    generator: &TokenGenerator,
    account: &Value,
    secret_name: &str,
) -> Result<String, ApiError> {
    generator
        .sign(&legacy::claims(account, secret_name))
        .map_err(ApiError::internal_error)
}
