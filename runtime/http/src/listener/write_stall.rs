//! A connection that fails its writes once they have made no progress for a while: a client
//! that stops reading would otherwise hold its connection, and everything queued to be written
//! to it, forever (hyper has a header-read timeout but none for writes). An idle connection
//! writes nothing, so it never stalls; only a write the client's window keeps waiting counts.
//! No I/O of its own: wraps the connection's.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `inner`, whose writes fail with [`io::ErrorKind::TimedOut`] after `limit` without progress.
pub(super) struct WriteStallLimit<T> {
    inner: T,
    limit: Duration,
    /// Armed while a write waits; allocated on the first wait only.
    timer: Option<Pin<Box<Sleep>>>,
    waiting: bool,
}

impl<T> WriteStallLimit<T> {
    pub(super) fn new(inner: T, limit: Duration) -> Self {
        Self {
            inner,
            limit,
            timer: None,
            waiting: false,
        }
    }

    /// Called when a write could not proceed: arms the timer at the first wait, and fails
    /// once it expires.
    fn poll_stalled(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let deadline = Instant::now() + self.limit;
        let timer = match &mut self.timer {
            Some(timer) => {
                if !self.waiting {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            None => self
                .timer
                .insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        self.waiting = true;
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client stopped reading",
        ))
    }

    /// Passes a write's outcome on; a pending write counts towards the limit.
    fn outcome<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match polled {
            Poll::Pending => self.poll_stalled(cx).map(Err),
            ready => {
                self.waiting = false;
                ready
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStallLimit<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStallLimit<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.outcome(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.outcome(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.outcome(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.outcome(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const LIMIT: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn a_write_without_progress_fails_after_the_limit() {
        let (client, server) = tokio::io::duplex(1024);
        let mut server = WriteStallLimit::new(server, LIMIT);
        server.write_all(&[0; 1024]).await.unwrap();
        let started = std::time::Instant::now();
        let err = server.write_all(&[0; 10]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= LIMIT);
        assert!(started.elapsed() < LIMIT * 10);
        drop(client);
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_not_stalled() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut server = WriteStallLimit::new(server, LIMIT);
        let reader = tokio::spawn(async move {
            let mut buf = [0; 64];
            let mut total = 0;
            while total < 640 {
                tokio::time::sleep(LIMIT / 4).await;
                total += client.read(&mut buf).await.unwrap();
            }
            total
        });
        // Each 64-byte window waits a quarter of the limit for the reader: ten times in all,
        // together more than twice the limit, but never the limit in a row.
        server.write_all(&[0; 640]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 640);
    }

    #[tokio::test]
    async fn idle_connections_do_not_stall() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut server = WriteStallLimit::new(server, LIMIT);
        server.write_all(b"hello").await.unwrap();
        tokio::time::sleep(LIMIT * 2).await;
        let mut buf = [0; 5];
        client.read_exact(&mut buf).await.unwrap();
        server.write_all(b"again").await.unwrap();
    }
}
