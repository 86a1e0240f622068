//! Reading the files a manifest names (`file:` resources) and the manifest itself: regular files
//! only (a FIFO or device would block or never end), bounded in size, and a named file may not
//! leave the manifest's directory (no absolute paths, no `..`, no symlink out). Does file I/O.

use std::io::Read;
use std::path::{Component, Path};

/// Largest file the runtime reads.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Reads `name`, relative to `base_dir`, if it stays inside `base_dir`.
pub fn read_within(base_dir: &Path, name: &str) -> Result<Vec<u8>, String> {
    let relative = Path::new(name);
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(
            "must be a path inside the manifest's directory (no `/` at the start, no `..`)".into(),
        );
    }
    let joined = base_dir.join(relative);
    let base = std::fs::canonicalize(if base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base_dir
    })
    .map_err(|err| format!("cannot resolve the manifest's directory: {}", err.kind()))?;
    let target = std::fs::canonicalize(&joined).map_err(|err| err.kind().to_string())?;
    if !target.starts_with(&base) {
        return Err("a symlink leads out of the manifest's directory".into());
    }
    read_regular(&target)
}

/// Reads a regular file of at most [`MAX_FILE_BYTES`].
pub fn read_regular(path: &Path) -> Result<Vec<u8>, String> {
    // `metadata` does not open the file, so a FIFO is refused before anything blocks on it.
    let metadata = std::fs::metadata(path).map_err(|err| err.kind().to_string())?;
    if !metadata.is_file() {
        return Err("not a regular file".into());
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    let file = std::fs::File::open(path).map_err(|err| err.kind().to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| err.kind().to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_inside_the_manifest_directory() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("m");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(inner.join("ok.txt"), "fine").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), inner.join("link")).unwrap();
        assert_eq!(read_within(&inner, "ok.txt").unwrap(), b"fine");
        assert_eq!(read_within(&inner, "./ok.txt").unwrap(), b"fine");
        for bad in [
            "../secret.txt",
            "/etc/hostname",
            "link",
            "a/../../secret.txt",
        ] {
            assert!(read_within(&inner, bad).is_err(), "{bad} was read");
        }
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        // A FIFO with no writer: opening it for reading would block forever.
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = read_within(dir.path(), "fifo").unwrap_err();
        assert_eq!(err, "not a regular file");
        assert!(read_within(dir.path(), ".").is_err());
        assert!(read_regular(&fifo).is_err());
    }
}
