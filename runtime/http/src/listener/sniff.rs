//! Telling HTTP/1 from HTTP/2 (prior knowledge) by the client's first bytes, left in the socket
//! for hyper to read. Event-driven: a preface that arrives in parts is looked at once per
//! arrival (the readiness a look found nothing new in is cleared, so the next wait lasts until
//! more bytes come), not polled. Does network I/O (peeks).

use std::io;
use std::os::fd::AsFd;
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The HTTP/2 connection preface; anything else is HTTP/1.
pub(super) const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Protocol {
    Http1,
    Http2,
}

/// The protocol the client's first bytes announce, once it sent enough within `timeout` to tell
/// (`None`: it did not, or it left). The bytes stay in the socket for hyper to read.
pub(super) async fn sniff(stream: &TcpStream, timeout: Duration) -> Option<Protocol> {
    sniff_counting(stream, timeout, &mut 0).await
}

/// [`sniff`], counting its looks at the socket in `looks`.
pub(super) async fn sniff_counting(
    stream: &TcpStream,
    timeout: Duration,
    looks: &mut u32,
) -> Option<Protocol> {
    // tokio has no non-blocking peek to run inside `try_io` (which clears the readiness a look
    // found nothing new in); std's, on a second descriptor of the same non-blocking socket, is.
    let peeker = std::net::TcpStream::from(stream.as_fd().try_clone_to_owned().ok()?);
    let wait = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        let mut seen = 0;
        loop {
            stream.readable().await.ok()?;
            *looks += 1;
            let looked = stream.try_io(Interest::READABLE, || match peeker.peek(&mut buf) {
                // Nothing new since the last look: wait for the next arrival.
                Ok(n) if n == seen && n > 0 => Err(io::ErrorKind::WouldBlock.into()),
                other => other,
            });
            match looked {
                Ok(0) => return None,
                Ok(n) if !H2_PREFACE.starts_with(&buf[..n]) => return Some(Protocol::Http1),
                Ok(n) if n == H2_PREFACE.len() => return Some(Protocol::Http2),
                Ok(n) => seen = n,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return None,
            }
        }
    };
    tokio::time::timeout(timeout, wait).await.ok().flatten()
}
