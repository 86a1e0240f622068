//! Secrets referenced by a declaration (`secretKeyRef: {name, key}`). The contract with the
//! operator: the runtime reads `<secrets-dir>/<name>/<key>`, which is where a Kubernetes Secret
//! volume mounted at `<secrets-dir>/<name>` puts each key. [`read_secret`] does file I/O; the
//! rest is pure. A [`Secret`] never prints its value.

use super::types::{Declaration, Http, HttpAuth, HttpParam, SecretKeyRef};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where the operator mounts referenced Secrets in the runtime's pod.
pub const DEFAULT_SECRETS_DIR: &str = "/var/run/kube-mcp/secrets";

/// A secret value. `Debug` and `Display` print `[redacted]`; only [`Secret::expose`] reveals it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value, for the one place that sends it upstream.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Declaration {
    /// Names of every Secret the declaration references, sorted and deduplicated: the operator
    /// mounts each at `<secrets-dir>/<name>`.
    pub fn secret_refs(&self) -> BTreeSet<String> {
        self.secret_key_refs().into_iter().map(|r| r.name).collect()
    }

    /// Every `(Secret, key)` pair the declaration references.
    pub fn secret_key_refs(&self) -> BTreeSet<SecretKeyRef> {
        let https = self.http_backends();
        let introspection = self
            .auth
            .iter()
            .filter_map(|auth| auth.introspection.as_ref())
            .map(|i| &i.client_secret);
        https
            .flat_map(http_secret_refs)
            .chain(introspection)
            .cloned()
            .collect()
    }
}

fn http_secret_refs(http: &Http) -> impl Iterator<Item = &SecretKeyRef> {
    let form: &[HttpParam] = http
        .body
        .as_ref()
        .and_then(|b| b.form.as_deref())
        .unwrap_or_default();
    let jwt_bearer = http.auth.iter().filter_map(|auth| auth.jwt_bearer.as_ref());
    let clients = http
        .auth
        .iter()
        .flat_map(HttpAuth::clients)
        .flat_map(|client| {
            [
                client.secret_key_ref.as_ref(),
                client.private_key_jwt.as_ref().map(|k| &k.secret_key_ref),
            ]
        })
        .flatten();
    let auth = clients.chain(jwt_bearer.map(|grant| &grant.assertion.secret_key_ref));
    http.query
        .iter()
        .chain(&http.headers)
        .chain(form)
        .filter_map(|p| p.secret_key_ref.as_ref())
        .chain(auth)
}

/// The file that holds a Secret's key, or why the reference is malformed (a name or key that
/// could leave the secrets directory).
pub fn secret_path(dir: &Path, reference: &SecretKeyRef) -> Result<PathBuf, String> {
    // Kubernetes object names are DNS subdomains; Secret keys are `[-._a-zA-Z0-9]+`.
    let name_ok = !reference.name.is_empty()
        && reference.name.len() <= 253
        && reference
            .name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !reference.name.starts_with('.');
    if !name_ok {
        return Err(format!(
            "`{}` is not a valid Secret name (lower-case DNS subdomain)",
            reference.name
        ));
    }
    let key_ok = !reference.key.is_empty()
        && reference.key.len() <= 253
        && reference
            .key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        && reference.key != "."
        && reference.key != "..";
    if !key_ok {
        return Err(format!(
            "`{}` is not a valid Secret key (`-`, `.`, `_` and alphanumerics)",
            reference.key
        ));
    }
    Ok(dir.join(&reference.name).join(&reference.key))
}

/// Reads a referenced secret. One trailing newline is dropped (files written by `echo`). The
/// error names the file, never its contents.
pub fn read_secret(dir: &Path, reference: &SecretKeyRef) -> Result<Secret, String> {
    let path = secret_path(dir, reference)?;
    // A regular file only: a FIFO would block the reload that reads it.
    let bytes = super::files::read_regular(&path).map_err(|err| {
        format!(
            "Secret `{}` key `{}` not found at {}: {err}",
            reference.name,
            reference.key,
            path.display(),
        )
    })?;
    let mut value = String::from_utf8(bytes).map_err(|_| {
        format!(
            "Secret `{}` key `{}` is not UTF-8 text",
            reference.name, reference.key
        )
    })?;
    if value.ends_with('\n') {
        value.pop();
        if value.ends_with('\r') {
            value.pop();
        }
    }
    Ok(Secret(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str, key: &str) -> SecretKeyRef {
        SecretKeyRef {
            name: name.into(),
            key: key.into(),
        }
    }

    #[test]
    fn never_prints_the_value() {
        let secret = Secret::new("hunter2".into());
        assert_eq!(format!("{secret:?} {secret}"), "[redacted] [redacted]");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn refuses_names_that_leave_the_directory() {
        let dir = Path::new("/s");
        assert!(secret_path(dir, &reference("../etc", "passwd")).is_err());
        assert!(secret_path(dir, &reference("api", "../x")).is_err());
        assert!(secret_path(dir, &reference("api", "..")).is_err());
        assert!(secret_path(dir, &reference("API", "k")).is_err());
        assert_eq!(
            secret_path(dir, &reference("api-token", "token.txt")).unwrap(),
            Path::new("/s/api-token/token.txt")
        );
    }

    #[test]
    fn reads_and_trims_one_newline() {
        let dir = std::env::temp_dir().join(format!("kube-mcp-secrets-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("api")).unwrap();
        std::fs::write(dir.join("api/token"), "s3cret\n").unwrap();
        assert_eq!(
            read_secret(&dir, &reference("api", "token"))
                .unwrap()
                .expose(),
            "s3cret"
        );
        let err = read_secret(&dir, &reference("api", "missing")).unwrap_err();
        assert!(
            err.contains("Secret `api` key `missing` not found"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
