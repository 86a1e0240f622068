//! The binary under attack: started on loopback with a manifest holding a 1 MiB resource and a
//! slow tool, its resident memory sampled from `/proc/PID/status`, stopped by its PID on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Bytes of the big resource: one read of it answers a megabyte.
const BIG: usize = 1 << 20;

fn manifest() -> String {
    format!(
        r#"apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {{name: fault}}
spec:
  tools:
    - name: slow
      description: Holds its request for a few seconds.
      progress:
        - {{progress: 1, total: 1, delayMs: 4000}}
      content: [{{type: text, text: done}}]
  resources:
    - {{uri: "big://doc", name: doc, mimeType: text/plain, text: "{}"}}
"#,
        "x".repeat(BIG)
    )
}

/// A running `mcp-runtime serve`.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT` of the MCP port.
    pub url: String,
    /// `127.0.0.1:PORT` of the MCP port.
    pub address: String,
    /// `http://127.0.0.1:PORT` of the admin port.
    pub admin: String,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts the binary with `flags` added, and waits until it serves.
    pub fn start(flags: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.yaml");
        std::fs::write(&path, manifest()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-runtime"))
            .args(["serve", "--manifest"])
            .arg(&path)
            .args(["--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"])
            .args([
                "--log-format",
                "json",
                "--log-level",
                "warn,mcp_http::app=info",
            ])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        // Reads the log to its end (a full pipe would block the server), passing on the
        // address it serves on.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let Ok(record) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if let (Some(mcp), Some(admin)) = (
                    record["fields"]["mcp"].as_str(),
                    record["fields"]["admin"].as_str(),
                ) {
                    let _ = sender.send((mcp.to_owned(), admin.to_owned()));
                }
            }
        });
        let (address, admin) = receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the server did not report its address");
        Self {
            child,
            url: format!("http://{address}"),
            address,
            admin: format!("http://{admin}"),
            _dir: dir,
        }
    }

    /// The server's resident memory now, in bytes.
    pub fn rss(&self) -> u64 {
        rss_of(self.child.id())
    }

    /// Samples the RSS every 20 ms until the returned guard stops, keeping the highest.
    pub fn watch_rss(&self) -> RssWatch {
        let pid = self.child.id();
        let peak = Arc::new(AtomicU64::new(rss_of(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_of(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        RssWatch { peak, stop }
    }

    /// The value of the metric sample `line` names (`name{labels}`), from `/metrics`.
    pub async fn metric(&self, sample: &str) -> Option<f64> {
        let text = reqwest::get(format!("{}/metrics", self.admin))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.lines()
            .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
    }

    /// Whether the process still runs (an allocation failure aborts it).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Child::kill signals this child's own PID.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The highest RSS seen since [`Server::watch_rss`].
pub struct RssWatch {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RssWatch {
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Mebibytes, for messages.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// A JSON-RPC `tools/call` of `slow` whose arguments hold `[0,0,...]` making the body
/// `bytes` long: tiny values that cost many times their size once parsed. The call asks for
/// progress, so it runs for the tool's delay (with the 2026-07-28 `_meta` when `modern`).
pub fn dense_call(id: u64, bytes: usize, modern: bool) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"#);
    let meta = if modern {
        r#""_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"#
    } else {
        r#""_meta":{"progressToken":"p"},"#
    };
    let name = r#""name":"slow","arguments":{"pad":["#;
    let tail = "0]}}}";
    let fixed = head.len() + meta.len() + name.len() + tail.len();
    let zeros = bytes.saturating_sub(fixed) / 2;
    format!("{head}{meta}{name}{}{tail}", "0,".repeat(zeros))
}
