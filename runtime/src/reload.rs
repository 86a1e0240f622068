//! Live reload: polls the manifest (and the files its resources and secret references name) and
//! swaps in the new declaration when they change. Polling follows the symlink swaps of ConfigMap volumes without
//! special cases. An invalid new version keeps the old one serving, is logged and counted.

use crate::declaration::{
    CompileOptions, Compiled, Manifest, compile, parse_manifest, secret_path,
};
use crate::server::Server;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// What a served declaration was built from: the manifest's bytes, and the files it names
/// (resource `file`s, referenced secrets) with the size and modification time they had. Each poll
/// reads the manifest and stats those files; only a difference parses and compiles again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    manifest: Vec<u8>,
    files: Vec<(PathBuf, Option<(u64, SystemTime)>)>,
}

impl Inputs {
    /// Whether the manifest or any file it names changed since these inputs were read.
    fn changed(&self, manifest: &[u8]) -> bool {
        manifest != self.manifest.as_slice()
            || self
                .files
                .iter()
                .any(|(path, stamp)| &stamp_of(path) != stamp)
    }
}

fn stamp_of(path: &Path) -> Option<(u64, SystemTime)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.len(), metadata.modified().ok()?))
}

/// The files a manifest depends on besides itself.
fn named_files(manifest: &Manifest, secrets_dir: Option<&Path>) -> Vec<PathBuf> {
    let declaration = &manifest.declaration;
    let secrets = declaration
        .secret_key_refs()
        .into_iter()
        .filter_map(|r| secret_path(secrets_dir?, &r).ok());
    declaration
        .resources
        .iter()
        .filter_map(|r| r.file.as_ref().map(|f| manifest.base_dir.join(f)))
        .chain(secrets)
        .collect()
}

/// Reads, parses and compiles a manifest file once, with a message that names the failing
/// field. The returned inputs describe what was read, also when compiling failed (so a refused
/// version is not retried until it changes again).
pub fn load(path: &Path, options: &CompileOptions) -> (Result<Compiled, String>, Inputs) {
    let manifest = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) => {
            return (
                Err(format!("cannot read {}: {err}", path.display())),
                Inputs::default(),
            );
        }
    };
    load_bytes(path, manifest, options)
}

fn load_bytes(
    path: &Path,
    bytes: Vec<u8>,
    options: &CompileOptions,
) -> (Result<Compiled, String>, Inputs) {
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    let parsed = std::str::from_utf8(&bytes)
        .map_err(|err| format!("the manifest is not UTF-8: {err}"))
        .and_then(|text| parse_manifest(text, base).map_err(|err| err.to_string()));
    let files = parsed
        .as_ref()
        .map(|m| named_files(m, options.secrets_dir.as_deref()))
        .unwrap_or_default()
        .into_iter()
        .map(|path| {
            let stamp = stamp_of(&path);
            (path, stamp)
        })
        .collect();
    let compiled = parsed.and_then(|m| compile(&m, options).map_err(|err| err.to_string()));
    (
        compiled,
        Inputs {
            manifest: bytes,
            files,
        },
    )
}

/// Watches until `stop`, starting from the inputs of what is being served.
pub async fn watch(
    path: PathBuf,
    options: CompileOptions,
    server: Arc<Server>,
    mut served: Inputs,
    every: Duration,
    stop: CancellationToken,
) {
    let mut timer = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = timer.tick() => {}
        }
        // A manifest being swapped may be briefly unreadable; the next tick sees it.
        let Ok(manifest) = std::fs::read(&path) else {
            continue;
        };
        if !served.changed(&manifest) {
            continue;
        }
        let (compiled, inputs) = load_bytes(&path, manifest, &options);
        served = inputs;
        match compiled {
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
