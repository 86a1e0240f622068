//! Live reload: polls the manifests (and the files their resources and secret references name)
//! and swaps in the new declaration when they change. Polling follows the symlink swaps of
//! ConfigMap volumes without special cases, and lists manifest directories again each time. An
//! invalid new version keeps the old one serving, is logged and counted. Each poll reads and
//! compiles on a thread of its own under a time limit, so a file that blocks (a FIFO, a hung network
//! mount) cannot stall the process; while such a poll is stuck, later ticks are skipped.
//! Nothing of a reload runs on the request workers: parsing and compiling, the swap with its
//! list of changes, and freeing the old declaration (which waits on its own thread for the
//! requests still using it) each take milliseconds per thousand tools. Those threads run at a
//! lower priority, so that on a small node the requests served meanwhile are not slowed by a
//! large declaration compiling beside them.

pub use log::ReloadLog;
pub use mcp_declaration::MAX_MANIFEST_FILES;
use mcp_declaration::{
    Bundle, CompileOptions, Manifest, compile, manifest_files, manifest_text, read_bundle,
    read_manifest, secret_path,
};
use mcp_server::{Changes, Served, Server};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

mod log;

/// Longest a poll may take to read and compile before it is given up on.
pub const POLL_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest interval between polls.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest a replaced declaration waits for the requests still using it before its reload
/// thread lets go of it (the last of them then frees it).
const RETIRE_WAIT: Duration = Duration::from_secs(30);
/// Niceness of the reload threads (Linux applies it to the calling thread alone). Not 19: a
/// reload on a busy node should still finish well within `POLL_TIMEOUT`.
const RELOAD_NICE: i32 = 10;

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
    manifest_files(paths)?
        .into_iter()
        .map(|path| read_manifest(&path).map(|bytes| (path, bytes)))
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
        .map(|(path, stored)| manifest_text(path, stored).map(|text| (path.clone(), text)))
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

/// What one poll found: nothing new, or a new version and its inputs: compiled, or refused
/// (with its stamp when it parses that far).
type Polled = Option<(Result<Served, (String, Option<String>)>, Inputs)>;

/// Reads the manifests and, when they or a file they name changed, parses and compiles them.
fn poll(paths: &[PathBuf], options: &CompileOptions, served: &Inputs) -> Polled {
    // A manifest being swapped may be briefly unreadable; the next tick sees it.
    let manifests = read_all(paths).ok()?;
    if !served.changed(&manifests) {
        return None;
    }
    let (compiled, inputs) = load_manifests(manifests, options);
    let compiled = compiled.map_err(|err| (err, attempted_hash(&inputs)));
    Some((compiled, inputs))
}

/// Runs `work` on a new thread at the reload threads' priority; `done` gets what it returns.
fn off_workers<T: Send + 'static>(
    work: impl FnOnce(oneshot::Sender<T>) + Send + 'static,
) -> std::io::Result<(JoinHandle<()>, oneshot::Receiver<T>)> {
    let (done, result) = oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("mcp-reload".into())
        .spawn(move || {
            lower_priority();
            work(done);
        })?;
    Ok((thread, result))
}

/// Lowers the calling thread's priority to `RELOAD_NICE` (never raises it). Best effort: where
/// it fails the reload competes with requests as an equal, as before.
#[cfg(target_os = "linux")]
fn lower_priority() {
    use rustix::process::{getpriority_process, setpriority_process};
    let me = Some(rustix::thread::gettid());
    if getpriority_process(me).is_ok_and(|nice| nice < RELOAD_NICE) {
        let _ = setpriority_process(me, RELOAD_NICE);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// Swaps in `served` and frees the declaration it replaces, both on a reload thread; the
/// changes come back as soon as the swap is done. Where no thread can be started, here.
async fn swap(server: &Arc<Server>, served: Served) -> Changes {
    let (spare, served) = (
        server.clone(),
        Arc::new(std::sync::Mutex::new(Some(served))),
    );
    let handed = served.clone();
    let started = off_workers(move |done| {
        let Some(served) = handed.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        let (changes, old) = spare.swap(served);
        let _ = done.send(changes);
        retire(old);
    });
    if let Ok((_, changes)) = started
        && let Ok(changes) = changes.await
    {
        return changes;
    }
    let served = served.lock().ok().and_then(|mut s| s.take());
    served.map(|s| server.replace(s)).unwrap_or_default()
}

/// Drops `old` once nothing else holds it (so that it is freed on this thread, not on the
/// worker of the last request that used it), or after `RETIRE_WAIT`.
fn retire(old: Arc<Served>) {
    let started = Instant::now();
    while Arc::strong_count(&old) > 1 && started.elapsed() < RETIRE_WAIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(old);
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
    let mut stuck: Option<JoinHandle<()>> = None;
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
        let Ok((thread, mut task)) = off_workers(move |done| {
            let _ = done.send(poll(&files, &options, &inputs));
        }) else {
            // No thread to be had now: the next tick tries again.
            continue;
        };
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
                stuck = Some(thread);
                continue;
            }
        };
        let Some((compiled, inputs)) = polled else {
            continue;
        };
        served = Arc::new(inputs);
        match compiled {
            Ok(compiled) => {
                let changes = swap(&server, compiled).await;
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
            Err((err, attempted)) => {
                server.metrics().reload(false);
                log.refused(attempted, &err);
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
