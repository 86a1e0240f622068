//! The `spec.views` view a request came through, as a request extension: set by
//! `transport/views.rs` before routing, read by the handlers (which hand its name to
//! `Server::request`), authentication and forwarding. A leaf: data only.

/// The view a request came through (a request extension; absent: the whole server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewRoute {
    /// The view's name.
    pub name: String,
    /// The view's path (`/readers`).
    pub path: String,
    /// The path and query the client sent, before the rewrite (a forwarded request goes to
    /// the session's owner with it, so the owner routes it through the same view).
    pub original: String,
}
