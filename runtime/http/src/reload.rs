//! Live reload: polls the manifests (and the files their resources and secret references name)
//! and swaps in the new declaration when they change. Polling follows the symlink swaps of
//! ConfigMap volumes without special cases, and lists manifest directories again each time. An
//! invalid new version keeps the old one serving, is logged and counted. Each poll reads and
//! compiles on a blocking thread under a time limit, so a file that blocks (a FIFO, a hung network
//! mount) cannot stall the process; while such a poll is stuck, later ticks are skipped.

pub use log::ReloadLog;
use mcp_declaration::{Bundle, CompileOptions, Manifest, compile, read_bundle, secret_path};
use mcp_server::{Served, Server};
pub use sources::MAX_MANIFEST_FILES;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod log;
mod sources;

/// Longest a poll may take to read and compile before it is given up on.
pub const POLL_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest interval between polls.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// What a served declaration was built from: each manifest file's bytes as stored, and the files
/// they name (resource `file`s, referenced secrets) with the size and modification time they had.
/// Each poll lists and reads the manifests and stats those files; only a difference parses and
/// compiles again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    manifests: Vec<(PathBuf, Vec<u8>)>,
    files: Vec<(PathBuf, Option<(u64, SystemTime)>)>,
}

impl Inputs {
    /// Whether the manifests or any file they name changed since these inputs were read.
    fn changed(&self, manifests: &[(PathBuf, Vec<u8>)]) -> bool {
        manifests != self.manifests.as_slice()
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

/// Lists and reads the manifest files `paths` stand for, as stored.
fn read_all(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    sources::list(paths)?
        .into_iter()
        .map(|path| sources::read(&path).map(|bytes| (path, bytes)))
        .collect()
}

/// Reads, parses and compiles the manifests once (files, or directories of them: one
/// `MCPServer` and the `MCPToolSet`s and grants it includes), with a message that names the
/// failing file and field. The returned inputs describe what was read, also when compiling failed
/// (so a refused version is not retried until it changes again).
pub fn load(paths: &[PathBuf], options: &CompileOptions) -> (Result<Served, String>, Inputs) {
    match read_all(paths) {
        Ok(manifests) => load_manifests(manifests, options),
        Err(err) => (Err(err), Inputs::default()),
    }
}

/// The server the manifests declare, its includes merged in.
fn bundle(manifests: &[(PathBuf, Vec<u8>)]) -> Result<Bundle, String> {
    let texts = manifests
        .iter()
        .map(|(path, stored)| sources::text(path, stored).map(|text| (path.clone(), text)))
        .collect::<Result<Vec<_>, _>>()?;
    read_bundle(&texts).map_err(|err| err.to_string())
}

fn load_manifests(
    manifests: Vec<(PathBuf, Vec<u8>)>,
    options: &CompileOptions,
) -> (Result<Served, String>, Inputs) {
    let parsed = bundle(&manifests);
    let files = parsed
        .as_ref()
        .map(|b| named_files(&b.manifest, options.secrets_dir.as_deref()))
        .unwrap_or_default()
        .into_iter()
        .map(|path| {
            let stamp = stamp_of(&path);
            (path, stamp)
        })
        .collect();
    let compiled = parsed
        .and_then(|b| compile(&b.manifest, options).map_err(|err| err.to_string()))
        .and_then(|compiled| Served::new(compiled).map_err(|err| err.to_string()));
    (compiled, Inputs { manifests, files })
}

/// What one poll found: nothing new, or a new version (compiled or refused) and its inputs.
type Polled = Option<(Result<Served, String>, Inputs)>;

/// Reads the manifests and, when they or a file they name changed, parses and compiles them.
fn poll(paths: &[PathBuf], options: &CompileOptions, served: &Inputs) -> Polled {
    // A manifest being swapped may be briefly unreadable; the next tick sees it.
    let manifests = read_all(paths).ok()?;
    if !served.changed(&manifests) {
        return None;
    }
    Some(load_manifests(manifests, options))
}

/// The stamp of manifests that could not be served, when they parse that far.
fn attempted_hash(inputs: &Inputs) -> Option<String> {
    bundle(&inputs.manifests).ok()?.manifest.hash
}

/// Watches until `stop`, starting from the inputs of what is being served; records each
/// attempt in `log`.
pub async fn watch(
    paths: Vec<PathBuf>,
    options: CompileOptions,
    server: Arc<Server>,
    served: Inputs,
    every: Duration,
    log: Arc<ReloadLog>,
    stop: CancellationToken,
) {
    let mut served = Arc::new(served);
    // `interval` panics on zero; the CLI refuses it too.
    let mut timer = tokio::time::interval(every.max(MIN_INTERVAL));
    let mut stuck: Option<JoinHandle<Polled>> = None;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = timer.tick() => {}
        }
        if stuck.as_ref().is_some_and(|task| !task.is_finished()) {
            continue;
        }
        stuck = None;
        let (files, options, inputs) = (paths.clone(), options.clone(), served.clone());
        let mut task = tokio::task::spawn_blocking(move || poll(&files, &options, &inputs));
        let polled = match tokio::time::timeout(POLL_TIMEOUT, &mut task).await {
            Ok(Ok(polled)) => polled,
            Ok(Err(_)) => None,
            Err(_) => {
                server.metrics().reload(false);
                log.refused(
                    None,
                    &format!(
                        "reading the manifest or a file it names did not finish within {}s",
                        POLL_TIMEOUT.as_secs()
                    ),
                );
                tracing::error!(
                    timeout_s = POLL_TIMEOUT.as_secs(),
                    "reading the manifest or a file it names did not finish; still serving the previous version"
                );
                stuck = Some(task);
                continue;
            }
        };
        let Some((compiled, inputs)) = polled else {
            continue;
        };
        let attempted = compiled.is_err().then(|| attempted_hash(&inputs));
        served = Arc::new(inputs);
        match compiled {
            Ok(compiled) => {
                let changes = server.replace(compiled);
                server.metrics().reload(true);
                log.loaded(&server.declaration().hash);
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
                log.refused(attempted.flatten(), &err);
                tracing::error!(error = %err, "manifest change refused; still serving the previous version");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_that_is_not_a_regular_file_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("manifest.yaml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Before, this read blocked forever (no writer ever opens the FIFO).
        let (result, _) = load(std::slice::from_ref(&fifo), &CompileOptions::default());
        let err = result.err().unwrap_or_default();
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(
            poll(&[fifo], &CompileOptions::default(), &Inputs::default()).map(|_| ()),
            None
        );
    }
}
