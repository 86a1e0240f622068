//! One keep-alive HTTP/1.1 connection to the server under test (hyper's connection-level client:
//! no pool, no extra task hop per request, so the generator spends little CPU). Does socket I/O.

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::{IpAddr, SocketAddr};
use tokio::net::{TcpSocket, TcpStream};

/// `Bearer <token>` sent with every request, for servers that authenticate (set once, from
/// `--bearer-token-file`).
pub static AUTHORIZATION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// A request to send: method, path, headers and body.
#[derive(Clone, Debug)]
pub struct Call {
    /// GET, POST or DELETE.
    pub method: Method,
    /// Path and query.
    pub path: String,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body (empty for GET and DELETE).
    pub body: Bytes,
}

/// A complete answer.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body (an SSE response is read until the server ends it).
    pub body: Bytes,
}

/// A connection.
pub struct Conn {
    addr: SocketAddr,
    source: Option<IpAddr>,
    host: String,
    sender: SendRequest<Full<Bytes>>,
}

impl Conn {
    /// Connects (TCP_NODELAY, as every HTTP client does).
    pub async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        Self::open_from(addr, None).await
    }

    /// Connects from `source` (a loopback address; port picked by the kernel), or from the
    /// address the kernel picks. One source address has only ~28k ephemeral ports towards one
    /// destination, so runs holding more connections spread them over 127.0.0.1, 127.0.0.2, ….
    pub async fn open_from(addr: SocketAddr, source: Option<IpAddr>) -> anyhow::Result<Self> {
        let stream = match source {
            None => TcpStream::connect(addr).await?,
            Some(ip) => {
                let socket = if ip.is_ipv4() {
                    TcpSocket::new_v4()?
                } else {
                    TcpSocket::new_v6()?
                };
                socket.bind(SocketAddr::new(ip, 0))?;
                socket.connect(addr).await?
            }
        };
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // The connection ends when the sender is dropped or the server closes it.
            let _ = connection.await;
        });
        Ok(Self {
            addr,
            source,
            host: addr.to_string(),
            sender,
        })
    }

    /// Whether the server closed the connection (the caller then reconnects).
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Reconnects to the same address.
    pub async fn reopen(&mut self) -> anyhow::Result<()> {
        *self = Self::open_from(self.addr, self.source).await?;
        Ok(())
    }

    /// Sends a request and returns the response head with its body still streaming (with the
    /// bearer token of `--bearer-token-file`, when one was given).
    pub async fn start(&mut self, call: &Call) -> anyhow::Result<http::Response<Incoming>> {
        let mut request = Request::builder()
            .method(call.method.clone())
            .uri(call.path.as_str())
            .header("host", self.host.as_str());
        for (name, value) in &call.headers {
            request = request.header(*name, value.as_str());
        }
        if let Some(authorization) = AUTHORIZATION.get() {
            request = request.header("authorization", authorization.as_str());
        }
        let request = request.body(Full::new(call.body.clone()))?;
        self.sender.ready().await?;
        Ok(self.sender.send_request(request).await?)
    }

    /// Sends a request and reads the whole answer.
    pub async fn send(&mut self, call: &Call) -> anyhow::Result<Answer> {
        let response = self.start(call).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

/// Reads the `data:` lines of an open SSE body, one event at a time (comments, names and ids are
/// skipped; every event the servers under test send has one data line).
pub struct SseReader {
    body: Incoming,
    buffer: Vec<u8>,
}

impl SseReader {
    /// Reads `body` from now on.
    pub fn new(body: Incoming) -> Self {
        Self {
            body,
            buffer: Vec::new(),
        }
    }

    /// The next data line's value; an error when the stream ends first.
    pub async fn next_data(&mut self) -> anyhow::Result<String> {
        loop {
            while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                if let Some(data) = line.strip_prefix("data:") {
                    return Ok(data.trim().to_owned());
                }
            }
            match self.body.frame().await {
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
                None => anyhow::bail!("the stream ended"),
            }
        }
    }

    /// The body, for holding the stream open.
    pub fn into_body(self) -> Incoming {
        self.body
    }
}
