//! The router as one connection's hyper service, marking each request in progress on the
//! connection's slot from its start until its answer's body was written or dropped, so the
//! slot table knows which connections are idle, and handing each request its connection's peer
//! address (as axum's `ConnectInfo`). No I/O.

use super::slots::{InFlight, Slot};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::{Frame, Incoming, SizeHint};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower_service::Service;

/// `app`, serving one connection.
#[derive(Clone)]
pub(super) struct Tracked {
    app: Router,
    slot: Arc<Slot>,
    peer: SocketAddr,
}

impl Tracked {
    pub(super) fn new(app: Router, slot: Arc<Slot>, peer: SocketAddr) -> Self {
        Self { app, slot, peer }
    }
}

impl hyper::service::Service<http::Request<Incoming>> for Tracked {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, mut request: http::Request<Incoming>) -> Self::Future {
        let guard = self.slot.begin();
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let mut app = self.app.clone();
        Box::pin(async move {
            // A router is always ready (axum's `poll_ready` is `Ready(Ok(()))`).
            let response = app.call(request).await?;
            Ok(response.map(|inner| {
                Body::new(Guarded {
                    inner,
                    _guard: guard,
                })
            }))
        })
    }
}

/// An answer's body, holding its request's mark until written or dropped.
struct Guarded {
    inner: Body,
    _guard: InFlight,
}

impl hyper::body::Body for Guarded {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
