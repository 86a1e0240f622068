//! Leader election with a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one reconciles. The decision is pure (`decide`); acquiring, renewing and releasing
//! talk to the API server, with optimistic concurrency (a write carries the Lease's
//! resourceVersion, so two candidates never both win).
//!
//! Time is never compared across machines: as client-go does, a candidate measures a holder's
//! lease from when it *observed* the Lease record change, on its own monotonic clock. The leader
//! counts its lease from when it *sent* a renewal that succeeded, bounds every renewal attempt,
//! and gives up (the controller stops at once) before the others may take over.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{PostParams, ResourceExt};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where the Lease lives and how long leadership lasts.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    /// Namespace of the Lease (the operator's own).
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This candidate's identity (its pod name, made unique).
    pub identity: String,
    /// How long a lease lasts without renewal.
    pub duration: Duration,
    /// How often the leader renews (well under `duration`).
    pub renew_every: Duration,
}

/// What a candidate should do with the Lease as it finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// It holds the lease: renew it.
    Renew,
    /// Nobody holds it, or the holder's lease expired: take it.
    TakeOver,
    /// Somebody else holds a live lease: wait.
    Wait,
}

/// Decides from the Lease's spec, this candidate's identity and how long this candidate has
/// seen the Lease record unchanged (its own clock; the holder's `renewTime` is not compared
/// with the local clock, which may differ).
pub fn decide(spec: &LeaseSpec, identity: &str, unchanged_for: Duration) -> Decision {
    match spec.holder_identity.as_deref() {
        Some(holder) if holder == identity => Decision::Renew,
        None | Some("") => Decision::TakeOver,
        Some(_) => {
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
            );
            if unchanged_for >= duration {
                Decision::TakeOver
            } else {
                Decision::Wait
            }
        }
    }
}

/// What identifies one version of the Lease record (any renewal changes it).
fn record(spec: &LeaseSpec) -> String {
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}",
        spec.holder_identity,
        spec.renew_time.as_ref().map(|t| t.0),
        spec.acquire_time.as_ref().map(|t| t.0),
        spec.lease_transitions,
        spec.lease_duration_seconds
    )
}

/// Why the lease could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} Lease {namespace}/{name}")]
pub struct LeaseError {
    action: &'static str,
    namespace: String,
    name: String,
    #[source]
    source: kube::Error,
}

/// Holds or waits for a Lease.
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    /// The Lease record last seen and when (local monotonic clock) it was first seen.
    observed: std::sync::Mutex<Option<(String, tokio::time::Instant)>>,
}

impl Elector {
    /// An elector for the Lease `config` names.
    pub fn new(client: kube::Client, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: std::sync::Mutex::new(None),
        }
    }

    fn error(&self, action: &'static str, source: kube::Error) -> LeaseError {
        LeaseError {
            action,
            namespace: self.config.namespace.clone(),
            name: self.config.name.clone(),
            source,
        }
    }

    /// Waits until this candidate leads (true) or `shutdown` is cancelled (false).
    pub async fn acquire(&self, shutdown: &CancellationToken) -> bool {
        let mut waiting_logged = false;
        loop {
            match self.try_lead().await {
                Ok(true) => return true,
                Ok(false) if !waiting_logged => {
                    tracing::info!(lease = %self.config.name, "another replica leads; waiting");
                    waiting_logged = true;
                }
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(error = %crate::reconcile::error_chain(&error), "leader election")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.config.renew_every) => {}
                () = shutdown.cancelled() => return false,
            }
        }
    }

    /// Renews the lease until `stop` is cancelled; cancels `lost` and returns when it could not
    /// renew before the lease would expire (another replica may lead by then). Each attempt is
    /// bounded by `renew_every`, and the lease is counted from when the last successful attempt
    /// was sent, so `lost` fires at least `renew_every` before any other replica may take over.
    pub async fn hold(&self, stop: &CancellationToken, lost: &CancellationToken) {
        // Acquisition just succeeded (the caller holds the lease as of about now).
        let mut renewed_at = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.config.renew_every) => {}
                () = stop.cancelled() => return,
            }
            let sent = tokio::time::Instant::now();
            let attempt = tokio::time::timeout(self.config.renew_every, self.try_lead()).await;
            match attempt {
                Ok(Ok(true)) => renewed_at = sent,
                Ok(Ok(false)) => {
                    tracing::error!(lease = %self.config.name, "another replica took the lease");
                    lost.cancel();
                    return;
                }
                Ok(Err(error)) => {
                    tracing::warn!(error = %crate::reconcile::error_chain(&error), "cannot renew the lease");
                }
                Err(_) => {
                    tracing::warn!(timeout = ?self.config.renew_every, "lease renewal timed out")
                }
            }
            // Give up one renewal period before expiry, so two leaders never overlap.
            if renewed_at.elapsed() + self.config.renew_every >= self.config.duration {
                tracing::error!(lease = %self.config.name, "could not renew the lease in time; stepping down");
                lost.cancel();
                return;
            }
        }
    }

    /// Gives the lease up so another replica takes over at once; best effort.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        if let Err(error) = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %error, "cannot release the lease");
        } else {
            tracing::info!(lease = %self.config.name, "released the lease");
        }
    }

    /// One attempt to lead: create, renew or take over the Lease. Ok(false) when another
    /// replica leads or won the race.
    async fn try_lead(&self) -> Result<bool, LeaseError> {
        let now = jiff::Timestamp::now();
        let seconds = i32::try_from(self.config.duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self
            .api
            .get_opt(&self.config.name)
            .await
            .map_err(|e| self.error("read", e))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.config.identity.clone()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(self.error("create", error)),
            };
        };
        let lease_name = lease.name_any();
        let spec = lease.spec.get_or_insert_with(Default::default);
        let unchanged_for = {
            let seen = record(spec);
            let mut observed = self.observed.lock().unwrap_or_else(|e| e.into_inner());
            match &*observed {
                Some((last, since)) if *last == seen => since.elapsed(),
                _ => {
                    *observed = Some((seen, tokio::time::Instant::now()));
                    Duration::ZERO
                }
            }
        };
        match decide(spec, &self.config.identity, unchanged_for) {
            Decision::Wait => return Ok(false),
            Decision::Renew => {}
            Decision::TakeOver => {
                tracing::info!(lease = %lease_name, previous = ?spec.holder_identity, "taking over the lease");
                spec.holder_identity = Some(self.config.identity.clone());
                spec.acquire_time = Some(MicroTime(now));
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
        }
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(seconds);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(self.error("update", error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(Into::into),
            lease_duration_seconds: Some(15),
            // A holder whose clock is an hour ahead: must not matter.
            renew_time: Some(MicroTime(
                jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600),
            )),
            ..Default::default()
        }
    }

    #[test]
    fn renews_its_own_lease() {
        assert_eq!(
            decide(&spec(Some("me")), "me", Duration::from_secs(60)),
            Decision::Renew
        );
    }

    #[test]
    fn waits_while_the_record_changed_less_than_a_lease_ago_whatever_the_clocks_say() {
        assert_eq!(
            decide(&spec(Some("other")), "me", Duration::from_secs(14)),
            Decision::Wait
        );
    }

    #[test]
    fn takes_over_a_record_unchanged_for_a_lease_or_released() {
        assert_eq!(
            decide(&spec(Some("other")), "me", Duration::from_secs(15)),
            Decision::TakeOver
        );
        assert_eq!(
            decide(&spec(None), "me", Duration::ZERO),
            Decision::TakeOver
        );
    }

    #[test]
    fn any_renewal_changes_the_record() {
        let a = spec(Some("other"));
        let mut b = a.clone();
        b.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        assert_ne!(record(&a), record(&b));
        assert_eq!(record(&a), record(&a.clone()));
    }
}
