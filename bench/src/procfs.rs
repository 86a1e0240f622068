//! The server's resident memory and CPU time, read from `/proc/<pid>` (and its descendants, for
//! servers that fork workers), sampled in the background during a workload. Reads /proc.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One reading of a process tree.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Resident set size, bytes.
    pub rss: u64,
    /// User + system CPU time, seconds.
    pub cpu: f64,
}

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on Linux everywhere).
const TICKS: f64 = 100.0;

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn rss_bytes(pid: u32) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&candidate| {
            // Field 2 after the name is the parent pid.
            stat_fields(candidate).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(pid)
        })
        .collect()
}

/// Usage of `pid` and all its descendants.
pub fn usage(pid: u32) -> Usage {
    let mut total = Usage::default();
    let mut pending = vec![pid];
    while let Some(pid) = pending.pop() {
        if let Some(fields) = stat_fields(pid) {
            // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
            let ticks: u64 = [11, 12]
                .iter()
                .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
                .sum();
            total.cpu += ticks as f64 / TICKS;
            total.rss += rss_bytes(pid);
        }
        pending.extend(children(pid));
    }
    total
}

/// CPU seconds this process has used.
pub fn own_cpu() -> f64 {
    usage_of_self().cpu
}

fn usage_of_self() -> Usage {
    let pid = std::process::id();
    let Some(fields) = stat_fields(pid) else {
        return Usage::default();
    };
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    Usage {
        rss: rss_bytes(pid),
        cpu: ticks as f64 / TICKS,
    }
}

/// Samples a process tree's RSS every `every` until stopped; keeps the peak.
pub struct Sampler {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    pid: Option<u32>,
}

impl Sampler {
    /// Starts sampling `pid` (nothing when `None`).
    pub fn start(pid: Option<u32>, every: Duration) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        if let Some(pid) = pid {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(usage(pid).rss, Ordering::Relaxed);
                    std::thread::sleep(every);
                }
            });
        }
        Self { peak, stop, pid }
    }

    /// The current usage.
    pub fn now(&self) -> Usage {
        self.pid.map(usage).unwrap_or_default()
    }

    /// Stops sampling; returns the peak RSS seen, bytes.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let last = self.now().rss;
        self.peak.load(Ordering::Relaxed).max(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = usage(std::process::id());
        assert!(me.rss > 0);
        assert!(me.cpu >= 0.0);
        assert!(own_cpu() >= 0.0);
    }
}
