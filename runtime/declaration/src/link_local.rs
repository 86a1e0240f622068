//! Link-local upstream addresses: where clouds serve instance metadata (169.254.169.254,
//! `fd00:ec2::254`) and with it the node's or the pod's cloud credentials. A declared tool
//! that may call one hands those credentials to whoever writes the declaration, so upstreams
//! there are refused unless the platform allows them (`--allow-link-local-upstreams`): literal
//! addresses when the declaration is compiled, names when they resolve (the runtime's HTTP
//! client). Pure.

use std::net::{IpAddr, Ipv6Addr};
use url::{Host, Url};

/// The AWS instance metadata service's IPv6 address (outside `fe80::/10`).
const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// Whether `ip` is link-local (`169.254.0.0/16`, `fe80::/10`, an IPv4-mapped form of those) or a
/// cloud metadata address.
pub fn is_link_local(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_unicast_link_local() || v6 == AWS_METADATA_V6,
    }
}

/// The link-local address `url` names literally, if any.
pub fn literal_link_local(url: &Url) -> Option<IpAddr> {
    let ip = match url.host()? {
        Host::Ipv4(v4) => IpAddr::V4(v4),
        Host::Ipv6(v6) => IpAddr::V6(v6),
        Host::Domain(_) => return None,
    };
    is_link_local(ip).then_some(ip.to_canonical())
}

/// Why a link-local upstream is refused, for messages (after the address).
pub const LINK_LOCAL_REFUSED: &str = "is link-local, where clouds serve instance metadata and credentials; \
     refused unless the platform allows link-local upstreams (mcp-runtime serve \
     --allow-link-local-upstreams)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_link_local_addresses_are_link_local() {
        for link_local in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_link_local(link_local.parse().unwrap()), "{link_local}");
        }
        for other in [
            "10.0.0.1",
            "127.0.0.1",
            "169.255.0.1",
            "fd00:ec2::253",
            "::1",
        ] {
            assert!(!is_link_local(other.parse().unwrap()), "{other}");
        }
    }

    #[test]
    fn only_a_literal_address_is_found_in_a_url() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            literal_link_local(&url("http://169.254.169.254/latest/meta-data/")),
            Some("169.254.169.254".parse().unwrap())
        );
        assert!(literal_link_local(&url("http://[fd00:ec2::254]/")).is_some());
        assert!(literal_link_local(&url("http://metadata.google.internal/")).is_none());
        assert!(literal_link_local(&url("https://api.example.com/")).is_none());
    }
}
