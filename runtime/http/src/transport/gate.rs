//! The checks in front of the MCP routes, as tower layers: the Host/Origin check on every
//! request ([`Edge`]), bearer authentication on the MCP routes ([`Authn`]), and
//! [`SessionsOnly`], which keeps session-only middleware off stateless requests. No I/O of their
//! own (authentication may fetch keys, in `authn`).
//!
//! Written as services rather than `axum::middleware::from_fn`: a `from_fn` middleware boxes its
//! future and wraps the rest of the stack in a new boxed service on every request, and these
//! checks mostly decide at once (a host is allowed or not; without `spec.auth` there is nothing
//! to check). Here a request that passes goes straight to the inner service, unboxed; only an
//! authenticated request takes the boxed, asynchronous way.

use super::headers::SESSION_HEADER;
use super::{AppState, authn, guard};
use axum::extract::Request;
use axum::response::Response;
use futures_util::future::{BoxFuture, Either, Ready, ready};
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

/// 403 for a Host or Origin that is not allowed (see [`guard::edge_check`]).
#[derive(Clone)]
pub(super) struct EdgeLayer(pub Arc<AppState>);

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;
    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            state: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`EdgeLayer`].
#[derive(Clone)]
pub(super) struct Edge<S> {
    state: Arc<AppState>,
    inner: S,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match guard::edge_check(&self.state.http.origins, request.headers(), request.uri()) {
            Ok(()) => Either::Right(self.inner.call(request)),
            Err(why) => Either::Left(ready(Ok(guard::forbidden(why)))),
        }
    }
}

/// Bearer authentication when the served declaration has `spec.auth` (see
/// [`authn::authenticate`]); without it, requests pass untouched.
#[derive(Clone)]
pub(super) struct AuthnLayer(pub Arc<AppState>);

impl<S> Layer<S> for AuthnLayer {
    type Service = Authn<S>;
    fn layer(&self, inner: S) -> Authn<S> {
        Authn {
            state: self.0.clone(),
            inner,
        }
    }
}

/// The service of [`AuthnLayer`].
#[derive(Clone)]
pub(super) struct Authn<S> {
    state: Arc<AppState>,
    inner: S,
}

impl<S> Service<Request> for Authn<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let compiled = self.state.server.declaration();
        let decided = self.state.auth.for_spec(&compiled);
        if let Ok(None) = decided {
            return Either::Left(self.inner.call(request));
        }
        // The service polled ready is the one that serves the request; a clone stays here.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        Either::Right(Box::pin(async move {
            let run = |request| inner.call(request);
            Ok(authn::authenticate(&state, decided, request, run).await)
        }))
    }
}

/// Applies the layer `L` only to requests that name a legacy session (the `Mcp-Session-Id`
/// header, or a query on `/messages`, where `sessionId` travels); others go straight to the
/// inner service. For a middleware with nothing to do without a session (forwarding a request
/// to the replica owning its session), so that stateless requests do not pay for it: the
/// layered service is built only for a request that may need it.
#[derive(Clone)]
pub(super) struct SessionsOnly<L>(pub L);

impl<S, L: Clone> Layer<S> for SessionsOnly<L> {
    type Service = SessionsOnlyService<S, L>;
    fn layer(&self, inner: S) -> Self::Service {
        SessionsOnlyService {
            inner,
            layer: self.0.clone(),
        }
    }
}

/// The service of [`SessionsOnly`].
#[derive(Clone)]
pub(super) struct SessionsOnlyService<S, L> {
    inner: S,
    layer: L,
}

/// Whether `request` may name a session (when unsure, yes: the layered way decides).
fn names_session(request: &Request) -> bool {
    if request.uri().path().ends_with("/messages") {
        request.uri().query().is_some()
    } else {
        request.headers().contains_key(SESSION_HEADER)
    }
}

impl<S, L> Service<Request> for SessionsOnlyService<S, L>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone,
    L: Layer<S>,
    L::Service: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    <L::Service as Service<Request>>::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !names_session(&request) {
            return Either::Left(self.inner.call(request));
        }
        // The service polled ready stays here; the layered one gets a clone and is polled
        // ready itself before it is called.
        let mut layered = self.layer.layer(self.inner.clone());
        Either::Right(Box::pin(async move {
            std::future::poll_fn(|cx| layered.poll_ready(cx)).await?;
            layered.call(request).await
        }))
    }
}
