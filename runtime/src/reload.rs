//! Live reload: polls the manifest (and the files its resources and secret references name) and
//! swaps in the new
//! declaration when they change. Polling follows the symlink swaps of ConfigMap volumes without
//! special cases. An invalid new version keeps the old one serving, is logged and counted.

use crate::declaration::{CompileOptions, Compiled, compile, read_manifest};
use crate::server::Server;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What identifies one version of the inputs: the manifest bytes and each referenced file's
/// size and modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    manifest: Vec<u8>,
    files: Vec<(PathBuf, Option<(u64, std::time::SystemTime)>)>,
}

/// Reads the current fingerprint; `None` if the manifest cannot be read right now. Secret files
/// count too, so a rotated Secret is picked up like an edited manifest.
pub fn fingerprint(manifest_path: &Path, secrets_dir: Option<&Path>) -> Option<Fingerprint> {
    let manifest = std::fs::read(manifest_path).ok()?;
    let base = manifest_path
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    let files =
        crate::declaration::parse_manifest(&String::from_utf8_lossy(&manifest), base.clone())
            .map(|m| {
                let secrets = m
                    .declaration
                    .secret_key_refs()
                    .into_iter()
                    .filter_map(|r| crate::declaration::secret_path(secrets_dir?, &r).ok());
                m.declaration
                    .resources
                    .iter()
                    .filter_map(|r| r.file.as_ref().map(|f| base.join(f)))
                    .chain(secrets)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .map(|path| {
                let stamp = std::fs::metadata(&path)
                    .ok()
                    .and_then(|m| Some((m.len(), m.modified().ok()?)));
                (path, stamp)
            })
            .collect();
    Some(Fingerprint { manifest, files })
}

/// Loads and compiles a manifest file, with a message that names the failing field.
pub fn load(path: &Path, options: &CompileOptions) -> Result<Compiled, String> {
    let manifest = read_manifest(path).map_err(|err| with_causes(&err))?;
    compile(&manifest, options).map_err(|err| err.to_string())
}

/// An error and its causes on one line, as `a: b: c`.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(source) = cause {
        text.push_str(": ");
        text.push_str(&source.to_string());
        cause = source.source();
    }
    text
}

/// Watches until `stop`, starting from the fingerprint of what is being served.
pub async fn watch(
    path: PathBuf,
    options: CompileOptions,
    server: Arc<Server>,
    mut served: Option<Fingerprint>,
    every: Duration,
    stop: CancellationToken,
) {
    let mut timer = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = timer.tick() => {}
        }
        let current = fingerprint(&path, options.secrets_dir.as_deref());
        if current.is_none() || current == served {
            continue;
        }
        served = current;
        match load(&path, &options) {
            Ok(compiled) => {
                let changes = server.replace(compiled);
                server.metrics().reload(true);
                tracing::info!(
                    tools = changes.tools,
                    prompts = changes.prompts,
                    resources = changes.resources,
                    updated = changes.updated_uris.len(),
                    "manifest reloaded"
                );
            }
            Err(err) => {
                server.metrics().reload(false);
                tracing::error!(error = %err, "manifest change refused; still serving the previous version");
            }
        }
    }
}
