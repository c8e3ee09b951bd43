//! Network plugins: DefaultIngressClass (an Ingress that names no class
//! gets the default IngressClass) and DenyServiceExternalIPs (no new
//! `spec.externalIPs` on Services).

use std::collections::BTreeSet;

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::service_account::object_mut;
use apiserver::admission::initializer::{text, Stores};

const NETWORKING: &str = "networking.k8s.io";
const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The deprecated way of naming a class; an Ingress carrying it is left alone.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// DefaultIngressClass: sets `spec.ingressClassName` of new Ingresses that
/// name no class, from the IngressClass annotated as the default.
pub struct DefaultIngressClass {
    pub stores: Stores,
}

impl Handler for DefaultIngressClass {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

impl DefaultIngressClass {
    /// The default class; when several are marked, the newest (then the
    /// first by name), as upstream picks.
    async fn default_class(&self) -> Result<Option<String>, ApiError> {
        let classes = self.stores.list(NETWORKING, "ingressclasses", None).await?;
        let key = |c: &Value| {
            (
                text(c, "/metadata/creationTimestamp")
                    .unwrap_or_default()
                    .to_owned(),
                std::cmp::Reverse(text(c, "/metadata/name").unwrap_or_default().to_owned()),
            )
        };
        Ok(classes
            .iter()
            .filter(|c| {
                c.pointer("/metadata/annotations")
                    .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
                    .and_then(Value::as_str)
                    == Some("true")
            })
            .max_by_key(|c| key(c))
            .and_then(|c| text(c, "/metadata/name"))
            .map(str::to_owned))
    }
}

#[async_trait]
impl MutationInterface for DefaultIngressClass {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !a.is(NETWORKING, "ingresses") || !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(ingress) = a.object.as_ref() else {
            return Ok(());
        };
        let named = ingress
            .pointer("/spec/ingressClassName")
            .is_some_and(|n| !n.is_null());
        let annotated = ingress
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(CLASS_ANNOTATION))
            .is_some();
        if named || annotated {
            return Ok(());
        }
        let Some(class) = self.default_class().await? else {
            return Ok(());
        };
        if let Some(spec) = a.object.as_mut().and_then(|i| object_mut(i, "spec")) {
            spec.insert("ingressClassName".into(), json!(class));
        }
        Ok(())
    }
}

/// DenyServiceExternalIPs: a Service may keep external IPs it has but not
/// gain new ones.
pub struct DenyServiceExternalIPs;

impl Handler for DenyServiceExternalIPs {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

fn external_ips(svc: &Value) -> BTreeSet<&str> {
    svc.pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[async_trait]
impl ValidationInterface for DenyServiceExternalIPs {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !a.is("", "services") || !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(svc) = a.object.as_ref() else {
            return Ok(());
        };
        let new = external_ips(svc);
        let old = a
            .old_object
            .as_deref()
            .map(|o| external_ips(o))
            .unwrap_or_default();
        if new.is_subset(&old) {
            return Ok(());
        }
        Err(a.forbidden("Use of external IPs is denied by admission control"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::{refusal, stores, user, Write};

    fn class(name: &str, default: bool) -> (&'static str, &'static str, Value) {
        let annotations = json!({DEFAULT_CLASS_ANNOTATION: default.to_string()});
        let class = json!({"metadata": {"name": name, "annotations": annotations},
            "spec": {"controller": "example.com/ingress"}});
        (NETWORKING, "ingressclasses", class)
    }

    async fn admitted(plugin: &DefaultIngressClass, ingress: Value) -> Value {
        let mut attrs = Write::new(NETWORKING, "ingresses", Operation::Create)
            .object(ingress)
            .by(user("alice", &[]));
        assert_eq!(refusal(plugin.admit(&mut attrs).await), "");
        attrs.object.unwrap_or_default()
    }

    #[tokio::test]
    async fn ingresses_without_a_class_get_the_default_one() {
        let plugin = DefaultIngressClass {
            stores: stores(vec![class("plain", false), class("main", true)]).await,
        };
        let ingress = json!({"metadata": {"name": "web"}, "spec": {}});
        let admitted_ingress = admitted(&plugin, ingress).await;
        assert_eq!(admitted_ingress["spec"]["ingressClassName"], "main");
        let named = json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "plain"}});
        assert_eq!(admitted(&plugin, named.clone()).await, named);
        let annotated = json!({"metadata": {"name": "web",
            "annotations": {CLASS_ANNOTATION: "nginx"}}, "spec": {}});
        assert_eq!(admitted(&plugin, annotated.clone()).await, annotated);
    }

    #[tokio::test]
    async fn several_defaults_resolve_to_the_first_name_among_the_newest() {
        // Created within the same second: the first name wins.
        let plugin = DefaultIngressClass {
            stores: stores(vec![class("b", true), class("a", true)]).await,
        };
        let ingress = json!({"metadata": {"name": "web"}, "spec": {}});
        assert_eq!(
            admitted(&plugin, ingress).await["spec"]["ingressClassName"],
            "a"
        );
        let none = DefaultIngressClass {
            stores: stores(vec![class("plain", false)]).await,
        };
        let ingress = json!({"metadata": {"name": "web"}, "spec": {}});
        assert_eq!(admitted(&none, ingress.clone()).await, ingress);
    }

    #[tokio::test]
    async fn only_external_ips_a_service_already_has_are_allowed() {
        let svc = |ips: Value| json!({"metadata": {"name": "s"}, "spec": {"externalIPs": ips}});
        let write = |op, new: Value, old: Option<Value>| {
            let w = Write::new("", "services", op).object(new).name("s");
            match old {
                Some(old) => w.old(old),
                None => w,
            }
            .by(user("alice", &[]))
        };
        let plugin = DenyServiceExternalIPs;
        let denied =
            "services \"s\" is forbidden: Use of external IPs is denied by admission control";
        let create = write(Operation::Create, svc(json!(["1.2.3.4"])), None);
        assert_eq!(refusal(plugin.validate(&create).await), denied);
        let create = write(Operation::Create, svc(json!([])), None);
        assert_eq!(refusal(plugin.validate(&create).await), "");
        let keep = write(
            Operation::Update,
            svc(json!(["1.2.3.4"])),
            Some(svc(json!(["5.6.7.8", "1.2.3.4"]))),
        );
        assert_eq!(refusal(plugin.validate(&keep).await), "");
        let add = write(
            Operation::Update,
            svc(json!(["1.2.3.4", "9.9.9.9"])),
            Some(svc(json!(["1.2.3.4"]))),
        );
        assert_eq!(refusal(plugin.validate(&add).await), denied);
    }
}
