//! Live reload: polls the manifest (and the files its resources and secret references name) and
//! swaps in the new declaration when they change. Polling follows the symlink swaps of ConfigMap volumes without
//! special cases. An invalid new version keeps the old one serving, is logged and counted.
//! Each poll reads and compiles on a blocking thread under a time limit, so a file that blocks
//! (a FIFO, a hung network mount) cannot stall the process; while such a poll is stuck, later
//! ticks are skipped.

pub use log::ReloadLog;
use mcp_declaration::{
    CompileOptions, Manifest, compile, parse_manifest, read_regular, secret_path,
};
use mcp_server::{Served, Server};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod log;

/// Longest a poll may take to read and compile before it is given up on.
pub const POLL_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest interval between polls.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

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
pub fn load(path: &Path, options: &CompileOptions) -> (Result<Served, String>, Inputs) {
    let manifest = match read_regular(path) {
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
) -> (Result<Served, String>, Inputs) {
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
    let compiled = parsed
        .and_then(|m| compile(&m, options).map_err(|err| err.to_string()))
        .and_then(|compiled| Served::new(compiled).map_err(|err| err.to_string()));
    (
        compiled,
        Inputs {
            manifest: bytes,
            files,
        },
    )
}

/// What one poll found: nothing new, or a new version (compiled or refused) and its inputs.
type Polled = Option<(Result<Served, String>, Inputs)>;

/// Reads the manifest and, when it or a file it names changed, parses and compiles it.
fn poll(path: &Path, options: &CompileOptions, served: &Inputs) -> Polled {
    // A manifest being swapped may be briefly unreadable; the next tick sees it.
    let manifest = read_regular(path).ok()?;
    if !served.changed(&manifest) {
        return None;
    }
    Some(load_bytes(path, manifest, options))
}

/// The stamp of a manifest that could not be served, when it parses that far.
fn attempted_hash(path: &Path, inputs: &Inputs) -> Option<String> {
    let text = std::str::from_utf8(&inputs.manifest).ok()?;
    let base = path.parent().map(Path::to_owned).unwrap_or_default();
    parse_manifest(text, base).ok()?.hash
}

/// Watches until `stop`, starting from the inputs of what is being served; records each
/// attempt in `log`.
pub async fn watch(
    path: PathBuf,
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
        let (file, options, inputs) = (path.clone(), options.clone(), served.clone());
        let mut task = tokio::task::spawn_blocking(move || poll(&file, &options, &inputs));
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
        let attempted = compiled.is_err().then(|| attempted_hash(&path, &inputs));
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
        let (result, _) = load(&fifo, &CompileOptions::default());
        let err = result.err().unwrap_or_default();
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(
            poll(&fifo, &CompileOptions::default(), &Inputs::default()).map(|_| ()),
            None
        );
    }
}
