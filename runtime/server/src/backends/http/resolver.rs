//! Name resolution for declared upstreams: the system resolver, as reqwest's default, with
//! link-local addresses (where clouds serve instance metadata and credentials) dropped unless
//! the platform allows them. A literal address is checked when the declaration is compiled; a
//! name is checked here, on every connection, so a name that resolves there later (DNS
//! rebinding) is refused too. I/O: DNS lookups.

use mcp_declaration::{LINK_LOCAL_REFUSED, is_link_local};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::SocketAddr;

/// The resolver of upstream clients that may not reach link-local addresses.
#[derive(Debug, Default)]
pub(super) struct WithoutLinkLocal;

impl Resolve for WithoutLinkLocal {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = without_link_local(&host, found)?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// `found` without its link-local addresses; an error when nothing else is left.
fn without_link_local(host: &str, found: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, String> {
    let refused = found.iter().find(|a| is_link_local(a.ip())).copied();
    let kept: Vec<SocketAddr> = found
        .into_iter()
        .filter(|a| !is_link_local(a.ip()))
        .collect();
    match refused {
        Some(address) if kept.is_empty() => Err(format!(
            "{host} resolves to {}, which {LINK_LOCAL_REFUSED}",
            address.ip().to_canonical()
        )),
        _ => Ok(kept),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|ip| SocketAddr::new(ip.parse().unwrap(), 0))
            .collect()
    }

    #[test]
    fn link_local_answers_are_dropped_and_only_link_local_is_refused() {
        let mixed = addresses(&["169.254.169.254", "10.0.0.7", "fd00:ec2::254"]);
        assert_eq!(
            without_link_local("api", mixed).unwrap(),
            addresses(&["10.0.0.7"])
        );
        let err = without_link_local("metadata.google.internal", addresses(&["169.254.169.254"]))
            .unwrap_err();
        assert!(
            err.starts_with(
                "metadata.google.internal resolves to 169.254.169.254, which is link-local"
            ),
            "{err}"
        );
        assert!(without_link_local("none", Vec::new()).unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_kept() {
        let addrs: Vec<SocketAddr> = WithoutLinkLocal
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().any(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
