//! Byte budgets for memory held on behalf of clients: parsed messages while their requests run,
//! answers waiting to be written, client answers waiting for the call that asked. A [`Charge`]
//! counts its bytes against a [`Budget`] until it is dropped; a charge that does not fit is
//! refused at once (nothing waits for room). One budget is shared by every client, and each
//! legacy session has its own. In memory, no I/O.

use prometheus_client::metrics::gauge::Gauge;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes that may be held at once.
#[derive(Debug)]
pub struct Budget {
    used: AtomicUsize,
    limit: usize,
    /// Follows `used` (shared by every session budget: their sum).
    gauge: Option<Gauge>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Self::with_gauge(limit, None)
    }

    /// A budget of `limit` bytes whose use is added to `gauge`.
    pub fn with_gauge(limit: usize, gauge: Option<Gauge>) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            limit,
            gauge,
        })
    }

    /// Counts `bytes` until the returned charge drops; `None` when they do not fit. A charge
    /// larger than the whole budget takes all of it (a limit below one message's weight would
    /// otherwise refuse that message forever).
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Option<Charge> {
        let bytes = bytes.min(self.limit);
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .ok()?;
        if let Some(gauge) = &self.gauge {
            gauge.inc_by(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        Some(Charge {
            budget: self.clone(),
            bytes,
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

/// Bytes counted against a budget, released when dropped.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Charge {
    /// The bytes counted.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        if let Some(gauge) = &self.budget.gauge {
            gauge.dec_by(i64::try_from(self.bytes).unwrap_or(i64::MAX));
        }
    }
}

/// The charges one message holds (the global budget's and its session's), released together.
#[derive(Debug, Default)]
pub struct Held(Vec<Charge>);

impl Held {
    /// Nothing held.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// Also holds `charge`.
    pub fn with(mut self, charge: Charge) -> Self {
        self.0.push(charge);
        self
    }

    /// Also holds what `other` holds.
    pub fn join(&mut self, other: Held) {
        self.0.extend(other.0);
    }

    /// Bytes held, summed over the budgets.
    pub fn bytes(&self) -> usize {
        self.0.iter().map(Charge::bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_fit_or_are_refused_and_are_released_on_drop() {
        let budget = Budget::new(100);
        let first = budget.charge(60).unwrap();
        assert!(budget.charge(41).is_none());
        let second = budget.charge(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(first);
        assert_eq!(budget.used(), 40);
        drop(second);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_oversized_charge_takes_the_whole_budget() {
        let budget = Budget::new(100);
        let all = budget.charge(1_000).unwrap();
        assert_eq!(all.bytes(), 100);
        assert!(budget.charge(1).is_none());
        drop(all);
        assert!(budget.charge(1).is_some());
    }

    #[test]
    fn the_gauge_follows_every_budget_sharing_it() {
        let gauge = Gauge::default();
        let a = Budget::with_gauge(10, Some(gauge.clone()));
        let b = Budget::with_gauge(10, Some(gauge.clone()));
        let held = Held::none()
            .with(a.charge(4).unwrap())
            .with(b.charge(5).unwrap());
        assert_eq!((gauge.get(), held.bytes()), (9, 9));
        drop(held);
        assert_eq!(gauge.get(), 0);
    }
}
