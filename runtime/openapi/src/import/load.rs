//! Loading an OpenAPI description and the files its relative `$ref`s name, and resolving
//! references (`file#/json/pointer`). Does file I/O in [`Documents::read`] and
//! [`Documents::parse`] only; resolution is pure. References never leave the spec's
//! directory and never reach the network.

use super::ImportError;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Component, Path, PathBuf};

/// Largest spec (or referenced file) read, in bytes.
pub const MAX_SPEC_BYTES: u64 = 64 << 20;
/// Most files one spec may pull in through `$ref`s.
const MAX_FILES: usize = 256;
/// Longest chain of references to references.
const MAX_REF_CHAIN: usize = 32;

/// Which OpenAPI generation a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// Swagger 2.0.
    Swagger2,
    /// OpenAPI 3.0.x.
    V30,
    /// OpenAPI 3.1.x.
    V31,
}

/// The main document and every file it references, by path relative to the spec's directory.
#[derive(Debug)]
pub struct Documents {
    files: BTreeMap<PathBuf, Value>,
    main: PathBuf,
    /// The document's generation.
    pub version: Version,
}

/// A place in the documents: a file and a JSON pointer within it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The file, relative to the spec's directory.
    pub file: PathBuf,
    /// JSON pointer, `""` for the whole file.
    pub pointer: String,
}

impl Documents {
    /// Reads `spec` (a file, or `-` for stdin) and the files its relative `$ref`s name.
    pub fn read(spec: &Path) -> Result<Self, ImportError> {
        let read_err = |path: &Path| {
            let path = path.to_owned();
            move |source| ImportError::Read { path, source }
        };
        if spec == Path::new("-") {
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(std::io::stdin(), MAX_SPEC_BYTES + 1),
                &mut text,
            )
            .map_err(read_err(spec))?;
            let dir = std::env::current_dir().map_err(read_err(spec))?;
            return Self::parse(&text, &dir);
        }
        let dir = spec.parent().unwrap_or(Path::new("")).to_owned();
        let name = spec
            .file_name()
            .map(PathBuf::from)
            .ok_or_else(|| ImportError::Spec(format!("{} is not a file", spec.display())))?;
        let text = read_bounded(spec).map_err(read_err(spec))?;
        Self::load(&text, &dir, name)
    }

    /// Parses spec text; relative `$ref`s are read from `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<Self, ImportError> {
        Self::load(text, dir, PathBuf::from("<stdin>"))
    }

    fn load(text: &str, dir: &Path, main: PathBuf) -> Result<Self, ImportError> {
        if text.len() as u64 > MAX_SPEC_BYTES {
            return Err(ImportError::Spec(format!(
                "the spec is larger than {MAX_SPEC_BYTES} bytes"
            )));
        }
        let root = parse_text(text).map_err(|message| {
            ImportError::Spec(format!("the spec is not YAML or JSON: {message}"))
        })?;
        let version = version(&root)?;
        let mut files = BTreeMap::new();
        files.insert(main.clone(), root);
        let mut queue = VecDeque::from([main.clone()]);
        while let Some(file) = queue.pop_front() {
            let mut wanted = Vec::new();
            if let Some(value) = files.get(&file) {
                file_refs(value, &mut wanted);
            }
            for reference in wanted {
                let target = relative_file(&file, &reference)?;
                if files.contains_key(&target) {
                    continue;
                }
                if files.len() >= MAX_FILES {
                    return Err(ImportError::Spec(format!(
                        "the spec references more than {MAX_FILES} files"
                    )));
                }
                let path = dir.join(&target);
                let text = read_bounded(&path).map_err(|source| ImportError::Read {
                    path: path.clone(),
                    source,
                })?;
                let value = parse_text(&text).map_err(|message| ImportError::Ref {
                    reference: reference.clone(),
                    message,
                })?;
                files.insert(target.clone(), value);
                queue.push_back(target);
            }
        }
        Ok(Self {
            files,
            main,
            version,
        })
    }

    /// The main document.
    pub fn root(&self) -> &Value {
        &self.files[&self.main]
    }

    /// Where the main document is.
    pub fn main_location(&self) -> Location {
        Location {
            file: self.main.clone(),
            pointer: String::new(),
        }
    }

    /// Where `reference`, found in `file`, points.
    pub fn locate(&self, file: &Path, reference: &str) -> Result<Location, ImportError> {
        let (path, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let file = if path.is_empty() {
            file.to_owned()
        } else {
            relative_file(file, reference)?
        };
        let pointer = percent_decode(fragment);
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(ImportError::Ref {
                reference: reference.into(),
                message: "only JSON-pointer fragments (`#/...`) are supported".into(),
            });
        }
        Ok(Location { file, pointer })
    }

    /// The value at `location`.
    pub fn get(&self, location: &Location) -> Option<&Value> {
        self.files.get(&location.file)?.pointer(&location.pointer)
    }

    /// Follows `$ref` chains from `value` (found in `file`) to a value that is not a reference.
    pub fn deref<'a>(
        &'a self,
        file: &Path,
        value: &'a Value,
    ) -> Result<(PathBuf, &'a Value), ImportError> {
        let mut file = file.to_owned();
        let mut value = value;
        for _ in 0..MAX_REF_CHAIN {
            let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
                return Ok((file, value));
            };
            let location = self.locate(&file, reference)?;
            value = self.get(&location).ok_or_else(|| ImportError::Ref {
                reference: reference.into(),
                message: "points at nothing".into(),
            })?;
            file = location.file;
        }
        Err(ImportError::Ref {
            reference: value
                .get("$ref")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            message: format!("a chain of more than {MAX_REF_CHAIN} references (a loop?)"),
        })
    }
}

fn read_bounded(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    if file.metadata()?.len() > MAX_SPEC_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_SPEC_BYTES} bytes"
        )));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_SPEC_BYTES), &mut text)?;
    Ok(text)
}

/// JSON first (faster, and most large specs are JSON), then YAML.
fn parse_text(text: &str) -> Result<Value, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|err| err.to_string());
    }
    mcp_declaration::parse_yaml_bounded(text).map_err(|err| err.to_string())
}

fn version(root: &Value) -> Result<Version, ImportError> {
    if root.get("swagger").and_then(Value::as_str) == Some("2.0") {
        return Ok(Version::Swagger2);
    }
    match root.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.0") => Ok(Version::V30),
        Some(v) if v.starts_with("3.1") || v.starts_with("3.2") => Ok(Version::V31),
        Some(v) => Err(ImportError::Spec(format!(
            "unsupported OpenAPI version `{v}`"
        ))),
        None => Err(ImportError::Spec(
            "not an OpenAPI document: no `openapi: 3.x` or `swagger: \"2.0\"` field".into(),
        )),
    }
}

/// Every `$ref` in `value` that names another file.
fn file_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref")
                && !reference.starts_with('#')
            {
                out.push(reference.clone());
            }
            map.values().for_each(|v| file_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| file_refs(v, out)),
        _ => {}
    }
}

/// The file a reference names, relative to the spec's directory; refuses URLs, absolute paths
/// and paths that climb out of the spec's directory.
fn relative_file(from: &Path, reference: &str) -> Result<PathBuf, ImportError> {
    let path = reference.split('#').next().unwrap_or_default();
    let refuse = |message: &str| ImportError::Ref {
        reference: reference.into(),
        message: message.into(),
    };
    if path.contains("://") {
        return Err(refuse("remote references are not fetched"));
    }
    let joined = from
        .parent()
        .unwrap_or(Path::new(""))
        .join(percent_decode(path));
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir if normal.pop() => {}
            _ => {
                return Err(refuse(
                    "must be a relative path inside the spec's directory",
                ));
            }
        }
    }
    Ok(normal)
}

fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_relative_file_refs_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("schemas")).unwrap();
        std::fs::write(
            dir.path().join("schemas/pet.yaml"),
            "Pet: {type: object, properties: {owner: {$ref: 'owner.yaml'}}}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("schemas/owner.yaml"), "type: string\n").unwrap();
        let docs = Documents::parse(
            "openapi: 3.0.3\npaths: {}\nx: {$ref: 'schemas/pet.yaml#/Pet'}\n",
            dir.path(),
        )
        .unwrap();
        let (file, pet) = docs.deref(Path::new("<stdin>"), &docs.root()["x"]).unwrap();
        assert_eq!(file, PathBuf::from("schemas/pet.yaml"));
        let (_, owner) = docs.deref(&file, &pet["properties"]["owner"]).unwrap();
        assert_eq!(owner, &json!({"type": "string"}));

        let err = Documents::parse("openapi: 3.0.3\nx: {$ref: '../etc/passwd'}\n", dir.path())
            .unwrap_err();
        assert!(
            err.to_string().contains("inside the spec's directory"),
            "{err}"
        );
        let err = Documents::parse(
            "openapi: 3.0.3\nx: {$ref: 'https://e.com/a.yaml'}\n",
            dir.path(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("remote references"), "{err}");
    }

    #[test]
    fn reference_loops_are_errors_not_hangs() {
        let docs = Documents::parse(
            "openapi: 3.1.0\na: {$ref: '#/b'}\nb: {$ref: '#/a'}\n",
            Path::new("."),
        )
        .unwrap();
        let err = docs
            .deref(Path::new("<stdin>"), &docs.root()["a"])
            .unwrap_err();
        assert!(err.to_string().contains("a loop?"), "{err}");
    }

    #[test]
    fn knows_the_three_generations_and_refuses_others() {
        let v = |text: &str| Documents::parse(text, Path::new(".")).map(|d| d.version);
        assert_eq!(v("swagger: '2.0'").unwrap(), Version::Swagger2);
        assert_eq!(v("openapi: 3.0.1").unwrap(), Version::V30);
        assert_eq!(v("{\"openapi\": \"3.1.0\"}").unwrap(), Version::V31);
        assert!(v("openapi: 4.0.0").is_err());
        assert!(
            v("kind: ConfigMap")
                .unwrap_err()
                .to_string()
                .contains("not an OpenAPI")
        );
        assert!(
            v("[unclosed")
                .unwrap_err()
                .to_string()
                .contains("not YAML or JSON")
        );
    }

    #[test]
    fn pointers_are_unescaped() {
        let docs = Documents::parse(
            "openapi: 3.1.0\npaths:\n  /a/{b}: {get: {}}\n",
            Path::new("."),
        )
        .unwrap();
        let at = docs
            .locate(Path::new("<stdin>"), "#/paths/~1a~1%7Bb%7D/get")
            .unwrap();
        assert_eq!(docs.get(&at), Some(&json!({})));
    }
}
