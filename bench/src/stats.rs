//! What a workload measured, as one JSON line per run (the report reads them back). Pure.

use serde::{Deserialize, Serialize};

/// One workload run against one server.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Record {
    /// The server under test (`kube-mcp`, `rmcp`, `typescript-sdk`, `python-sdk`).
    pub server: String,
    /// The workload (`modern-call`, `legacy-flow`, `idle-sse`, …).
    pub workload: String,
    /// The protocol and transport it ran on, as the report shows it.
    pub protocol: String,
    /// Concurrent connections (or sessions held, for idle workloads).
    pub concurrency: usize,
    /// Target rate for open-loop runs, requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Measured seconds.
    pub seconds: f64,
    /// Successful HTTP requests.
    pub requests: u64,
    /// Completed sessions (legacy flow), or sessions open at the end (idle).
    pub sessions: u64,
    /// Failed requests or sessions.
    pub errors: u64,
    /// Successful requests per second.
    pub rps: f64,
    /// Latency percentiles, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile (absent from records written before issue 31).
    #[serde(default)]
    pub p999_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// Server CPU seconds over the measured window.
    pub server_cpu_s: f64,
    /// Server CPU per successful request, microseconds.
    pub cpu_us_per_req: f64,
    /// Peak server RSS during the window, MiB.
    pub rss_peak_mib: f64,
    /// Server RSS before the workload started, MiB.
    pub rss_before_mib: f64,
    /// Load generator CPU seconds over the window.
    pub client_cpu_s: f64,
    /// Instructions per request counted by callgrind (`callgrind-*` records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_per_req: Option<f64>,
    /// A size in bytes (the `binary-size` record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Free-form remark.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Latencies in microseconds, summarized.
pub struct Percentiles {
    /// 50th, 95th, 99th percentile and maximum, milliseconds.
    pub p50: f64,
    /// 95th.
    pub p95: f64,
    /// 99th.
    pub p99: f64,
    /// 99.9th.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// Percentiles of `micros` (sorted in place).
pub fn percentiles(micros: &mut [u32]) -> Percentiles {
    micros.sort_unstable();
    let at = |q: f64| {
        if micros.is_empty() {
            return 0.0;
        }
        let index = ((micros.len() as f64 * q).ceil() as usize).clamp(1, micros.len()) - 1;
        f64::from(micros[index]) / 1000.0
    };
    Percentiles {
        p50: at(0.50),
        p95: at(0.95),
        p99: at(0.99),
        p999: at(0.999),
        max: at(1.0),
    }
}

/// Bytes to MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut micros: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        let p = percentiles(&mut micros);
        assert_eq!((p.p50, p.p95, p.p99, p.max), (50.0, 95.0, 99.0, 100.0));
        let mut micros: Vec<u32> = (1..=2000).collect();
        assert_eq!(percentiles(&mut micros).p999, 1.998);
        let empty = percentiles(&mut []);
        assert_eq!(empty.p99, 0.0);
    }

    #[test]
    fn old_records_parse_without_p999() {
        let line = r#"{"server":"s","workload":"w","protocol":"p","concurrency":1,"seconds":1.0,"requests":1,"sessions":0,"errors":0,"rps":1.0,"p50_ms":1.0,"p95_ms":1.0,"p99_ms":1.0,"max_ms":1.0,"server_cpu_s":0.0,"cpu_us_per_req":0.0,"rss_peak_mib":0.0,"rss_before_mib":0.0,"client_cpu_s":0.0}"#;
        let record: Record = serde_json::from_str(line).expect("an issue-15 record");
        assert_eq!((record.p999_ms, record.instructions_per_req), (0.0, None));
    }
}
