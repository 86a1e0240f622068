//! Leader election with a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one reconciles. The decision is pure (`decide`); acquiring, renewing and releasing
//! talk to the API server, with optimistic concurrency (a write carries the Lease's
//! resourceVersion, so two candidates never both win).

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

/// Decides from the Lease's spec, this candidate's identity and the time now.
pub fn decide(spec: &LeaseSpec, identity: &str, now: jiff::Timestamp) -> Decision {
    match spec.holder_identity.as_deref() {
        Some(holder) if holder == identity => Decision::Renew,
        None | Some("") => Decision::TakeOver,
        Some(_) => {
            let duration = jiff::SignedDuration::from_secs(i64::from(
                spec.lease_duration_seconds.unwrap_or(0),
            ));
            match &spec.renew_time {
                Some(renewed) if renewed.0 + duration > now => Decision::Wait,
                _ => Decision::TakeOver,
            }
        }
    }
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
}

impl Elector {
    /// An elector for the Lease `config` names.
    pub fn new(client: kube::Client, config: LeaseConfig) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            config,
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
    /// renew before the lease would expire (another replica may lead by then).
    pub async fn hold(&self, stop: &CancellationToken, lost: &CancellationToken) {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(self.config.renew_every) => {}
                () = stop.cancelled() => return,
            }
            match self.try_lead().await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::error!(lease = %self.config.name, "another replica took the lease");
                    lost.cancel();
                    return;
                }
                Err(error) => {
                    tracing::warn!(error = %crate::reconcile::error_chain(&error), "cannot renew the lease");
                    // Give up a little before expiry, so two leaders never overlap.
                    if last_renewal.elapsed() + self.config.renew_every >= self.config.duration {
                        lost.cancel();
                        return;
                    }
                }
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
        match decide(spec, &self.config.identity, now) {
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

    fn spec(holder: Option<&str>, renewed_secs_ago: i64) -> LeaseSpec {
        let now = jiff::Timestamp::now();
        LeaseSpec {
            holder_identity: holder.map(Into::into),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(
                now - jiff::SignedDuration::from_secs(renewed_secs_ago),
            )),
            ..Default::default()
        }
    }

    #[test]
    fn renews_its_own_lease() {
        assert_eq!(
            decide(&spec(Some("me"), 1), "me", jiff::Timestamp::now()),
            Decision::Renew
        );
    }

    #[test]
    fn waits_for_a_live_lease_of_another() {
        assert_eq!(
            decide(&spec(Some("other"), 5), "me", jiff::Timestamp::now()),
            Decision::Wait
        );
    }

    #[test]
    fn takes_over_an_expired_or_released_lease() {
        assert_eq!(
            decide(&spec(Some("other"), 20), "me", jiff::Timestamp::now()),
            Decision::TakeOver
        );
        assert_eq!(
            decide(&spec(None, 1), "me", jiff::Timestamp::now()),
            Decision::TakeOver
        );
        assert_eq!(
            decide(
                &LeaseSpec {
                    holder_identity: Some("other".into()),
                    ..Default::default()
                },
                "me",
                jiff::Timestamp::now()
            ),
            Decision::TakeOver
        );
    }
}
