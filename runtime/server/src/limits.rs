//! `spec.limits` enforced on this replica: a rate limiter (GCRA, `governor`) per declared rate
//! and quota, one per principal where the limit counts principals apart. The operator renders
//! each replica's share of every limit, so the replicas together stay within the declared ones
//! with no store shared between them. No I/O.

use crate::clients::ClientKey;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota};
use mcp_declaration::{CompiledLimit, CompiledLimits, Rate};
use std::num::NonZeroU32;
use std::time::Duration;

/// Principals tracked per limit. Past this, the states that would be fresh again anyway are
/// dropped; while that frees nothing, requests are counted in one overflow state (still limited,
/// together), so a flood of new addresses costs bounded memory.
const MAX_TRACKED: usize = 65_536;

/// Least time between two prunings of a full limit's states: pruning walks all of them, which
/// must not happen on every request while the limit stays full.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// Which limit refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `spec.limits.server`.
    Server,
    /// `spec.limits.perPrincipal`.
    Principal,
    /// `spec.limits.tools`.
    Tool,
}

impl Scope {
    /// Every scope (the metric's label values).
    pub const ALL: [Self; 3] = [Self::Server, Self::Principal, Self::Tool];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Principal => "principal",
            Self::Tool => "tool",
        }
    }
}

/// A request over a limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// Which limit.
    pub scope: Scope,
    /// The limit in words, as this replica enforces it.
    pub limit: String,
    /// What it limits: `this server`, `each caller`, `tool create_issue`, ...
    pub what: String,
    /// When a retry can pass.
    pub retry_after: Duration,
}

impl Refusal {
    /// The refusal in words a model can act on.
    pub fn message(&self) -> String {
        format!(
            "rate limit: {} allows {} on this replica; retry in {:.1} s",
            self.what,
            self.limit,
            self.retry_after.as_secs_f64()
        )
    }
}

/// The GCRA quota of `rate`: one request every `period / count`, `burst` at once.
fn quota(rate: &Rate) -> Option<Quota> {
    let burst = NonZeroU32::new(rate.burst)?;
    Quota::with_period(rate.period / rate.count).map(|q| q.allow_burst(burst))
}

/// The quotas of a limit: its rate's and its quota's.
fn quotas(limit: &CompiledLimit) -> impl Iterator<Item = Quota> + '_ {
    [limit.rate.as_ref(), limit.quota.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(quota)
}

/// How long until a refused request could pass.
fn wait(not_until: governor::NotUntil<<DefaultClock as Clock>::Instant>) -> Duration {
    not_until.wait_time_from(DefaultClock::default().now())
}

/// A limit counting everyone together.
struct Shared {
    limiters: Vec<DefaultDirectRateLimiter>,
    text: String,
}

impl Shared {
    fn new(limit: &CompiledLimit) -> Self {
        let limiters = quotas(limit)
            .map(DefaultDirectRateLimiter::direct)
            .collect();
        Self {
            limiters,
            text: limit.text.clone(),
        }
    }

    fn check(&self) -> Result<(), Duration> {
        for limiter in &self.limiters {
            limiter.check().map_err(wait)?;
        }
        Ok(())
    }
}

/// A limit counting each principal apart.
struct PerPrincipal {
    limiters: Vec<(DefaultKeyedRateLimiter<ClientKey>, DefaultDirectRateLimiter)>,
    text: String,
    /// When the states were last pruned.
    pruned: std::sync::Mutex<Option<std::time::Instant>>,
}

impl PerPrincipal {
    fn new(limit: &CompiledLimit) -> Self {
        let limiters = quotas(limit)
            .map(|q| {
                (
                    DefaultKeyedRateLimiter::keyed(q),
                    DefaultDirectRateLimiter::direct(q),
                )
            })
            .collect();
        Self {
            limiters,
            text: limit.text.clone(),
            pruned: std::sync::Mutex::new(None),
        }
    }

    fn check(&self, client: &ClientKey) -> Result<(), Duration> {
        for (keyed, overflow) in &self.limiters {
            let full = keyed.len() >= MAX_TRACKED && !self.pruned_room(keyed);
            let outcome = if full {
                overflow.check()
            } else {
                keyed.check_key(client)
            };
            outcome.map_err(wait)?;
        }
        Ok(())
    }

    /// Prunes a full limit's states, at most once every [`PRUNE_EVERY`] (a request that finds
    /// another pruning, or one too recent, does not wait); whether that made room.
    fn pruned_room(&self, keyed: &DefaultKeyedRateLimiter<ClientKey>) -> bool {
        let Ok(mut last) = self.pruned.try_lock() else {
            return false;
        };
        if last.is_some_and(|at| at.elapsed() < PRUNE_EVERY) {
            return false;
        }
        keyed.retain_recent();
        *last = Some(std::time::Instant::now());
        keyed.len() < MAX_TRACKED
    }
}

enum ToolGate {
    Shared(Shared),
    PerPrincipal(PerPrincipal),
}

/// Every limit of one declaration, with the counts so far.
#[derive(Default)]
pub struct Limiter {
    /// Whether any limit is declared: requests of a declaration without any skip the rest.
    active: bool,
    server: Option<Shared>,
    per_principal: Option<PerPrincipal>,
    tools: Vec<Option<(ToolGate, String)>>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter").finish_non_exhaustive()
    }
}

impl Limiter {
    /// The limiters of `limits` and the names of the tools they are indexed by, all counts at
    /// zero.
    pub fn new(limits: &CompiledLimits, tool_names: &[&str]) -> Self {
        let tools: Vec<Option<(ToolGate, String)>> = limits
            .tools
            .iter()
            .zip(tool_names)
            .map(|(limit, name)| {
                limit.as_ref().map(|(limit, per_principal)| {
                    if *per_principal {
                        let what = format!("tool `{name}` for each caller");
                        (ToolGate::PerPrincipal(PerPrincipal::new(limit)), what)
                    } else {
                        (
                            ToolGate::Shared(Shared::new(limit)),
                            format!("tool `{name}`"),
                        )
                    }
                })
            })
            .collect();
        Self {
            active: limits.server.is_some()
                || limits.per_principal.is_some()
                || tools.iter().any(Option::is_some),
            server: limits.server.as_ref().map(Shared::new),
            per_principal: limits.per_principal.as_ref().map(PerPrincipal::new),
            tools,
        }
    }

    /// Whether any limit applies to requests (computing a principal's key is then worth it).
    pub fn any(&self) -> bool {
        self.active
    }

    /// Counts a request of `client` (for `tools/call`, of tool `tool`), or says which limit
    /// it is over. A refused request may have used a place of a limit checked before the one
    /// that refused it: the replicas then allow less than declared, never more.
    pub fn admit(&self, client: &ClientKey, tool: Option<usize>) -> Result<(), Refusal> {
        let refusal = |scope, limit: &str, what: &str, retry_after| Refusal {
            scope,
            limit: limit.to_owned(),
            what: what.to_owned(),
            retry_after,
        };
        if let Some(server) = &self.server {
            server
                .check()
                .map_err(|wait| refusal(Scope::Server, &server.text, "this server", wait))?;
        }
        if let Some(each) = &self.per_principal {
            each.check(client)
                .map_err(|wait| refusal(Scope::Principal, &each.text, "each caller", wait))?;
        }
        if let Some(Some((gate, what))) = tool.and_then(|i| self.tools.get(i)) {
            let (outcome, text) = match gate {
                ToolGate::Shared(shared) => (shared.check(), &shared.text),
                ToolGate::PerPrincipal(each) => (each.check(client), &each.text),
            };
            outcome.map_err(|wait| refusal(Scope::Tool, text, what, wait))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn limit(rate: Option<(u32, u64, u32)>, quota: Option<(u32, u64)>) -> CompiledLimit {
        let to_rate = |count, seconds, burst| Rate {
            count,
            period: Duration::from_secs(seconds),
            burst,
        };
        CompiledLimit {
            rate: rate.map(|(c, s, b)| to_rate(c, s, b)),
            quota: quota.map(|(c, s)| to_rate(c, s, c)),
            text: "as declared".into(),
        }
    }

    fn client(n: u8) -> ClientKey {
        ClientKey::new(None, IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)))
    }

    /// Admitted requests of `client` out of `n` at once.
    fn admitted(limiter: &Limiter, client: &ClientKey, tool: Option<usize>, n: usize) -> usize {
        (0..n)
            .filter(|_| limiter.admit(client, tool).is_ok())
            .count()
    }

    #[test]
    fn every_scope_has_its_metric_series() {
        let labels: Vec<&str> = Scope::ALL.iter().map(|s| s.label()).collect();
        assert_eq!(labels, crate::metrics::RATE_LIMIT_SCOPES);
    }

    #[test]
    fn a_server_rate_admits_its_burst_then_says_when_to_retry() {
        let limits = CompiledLimits {
            server: Some(limit(Some((1, 3600, 3)), None)),
            ..CompiledLimits::default()
        };
        let limiter = Limiter::new(&limits, &[]);
        assert_eq!(admitted(&limiter, &client(1), None, 10), 3);
        let refused = limiter.admit(&client(2), None).unwrap_err();
        assert_eq!(refused.scope, Scope::Server);
        assert!(
            refused.retry_after > Duration::from_secs(3000),
            "{refused:?}"
        );
        assert!(
            refused
                .message()
                .starts_with("rate limit: this server allows as declared")
        );
    }

    #[test]
    fn per_principal_limits_count_each_client_apart() {
        let limits = CompiledLimits {
            per_principal: Some(limit(None, Some((2, 86_400)))),
            ..CompiledLimits::default()
        };
        let limiter = Limiter::new(&limits, &[]);
        assert_eq!(admitted(&limiter, &client(1), None, 5), 2);
        assert_eq!(admitted(&limiter, &client(2), None, 5), 2);
        let refused = limiter.admit(&client(1), None).unwrap_err();
        assert_eq!(
            (refused.scope, refused.what.as_str()),
            (Scope::Principal, "each caller")
        );
    }

    #[test]
    fn a_tool_limit_counts_only_that_tool() {
        let limits = CompiledLimits {
            tools: vec![None, Some((limit(Some((1, 3600, 1)), None), true))],
            ..CompiledLimits::default()
        };
        let limiter = Limiter::new(&limits, &["free", "guarded"]);
        assert_eq!(admitted(&limiter, &client(1), Some(0), 5), 5);
        assert_eq!(admitted(&limiter, &client(1), None, 5), 5);
        assert_eq!(admitted(&limiter, &client(1), Some(1), 5), 1);
        assert_eq!(
            admitted(&limiter, &client(2), Some(1), 5),
            1,
            "per principal"
        );
        let refused = limiter.admit(&client(1), Some(1)).unwrap_err();
        assert_eq!(refused.what, "tool `guarded` for each caller");
    }

    #[test]
    fn a_rate_and_a_quota_both_hold() {
        let limits = CompiledLimits {
            server: Some(limit(Some((1000, 1, 1000)), Some((4, 3600)))),
            ..CompiledLimits::default()
        };
        let limiter = Limiter::new(&limits, &[]);
        assert_eq!(admitted(&limiter, &client(1), None, 10), 4);
    }

    #[test]
    fn past_the_tracked_principals_new_ones_share_the_overflow() {
        let limits = CompiledLimits {
            per_principal: Some(limit(Some((1, 3600, 1)), None)),
            ..CompiledLimits::default()
        };
        let limiter = Limiter::new(&limits, &[]);
        let each = limiter.per_principal.as_ref().unwrap();
        for n in 0..MAX_TRACKED as u32 {
            let key = ClientKey::new(None, IpAddr::V4(Ipv4Addr::from(n)));
            assert!(each.check(&key).is_ok());
        }
        assert_eq!(each.limiters[0].0.len(), MAX_TRACKED);
        let late = |n: u32| ClientKey::new(None, IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n)));
        assert!(each.check(&late(1)).is_ok(), "the overflow's one place");
        assert!(each.check(&late(2)).is_err(), "shared with every later one");
        assert_eq!(each.limiters[0].0.len(), MAX_TRACKED, "bounded");
    }
}
