//! What the admin port reports of loading (`GET /declaration`): when the served declaration was
//! loaded, and how the last reload attempt went. Written by the reload loop, read by the admin
//! route; a small lock, off the MCP request path. No I/O.

use std::sync::Mutex;

/// Longest reload error kept: it is quoted in the operator's status and events.
pub(super) const MAX_ERROR: usize = 1024;

/// How a reload attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The new version is served.
    Loaded,
    /// The new version was refused; the previous one keeps serving.
    Refused,
}

impl Outcome {
    /// The word in the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loaded => "loaded",
            Self::Refused => "refused",
        }
    }
}

/// One reload attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// When it ended.
    pub at: jiff::Timestamp,
    /// How.
    pub outcome: Outcome,
    /// The hash of the version attempted, when its stamp could be read.
    pub hash: Option<String>,
    /// Why it was refused.
    pub error: Option<String>,
}

/// The log: the served declaration's load time and the last attempt.
#[derive(Debug)]
pub struct ReloadLog {
    inner: Mutex<(jiff::Timestamp, Option<Attempt>)>,
}

impl Default for ReloadLog {
    /// A log whose declaration was loaded now, with no reload yet.
    fn default() -> Self {
        Self {
            inner: Mutex::new((jiff::Timestamp::now(), None)),
        }
    }
}

impl ReloadLog {
    fn with<T>(&self, f: impl FnOnce(&mut (jiff::Timestamp, Option<Attempt>)) -> T) -> T {
        // A poisoned lock only means a panic mid-update of two plain values.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut inner)
    }

    /// Records a served new version.
    pub fn loaded(&self, hash: &str) {
        let now = jiff::Timestamp::now();
        self.with(|(loaded_at, last)| {
            *loaded_at = now;
            *last = Some(Attempt {
                at: now,
                outcome: Outcome::Loaded,
                hash: Some(hash.to_owned()),
                error: None,
            });
        });
    }

    /// Records a refused version and why.
    pub fn refused(&self, hash: Option<String>, error: &str) {
        let mut error = error.to_owned();
        if error.len() > MAX_ERROR {
            let mut end = MAX_ERROR;
            while !error.is_char_boundary(end) {
                end -= 1;
            }
            error.truncate(end);
            error.push('…');
        }
        self.with(|(_, last)| {
            *last = Some(Attempt {
                at: jiff::Timestamp::now(),
                outcome: Outcome::Refused,
                hash,
                error: Some(error),
            });
        });
    }

    /// When the served declaration was loaded, and the last attempt.
    pub fn read(&self) -> (jiff::Timestamp, Option<Attempt>) {
        self.with(|inner| inner.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_load_time_and_a_bounded_error() {
        let log = ReloadLog::default();
        let (started, none) = log.read();
        assert_eq!(none, None);
        log.refused(Some("bb".into()), &"é".repeat(MAX_ERROR));
        let (loaded_at, last) = log.read();
        assert_eq!(loaded_at, started);
        let last = last.unwrap();
        assert_eq!(
            (last.outcome, last.hash.as_deref()),
            (Outcome::Refused, Some("bb"))
        );
        let error = last.error.unwrap();
        assert!(error.len() <= MAX_ERROR + '…'.len_utf8() && error.ends_with('…'));
        log.loaded("cc");
        let (loaded_at, last) = log.read();
        assert!(loaded_at >= started);
        assert_eq!(last.unwrap().outcome, Outcome::Loaded);
    }
}
