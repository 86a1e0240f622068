//! Two limits out of hyper's one: hyper's HTTP/1 `header_read_timeout` starts as soon as a
//! kept-alive connection goes idle, so it is both how long a client may take to send its headers
//! and how long an idle connection stays open. Proxies keep upstream connections for a minute or
//! more (ingress-nginx and AWS load balancers 60 s, Go's and so Traefik's 90 s, Google's 600 s);
//! closing sooner races them, and a request sent as the server closes is lost (a 502 at the
//! proxy). The timer here makes hyper's header timeout wait for the next request's first byte,
//! up to an idle limit, and only then allow the header time. No I/O of its own: it counts the
//! bytes the connection reads.

use hyper::rt::{Sleep, Timer};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How many bytes a connection has read so far, shared by [`CountReads`] and [`IdleTimer`].
pub(super) type ReadCount = Arc<AtomicU64>;

/// `inner`, counting the bytes read from it.
pub(super) struct CountReads<T> {
    inner: T,
    count: ReadCount,
}

impl<T> CountReads<T> {
    pub(super) fn new(inner: T, count: ReadCount) -> Self {
        Self { inner, count }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for CountReads<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            this.count.fetch_add(read as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for CountReads<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// One connection's timer for hyper's HTTP/1 header timeout: each wait for a request's headers
/// first lasts up to `idle` while nothing arrives, then the header time hyper asked for from the
/// first byte on.
pub(super) struct IdleTimer {
    reads: ReadCount,
    idle: Duration,
}

impl IdleTimer {
    pub(super) fn new(reads: ReadCount, idle: Duration) -> Self {
        Self { reads, idle }
    }
}

impl Timer for IdleTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        // Not used by HTTP/1 servers; a plain sleep keeps the trait's meaning.
        Box::pin(HeaderWait::fixed(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let header = deadline.saturating_duration_since(Instant::now());
        Box::pin(HeaderWait {
            reads: Some((self.reads.clone(), self.reads.load(Ordering::Relaxed))),
            header,
            timer: Box::pin(tokio::time::sleep(self.idle.max(header))),
        })
    }
}

/// A wait for headers: idle until a byte arrives (the read count moves), then `header`.
struct HeaderWait {
    /// The count and its value when the wait began; `None` once a byte arrived.
    reads: Option<(ReadCount, u64)>,
    header: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl HeaderWait {
    fn fixed(duration: Duration) -> Self {
        Self {
            reads: None,
            header: duration,
            timer: Box::pin(tokio::time::sleep(duration)),
        }
    }
}

impl Future for HeaderWait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        // hyper polls this wait right after each read that left the headers incomplete, so the
        // first poll that sees the count moved is within one read of the first byte.
        if let Some((reads, at_start)) = &this.reads
            && reads.load(Ordering::Relaxed) != *at_start
        {
            this.reads = None;
            let deadline = tokio::time::Instant::now() + this.header;
            this.timer.as_mut().reset(deadline);
        }
        this.timer.as_mut().poll(cx)
    }
}

impl Sleep for HeaderWait {}
