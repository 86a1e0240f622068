//! Counts the operator's Kubernetes API requests by verb and status code: a tower layer on the
//! kube client's HTTP stack. The layer does no I/O of its own; `client` reads the kubeconfig.

use crate::metrics::Metrics;
use futures_util::future::BoxFuture;
use http::{Method, Request, Response};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::{Layer, Service};

/// The Kubernetes client (kubeconfig or in-cluster configuration) with its requests counted.
pub async fn client(metrics: Arc<Metrics>) -> Result<kube::Client, kube::Error> {
    let config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&ApiMetricsLayer(metrics))
        .build())
}

/// Wraps the client's service so that every request is counted.
#[derive(Clone)]
pub struct ApiMetricsLayer(pub Arc<Metrics>);

impl<S> Layer<S> for ApiMetricsLayer {
    type Service = ApiMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiMetrics {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// The counting service.
#[derive(Clone)]
pub struct ApiMetrics<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ApiMetrics<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let verb = verb(&request);
        let metrics = self.metrics.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            match &result {
                Ok(response) => metrics.api_request(verb, response.status().as_str()),
                Err(_) => metrics.api_request(verb, "error"),
            }
            result
        })
    }
}

/// The Kubernetes verb of a request, as the API server's audit log would name it.
pub fn verb<B>(request: &Request<B>) -> &'static str {
    let query = request.uri().query().unwrap_or_default();
    let one_object = names_one_object(request.uri().path());
    match *request.method() {
        Method::GET
            if query
                .split('&')
                .any(|p| p == "watch=true" || p == "watch=1") =>
        {
            "watch"
        }
        Method::GET if one_object => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => {
            let apply = request
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|value| value.as_bytes().starts_with(b"application/apply-patch"));
            if apply { "apply" } else { "patch" }
        }
        Method::DELETE if one_object => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    }
}

/// Whether a resource path names one object (`…/configmaps/NAME[/status]`) rather than a
/// collection (`…/configmaps`). Paths outside `/api` and `/apis` (such as `/version`) count as one.
fn names_one_object(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => return true,
    }
    .unwrap_or_default();
    let rest = match rest {
        ["namespaces", _, resource @ ..] if !resource.is_empty() => resource,
        other => other,
    };
    rest.len() >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str, content_type: Option<&str>) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(content_type) = content_type {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn names_the_kubernetes_verb() {
        let cases = [
            (
                Method::GET,
                "/apis/kube-mcp.io/v1alpha1/mcpservers?watch=true&resourceVersion=1",
                None,
                "watch",
            ),
            (
                Method::GET,
                "/apis/kube-mcp.io/v1alpha1/mcpservers?limit=500",
                None,
                "list",
            ),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/demo/deployments/weather",
                None,
                "get",
            ),
            (Method::GET, "/api/v1/namespaces/demo", None, "get"),
            (Method::GET, "/api/v1/namespaces", None, "list"),
            (Method::GET, "/version", None, "get"),
            (
                Method::POST,
                "/api/v1/namespaces/demo/secrets",
                None,
                "create",
            ),
            (
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/sys/leases/op",
                None,
                "update",
            ),
            (
                Method::PATCH,
                "/apis/kube-mcp.io/v1alpha1/namespaces/demo/mcpservers/weather/status?fieldManager=mcp-operator&force=true",
                Some("application/apply-patch+yaml"),
                "apply",
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/demo/configmaps/weather",
                Some("application/merge-patch+json"),
                "patch",
            ),
            (
                Method::DELETE,
                "/apis/networking.k8s.io/v1/namespaces/demo/ingresses/weather",
                None,
                "delete",
            ),
            (
                Method::DELETE,
                "/apis/networking.k8s.io/v1/namespaces/demo/ingresses",
                None,
                "deletecollection",
            ),
        ];
        for (method, uri, content_type, expected) in cases {
            assert_eq!(verb(&request(method, uri, content_type)), expected, "{uri}");
        }
    }

    #[tokio::test]
    async fn counts_answers_by_status() {
        use tower::ServiceExt as _;
        let metrics = Arc::new(Metrics::new());
        let inner = tower::service_fn(|_: Request<()>| async {
            Ok::<_, std::convert::Infallible>(Response::builder().status(409).body(()).unwrap())
        });
        let service = ApiMetricsLayer(metrics.clone()).layer(inner);
        let _ = service
            .oneshot(request(
                Method::POST,
                "/api/v1/namespaces/demo/secrets",
                None,
            ))
            .await;
        let text = metrics.encode();
        assert!(
            text.contains(r#"mcp_operator_api_requests_total{verb="create",code="409"} 1"#),
            "{text}"
        );
    }
}
