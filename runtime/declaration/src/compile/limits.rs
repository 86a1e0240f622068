//! `spec.limits` compiled: rates and quotas read into counts per period, tools named by index,
//! and the division of every limit among replicas that the operator renders. Pure.

use super::Compiler;
use crate::types::{Limit, Limits, ToolLimit};
use std::collections::BTreeMap;
use std::time::Duration;

/// `count` requests per `period`, `burst` of them at once: a generic cell rate (GCRA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Requests per period.
    pub count: u32,
    /// The period.
    pub period: Duration,
    /// Requests allowed at once.
    pub burst: u32,
}

/// One compiled limit: a rate, a quota (a rate whose burst is its whole count), or both.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledLimit {
    /// The sustained rate.
    pub rate: Option<Rate>,
    /// The quota.
    pub quota: Option<Rate>,
    /// As declared, for refusals: `10/s (burst 20), quota 5000/day`.
    pub text: String,
}

/// `spec.limits`, compiled (all `None` without it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompiledLimits {
    /// Every request.
    pub server: Option<CompiledLimit>,
    /// Every request of each principal.
    pub per_principal: Option<CompiledLimit>,
    /// Per tool, by index into `Compiled::tools`: the limit, and whether it counts each
    /// principal apart.
    pub tools: Vec<Option<(CompiledLimit, bool)>>,
}

/// Seconds in each unit a rate or quota may name.
const UNITS: &[(&str, u64)] = &[("s", 1), ("min", 60), ("h", 3600), ("day", 86_400)];

/// Reads `N/unit` with a unit of `allowed`: the count and the period.
fn read(text: &str, allowed: &[&str]) -> Option<(u32, Duration)> {
    let (count, unit) = text.split_once('/')?;
    let count: u32 = count.parse().ok().filter(|n| *n > 0)?;
    let seconds = UNITS
        .iter()
        .find(|(name, _)| *name == unit && allowed.contains(name))?
        .1;
    Some((count, Duration::from_secs(seconds)))
}

impl Compiler<'_> {
    /// `spec.limits`, each tool's limit placed at the tool's index.
    pub(super) fn limits(
        &mut self,
        limits: Option<&Limits>,
        tool_names: &[&str],
    ) -> CompiledLimits {
        let Some(limits) = limits else {
            return CompiledLimits {
                tools: vec![None; tool_names.len()],
                ..CompiledLimits::default()
            };
        };
        let server = limits
            .server
            .as_ref()
            .and_then(|l| self.limit("spec.limits.server", l));
        let per_principal = limits
            .per_principal
            .as_ref()
            .and_then(|l| self.limit("spec.limits.perPrincipal", l));
        let mut tools = vec![None; tool_names.len()];
        for (name, tool) in &limits.tools {
            let path = format!("spec.limits.tools[\"{name}\"]");
            let Some(index) = tool_names.iter().position(|t| t == name) else {
                self.error(path, format!("no tool is named `{name}`"));
                continue;
            };
            if let Some(limit) = self.limit(&path, &tool.limit) {
                tools[index] = Some((limit, tool.per_principal));
            }
        }
        CompiledLimits {
            server,
            per_principal,
            tools,
        }
    }

    fn limit(&mut self, path: &str, limit: &Limit) -> Option<CompiledLimit> {
        if limit.rate.is_none() && limit.quota.is_none() {
            self.error(path, "declare a rate, a quota or both");
            return None;
        }
        if limit.burst.is_some() && limit.rate.is_none() {
            self.error(format!("{path}.burst"), "a burst needs a rate");
            return None;
        }
        if limit.burst == Some(0) {
            self.error(format!("{path}.burst"), "must be at least 1");
            return None;
        }
        let rate = match &limit.rate {
            None => None,
            Some(text) => match read(text, &["s", "min", "h"]) {
                Some((count, period)) => Some(Rate {
                    count,
                    period,
                    burst: limit.burst.unwrap_or(count),
                }),
                None => {
                    self.error(
                        format!("{path}.rate"),
                        format!("`{text}` is not N/s, N/min or N/h"),
                    );
                    return None;
                }
            },
        };
        let quota = match &limit.quota {
            None => None,
            Some(text) => match read(text, &["h", "day"]) {
                Some((count, period)) => Some(Rate {
                    count,
                    period,
                    burst: count,
                }),
                None => {
                    self.error(
                        format!("{path}.quota"),
                        format!("`{text}` is not N/h or N/day"),
                    );
                    return None;
                }
            },
        };
        Some(CompiledLimit {
            rate,
            quota,
            text: describe(limit),
        })
    }
}

/// A limit in words: `10/s (burst 20), quota 5000/day`.
fn describe(limit: &Limit) -> String {
    let mut parts = Vec::new();
    if let Some(rate) = &limit.rate {
        parts.push(match limit.burst {
            Some(burst) => format!("{rate} (burst {burst})"),
            None => rate.clone(),
        });
    }
    if let Some(quota) = &limit.quota {
        parts.push(format!("quota {quota}"));
    }
    parts.join(", ")
}

impl Limits {
    /// Each replica's share when `replicas` serve the server: every count divided, rounded down
    /// so that the replicas together never allow more than declared, but at least 1 (a replica
    /// that refused everything would be no share). A rate that does not divide in its unit is
    /// written in a smaller one it divides in (`100/s` among 3: `2000/min`), or per hour
    /// rounded down.
    pub fn divided(&self, replicas: u32) -> Limits {
        if replicas <= 1 {
            return self.clone();
        }
        let limit = |l: &Limit| Limit {
            rate: l
                .rate
                .as_deref()
                .map(|r| divide(r, replicas, &["s", "min", "h"])),
            burst: l.burst.map(|b| (b / replicas).max(1)),
            quota: l
                .quota
                .as_deref()
                .map(|q| divide(q, replicas, &["h", "day"])),
        };
        Limits {
            server: self.server.as_ref().map(limit),
            per_principal: self.per_principal.as_ref().map(limit),
            tools: self
                .tools
                .iter()
                .map(|(name, tool)| {
                    let divided = ToolLimit {
                        limit: limit(&tool.limit),
                        per_principal: tool.per_principal,
                    };
                    (name.clone(), divided)
                })
                .collect::<BTreeMap<_, _>>(),
        }
    }
}

/// `N/unit` divided by `replicas`, in the first unit of `units` (at or after the declared one)
/// where it divides exactly, else in the last, rounded down (at least 1). Text that does not
/// read is kept: the compiler refuses it.
fn divide(text: &str, replicas: u32, units: &[&str]) -> String {
    let Some((count, period)) = read(text, units) else {
        return text.to_owned();
    };
    let declared = period.as_secs();
    let larger = UNITS
        .iter()
        .filter(|(name, seconds)| units.contains(name) && *seconds >= declared);
    let mut last = None;
    for (name, seconds) in larger {
        let scaled = u64::from(count) * (seconds / declared);
        if scaled % u64::from(replicas) == 0 {
            return format!("{}/{name}", scaled / u64::from(replicas));
        }
        last = Some((scaled, *name));
    }
    match last {
        Some((scaled, name)) => format!("{}/{name}", (scaled / u64::from(replicas)).max(1)),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(rate: Option<&str>, burst: Option<u32>, quota: Option<&str>) -> Limit {
        Limit {
            rate: rate.map(str::to_owned),
            burst,
            quota: quota.map(str::to_owned),
        }
    }

    #[test]
    fn reads_rates_and_quotas_in_their_units() {
        assert_eq!(
            read("10/s", &["s", "min", "h"]),
            Some((10, Duration::from_secs(1)))
        );
        assert_eq!(
            read("5000/day", &["h", "day"]),
            Some((5000, Duration::from_secs(86_400)))
        );
        for bad in ["0/s", "10/day", "x/s", "10", "10/ms", "-1/s", "10/s/s"] {
            assert_eq!(read(bad, &["s", "min", "h"]), None, "{bad}");
        }
    }

    #[test]
    fn divides_exactly_in_the_smallest_unit_it_can() {
        assert_eq!(divide("100/s", 2, &["s", "min", "h"]), "50/s");
        assert_eq!(divide("100/s", 3, &["s", "min", "h"]), "2000/min");
        assert_eq!(divide("7/s", 11, &["s", "min", "h"]), "2290/h"); // 25200/11, rounded down
        assert_eq!(divide("1/h", 3, &["s", "min", "h"]), "1/h"); // at least one each
        assert_eq!(divide("5000/day", 3, &["h", "day"]), "1666/day");
        assert_eq!(divide("60/h", 4, &["h", "day"]), "15/h");
    }

    #[test]
    fn division_never_allows_more_than_declared_when_counts_allow() {
        for replicas in 1..=12u32 {
            for (text, units) in [
                ("100/s", &["s", "min", "h"][..]),
                ("9/min", &["s", "min", "h"][..]),
                ("5000/day", &["h", "day"][..]),
            ] {
                let (count, period) = read(text, units).unwrap();
                let share = divide(text, replicas, units);
                let (each, each_period) = read(&share, units).unwrap();
                let declared_per_hour = f64::from(count) * 3600.0 / period.as_secs_f64();
                let total_per_hour =
                    f64::from(each) * f64::from(replicas) * 3600.0 / each_period.as_secs_f64();
                assert!(
                    total_per_hour <= declared_per_hour + 1e-9,
                    "{text} over {replicas}: {share}"
                );
                assert!(
                    total_per_hour >= declared_per_hour * 0.99,
                    "{text} over {replicas}: {share} wastes"
                );
            }
        }
    }

    #[test]
    fn divided_keeps_every_field_and_divides_bursts() {
        let limits = Limits {
            server: Some(limit(Some("100/s"), Some(200), None)),
            per_principal: Some(limit(Some("10/s"), Some(20), Some("5000/day"))),
            tools: [(
                "create_issue".to_owned(),
                ToolLimit {
                    limit: limit(Some("1/s"), Some(3), None),
                    per_principal: true,
                },
            )]
            .into(),
        };
        let halves = limits.divided(2);
        assert_eq!(halves.server, Some(limit(Some("50/s"), Some(100), None)));
        assert_eq!(
            halves.per_principal,
            Some(limit(Some("5/s"), Some(10), Some("2500/day")))
        );
        let tool = &halves.tools["create_issue"];
        assert_eq!(tool.limit, limit(Some("30/min"), Some(1), None));
        assert!(tool.per_principal);
        assert_eq!(limits.divided(1), limits);
        assert_eq!(
            describe(&limits.per_principal.unwrap()),
            "10/s (burst 20), quota 5000/day"
        );
    }
}
