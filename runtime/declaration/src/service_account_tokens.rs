//! Projected ServiceAccount tokens used as client assertions (`http.auth` client
//! `serviceAccountToken`). The contract with the operator: it mounts one projected token per
//! distinct audience at `<tokens-dir>/<dir>/token`, where `<dir>` is [`token_dir_name`] of the
//! audience, and the runtime reads the file named by [`service_account_token_path`] for each
//! token request (the kubelet rotates it). The names are derived from the audience alone, so any
//! audience string makes a safe path. Pure, except [`Declaration::service_account_audiences`]
//! (pure too: it only walks the declaration).

use super::stamp::declaration_hash;
use super::types::{Declaration, HttpAuth};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where the operator mounts the projected ServiceAccount tokens in the runtime's pod (the
/// runtime's default `--service-account-tokens-dir`).
pub const DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR: &str = "/var/run/kube-mcp/tokens";

/// Name of the token file in each audience's directory.
pub const SERVICE_ACCOUNT_TOKEN_FILE: &str = "token";

/// Audiences the Kubernetes API server accepts by default (its in-cluster names; the
/// issuer of a cluster set up otherwise is not known here): a token for one of them is a
/// credential for the API itself, never one to send to a token endpoint.
pub(crate) const KUBERNETES_API_AUDIENCES: &[&str] = &[
    "https://kubernetes.default.svc",
    "https://kubernetes.default.svc.cluster.local",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "https://kubernetes.default",
    "kubernetes",
    "api",
];

/// Longest audience accepted (bytes).
pub const MAX_SERVICE_ACCOUNT_AUDIENCE_BYTES: usize = 512;

/// The directory name of `audience`'s token: `aud-` and a 64-bit hash of it in hex. Short and
/// path-safe whatever the audience; usable as a Kubernetes volume name too (a DNS label).
pub fn token_dir_name(audience: &str) -> String {
    format!("aud-{}", declaration_hash(audience))
}

/// The file holding the projected token for `audience` under the tokens directory `root`.
pub fn service_account_token_path(root: &Path, audience: &str) -> PathBuf {
    root.join(token_dir_name(audience))
        .join(SERVICE_ACCOUNT_TOKEN_FILE)
}

impl Declaration {
    /// Every audience of a `serviceAccountToken` client the declaration's HTTP backends use
    /// (their own clients and their actors'), sorted and deduplicated: the operator mounts one
    /// projected token for each.
    pub fn service_account_audiences(&self) -> BTreeSet<String> {
        self.http_backends()
            .filter_map(|http| http.auth.as_ref())
            .flat_map(HttpAuth::clients)
            .filter_map(|client| client.service_account_token.as_ref())
            .map(|token| token.audience.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_manifest;

    #[test]
    fn the_path_is_fixed_by_the_audience_alone_and_safe() {
        let root = Path::new("/var/run/kube-mcp/tokens");
        let path = service_account_token_path(root, "https://idp.example.com");
        assert_eq!(
            path,
            service_account_token_path(root, "https://idp.example.com")
        );
        assert_ne!(
            path,
            service_account_token_path(root, "https://idp.example.org")
        );
        assert_eq!(path.parent().unwrap().parent().unwrap(), root);
        assert_eq!(path.file_name().unwrap(), "token");
        let dir = token_dir_name("../../etc/passwd\n");
        assert!(dir.len() <= 63);
        assert!(
            dir.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }

    #[test]
    fn the_audiences_are_every_client_s_and_actor_s_deduplicated() {
        let manifest = parse_manifest(
            r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: t}
spec:
  auth: {issuer: "https://issuer.example.com", audiences: ["https://mcp.example.com"]}
  tools:
    - name: a
      http:
        url: https://api.example.com/a
        auth:
          tokenExchange:
            tokenUrl: https://idp.example.com/token
            client: {id: a, serviceAccountToken: {audience: idp-a}}
            actor:
              client: {id: actor, serviceAccountToken: {audience: idp-actor}}
    - name: b
      http:
        url: https://api.example.com/b
        auth:
          clientCredentials:
            tokenUrl: https://idp.example.com/token
            client: {id: b, serviceAccountToken: {audience: idp-a}}
    - name: c
      http:
        url: https://api.example.com/c
        auth:
          clientCredentials:
            tokenUrl: https://idp.example.com/token
            client: {id: c, secretKeyRef: {name: s, key: k}}
    - name: d
      http:
        url: https://api.example.com/d
        auth:
          jwtBearer:
            tokenUrl: https://idp.example.com/token
            assertion: {secretKeyRef: {name: s, key: k}, issuer: d}
            client: {id: d, serviceAccountToken: {audience: idp-bearer}}
"#,
            Default::default(),
        )
        .unwrap();
        let audiences: Vec<String> = manifest
            .declaration
            .service_account_audiences()
            .into_iter()
            .collect();
        assert_eq!(audiences, ["idp-a", "idp-actor", "idp-bearer"]);
    }
}
