//! The files `serve --manifest` and `check` read. Each path given is a manifest file or a
//! directory of them (the operator mounts the rendered manifest as a ConfigMap volume, which is
//! a directory; `import openapi --split-by-tag` writes a server and its sets into one).
//! `serve` lists directories again on every poll, so a set file added or removed reloads the
//! server. `.gz` files are decompressed (the operator compresses a manifest too big for a
//! ConfigMap), bounded like every file. Does file I/O.

use crate::files::{MAX_FILE_BYTES, read_regular};
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most manifest files one server is read from.
pub const MAX_MANIFEST_FILES: usize = 1024;

/// What a directory entry must end with to be read as a manifest.
const MANIFEST_SUFFIXES: [&str; 6] = [".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz"];

/// The manifest files `paths` stand for: files as given, and each directory's manifest files
/// (regular files, symlinks followed, hidden entries skipped: a ConfigMap volume's `..data`)
/// sorted by name.
pub fn manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path)
            .map_err(|err| format!("cannot read {}: {}", path.display(), err.kind()))?;
        if !metadata.is_dir() {
            files.push(path.clone());
            continue;
        }
        let entries = std::fs::read_dir(path)
            .map_err(|err| format!("cannot list {}: {}", path.display(), err.kind()))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|err| format!("cannot list {}: {}", path.display(), err.kind()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let manifest = !name.starts_with('.')
                && MANIFEST_SUFFIXES
                    .iter()
                    .any(|suffix| name.ends_with(suffix));
            if manifest && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                found.push(entry.path());
            }
            if files.len() + found.len() > MAX_MANIFEST_FILES {
                return Err(format!(
                    "more than {MAX_MANIFEST_FILES} manifest files in {}",
                    path.display()
                ));
            }
        }
        if found.is_empty() {
            return Err(format!(
                "{} holds no manifest file ({})",
                path.display(),
                MANIFEST_SUFFIXES.join(", ")
            ));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// Reads one manifest file as it is stored (compressed or not).
pub fn read_manifest(path: &Path) -> Result<Vec<u8>, String> {
    read_regular(path).map_err(|err| format!("cannot read {}: {err}", path.display()))
}

/// A manifest file's text: decompressed when its name ends with `.gz`, at most
/// [`MAX_FILE_BYTES`] either way.
pub fn manifest_text(path: &Path, stored: &[u8]) -> Result<String, String> {
    let at = |message: String| format!("{}: {message}", path.display());
    let bytes = if path.extension().is_some_and(|e| e == "gz") {
        let mut text = Vec::new();
        GzDecoder::new(stored)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|err| at(format!("cannot decompress: {err}")))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(at(format!(
                "decompresses to more than {} MiB",
                MAX_FILE_BYTES >> 20
            )));
        }
        text
    } else {
        stored.to_vec()
    };
    String::from_utf8(bytes).map_err(|err| at(format!("not UTF-8: {}", err.utf8_error())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    #[test]
    fn a_directory_lists_its_manifests_by_name_skipping_hidden_and_other_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.yaml", "a.yml", "c.json.gz", ".hidden.yaml", "notes.txt"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.yaml")).unwrap();
        let listed = manifest_files(&[dir.path().to_owned()]).unwrap();
        let names: Vec<_> = listed
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["a.yml", "b.yaml", "c.json.gz"]);
        let empty = tempfile::tempdir().unwrap();
        let err = manifest_files(&[empty.path().to_owned()]).unwrap_err();
        assert!(err.contains("holds no manifest file"), "{err}");
        let err = manifest_files(&[dir.path().join("gone.yaml")]).unwrap_err();
        assert!(err.contains("gone.yaml"), "{err}");
    }

    #[test]
    fn compressed_manifests_are_read_within_the_file_bound() {
        let gz = |bytes: &[u8]| {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
            encoder.write_all(bytes).unwrap();
            encoder.finish().unwrap()
        };
        let path = Path::new("m.yaml.gz");
        assert_eq!(
            manifest_text(path, &gz(b"kind: MCPServer")).unwrap(),
            "kind: MCPServer"
        );
        // A small file may not stand for a huge one.
        let bomb = gz(&vec![b' '; MAX_FILE_BYTES as usize + 1]);
        assert!(bomb.len() < 1 << 20);
        let err = manifest_text(path, &bomb).unwrap_err();
        assert!(err.ends_with("decompresses to more than 16 MiB"), "{err}");
        let err = manifest_text(path, b"not gzip").unwrap_err();
        assert!(err.contains("cannot decompress"), "{err}");
        assert_eq!(
            manifest_text(Path::new("m.yaml"), b"plain").unwrap(),
            "plain"
        );
    }
}
