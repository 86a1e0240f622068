//! The `Exposed` condition: whether what routes clients to the server from outside the cluster
//! took it, read from the child's own status. An HTTPRoute's `status.parents[].conditions`
//! (`Accepted`, `ResolvedRefs`, as each Gateway's controller writes them, the refusal's reason and
//! message quoted) or an Ingress's `status.loadBalancer` (an address once a controller serves it).
//! A server without `spec.ingress` or `exposure: gateway` has no such condition. Pure.

use super::build::HttpRoute;
use super::status::{State, state};
use crate::resource::{Exposure, GatewayParentRef, MCPServer};
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use serde_json::Value;

/// Reason: the route or Ingress is served.
pub const ADMITTED: &str = "Admitted";
/// Reason: no controller has answered yet.
pub const PENDING: &str = "Pending";
/// Reason: a Gateway refused the route.
pub const ROUTE_REFUSED: &str = "RouteRefused";

/// Longest message of a controller quoted.
const MAX_QUOTE: usize = 300;

fn quote(text: &str) -> String {
    let mut text = text.trim().to_owned();
    if text.len() > MAX_QUOTE {
        let mut end = MAX_QUOTE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The `Exposed` condition of `server` from its cached Ingress or HTTPRoute; `None` when the
/// server is not exposed outside the cluster.
pub fn exposed(
    server: &MCPServer,
    ingress: Option<&Ingress>,
    route: Option<&HttpRoute>,
) -> Option<State> {
    let spec = &server.spec.deployment;
    if spec.exposure == Some(Exposure::Gateway) {
        let gateway = spec.gateway.as_ref()?;
        return Some(from_route(server, &gateway.parent_refs, route));
    }
    let declared = spec.ingress.as_ref()?;
    let Some(ingress) = ingress else {
        return Some(state(
            PENDING_STATUS,
            PENDING,
            "the Ingress is being created".into(),
        ));
    };
    let addresses: Vec<String> = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|a| a.ip.clone().or_else(|| a.hostname.clone()))
        .collect();
    Some(if addresses.is_empty() {
        state(
            PENDING_STATUS,
            PENDING,
            format!(
                "the Ingress has no address yet: is an ingress controller{} running?",
                declared
                    .class_name
                    .as_ref()
                    .map(|c| format!(" of class {c}"))
                    .unwrap_or_default()
            ),
        )
    } else {
        state(
            "True",
            ADMITTED,
            format!("the Ingress is served at {}", addresses.join(", ")),
        )
    })
}

const PENDING_STATUS: &str = "Unknown";

/// `namespace/name` (and `/section`) of a parent, as messages name it.
fn parent_name(namespace: &str, name: &str, section: Option<&str>) -> String {
    match section {
        Some(section) => format!("Gateway {namespace}/{name} (listener {section})"),
        None => format!("Gateway {namespace}/{name}"),
    }
}

fn from_route(
    server: &MCPServer,
    parents: &[GatewayParentRef],
    route: Option<&HttpRoute>,
) -> State {
    let Some(route) = route else {
        return state(
            PENDING_STATUS,
            PENDING,
            "the HTTPRoute is being created".into(),
        );
    };
    let own_namespace = server.namespace().unwrap_or_default();
    let generation = route.metadata.generation;
    let statuses: Vec<&Value> = route
        .status
        .as_ref()
        .and_then(|s| s.get("parents"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let mut refused = Vec::new();
    let mut waiting = Vec::new();
    let mut admitted = Vec::new();
    for parent in parents {
        let namespace = parent.namespace.as_deref().unwrap_or(&own_namespace);
        let name = parent_name(namespace, &parent.name, parent.section_name.as_deref());
        let entry = statuses.iter().find(|s| {
            let reference = &s["parentRef"];
            reference["name"].as_str() == Some(parent.name.as_str())
                && reference["namespace"].as_str().unwrap_or(&own_namespace) == namespace
                && reference["sectionName"].as_str() == parent.section_name.as_deref()
        });
        let conditions: Vec<&Value> = entry
            .and_then(|e| e["conditions"].as_array())
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        // A condition written for an older generation of the route says nothing of this one.
        let current = |c: &&&Value| {
            c["observedGeneration"]
                .as_i64()
                .is_none_or(|seen| Some(seen) >= generation)
        };
        let find = |type_: &str| {
            conditions
                .iter()
                .filter(current)
                .find(|c| c["type"].as_str() == Some(type_))
                .copied()
        };
        let (accepted, resolved) = (find("Accepted"), find("ResolvedRefs"));
        let failed = [accepted, resolved]
            .into_iter()
            .flatten()
            .find(|c| c["status"].as_str() == Some("False"));
        if let Some(c) = failed {
            refused.push(format!(
                "{name} refused it: {}={} {}: {}",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default(),
                quote(c["message"].as_str().unwrap_or_default())
            ));
        } else if [accepted, resolved]
            .iter()
            .all(|c| c.is_some_and(|c| c["status"].as_str() == Some("True")))
        {
            admitted.push(name);
        } else {
            waiting.push(name);
        }
    }
    if !refused.is_empty() {
        return state("False", ROUTE_REFUSED, refused.join("; "));
    }
    if !waiting.is_empty() {
        return state(
            PENDING_STATUS,
            PENDING,
            format!(
                "no answer yet from {}: is a Gateway API controller running for it?",
                waiting.join(", ")
            ),
        );
    }
    state(
        "True",
        ADMITTED,
        format!("the HTTPRoute is accepted by {}", admitted.join(", ")),
    )
}

/// What of an Ingress or HTTPRoute the condition reads (its status), hashed: a change is news
/// for the controller even though the object's generation did not move.
pub fn status_digest(status: &impl serde::Serialize) -> u64 {
    super::memory::hash_of(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;

    fn gateway_server() -> MCPServer {
        server(
            "
            metadata: {name: weather, namespace: t2}
            spec:
              exposure: gateway
              gateway: {host: gw.example.com, parentRefs: [{name: shared, namespace: gateway-system, sectionName: https}]}
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            ",
        )
    }

    fn route(status: &str) -> HttpRoute {
        let mut route: HttpRoute = serde_yaml_ng::from_str(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: weather, generation: 2}",
        )
        .unwrap();
        route.status = Some(serde_yaml_ng::from_str(status).unwrap());
        route
    }

    fn parents(conditions: &str) -> String {
        format!(
            "parents: [{{parentRef: {{group: gateway.networking.k8s.io, kind: Gateway, name: shared, namespace: gateway-system, sectionName: https}}, controllerName: example.com/gw, conditions: {conditions}}}]"
        )
    }

    fn summary(s: &State) -> (&str, &str, &str) {
        (s.status.as_str(), s.reason.as_str(), s.message.as_str())
    }

    #[test]
    fn a_route_refused_by_its_gateway_quotes_the_gateway() {
        let refused = route(&parents(
            "[{type: Accepted, status: 'False', reason: NotAllowedByListeners, message: 'no listener allows routes from namespace t2', observedGeneration: 2}, {type: ResolvedRefs, status: 'True', reason: ResolvedRefs, observedGeneration: 2}]",
        ));
        let s = exposed(&gateway_server(), None, Some(&refused)).unwrap();
        assert_eq!(
            summary(&s),
            (
                "False",
                "RouteRefused",
                "Gateway gateway-system/shared (listener https) refused it: Accepted=False NotAllowedByListeners: no listener allows routes from namespace t2"
            )
        );
    }

    #[test]
    fn a_route_is_admitted_once_accepted_and_resolved_for_its_generation() {
        let ok = route(&parents(
            "[{type: Accepted, status: 'True', reason: Accepted, observedGeneration: 2}, {type: ResolvedRefs, status: 'True', reason: ResolvedRefs, observedGeneration: 2}]",
        ));
        let s = exposed(&gateway_server(), None, Some(&ok)).unwrap();
        assert_eq!(s.reason, "Admitted");
        // The same answer about an older generation: not yet known for this one.
        let old = route(&parents(
            "[{type: Accepted, status: 'True', reason: Accepted, observedGeneration: 1}, {type: ResolvedRefs, status: 'True', reason: ResolvedRefs, observedGeneration: 1}]",
        ));
        let s = exposed(&gateway_server(), None, Some(&old)).unwrap();
        assert_eq!(
            (s.status.as_str(), s.reason.as_str()),
            ("Unknown", "Pending")
        );
        assert!(
            s.message.contains("Gateway gateway-system/shared"),
            "{}",
            s.message
        );
        let none = route("{}");
        assert_eq!(
            exposed(&gateway_server(), None, Some(&none))
                .unwrap()
                .reason,
            "Pending"
        );
    }

    #[test]
    fn an_ingress_is_admitted_with_an_address_and_an_internal_server_has_no_condition() {
        let with_ingress = server(
            "
            metadata: {name: weather, namespace: t2}
            spec:
              ingress: {host: mcp.example.com, className: nginx}
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            ",
        );
        let pending: Ingress = serde_yaml_ng::from_str("metadata: {name: weather}").unwrap();
        let s = exposed(&with_ingress, Some(&pending), None).unwrap();
        assert_eq!(
            summary(&s),
            (
                "Unknown",
                "Pending",
                "the Ingress has no address yet: is an ingress controller of class nginx running?"
            )
        );
        let served: Ingress = serde_yaml_ng::from_str(
            "metadata: {name: weather}\nstatus: {loadBalancer: {ingress: [{ip: 203.0.113.7}]}}",
        )
        .unwrap();
        let s = exposed(&with_ingress, Some(&served), None).unwrap();
        assert_eq!(
            summary(&s),
            ("True", "Admitted", "the Ingress is served at 203.0.113.7")
        );
        let internal = server(
            "
            metadata: {name: weather, namespace: t2}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
            ",
        );
        assert_eq!(exposed(&internal, None, None), None);
    }
}
