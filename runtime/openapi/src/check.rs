//! `mcp-runtime check MANIFEST...`: compiles manifests offline, as the operator would before
//! accepting them (no secret or resource files read), and reports every problem with its field
//! path, as text or JSON, with an exit status for CI and GitOps pipelines. A directory is checked
//! as `serve --manifest DIR` reads it: one server with the sets it includes. Reads the manifests.

use clap::Args;
use mcp_declaration::{
    CompileOptions, Declaration, FieldError, KIND, cluster_problems, compile, manifest_files,
    manifest_text, parse_yaml_documents_bounded, read_bundle, read_manifest,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Flags of `check`.
#[derive(Args)]
pub struct CheckArgs {
    /// MCPServer manifests to check, each on its own; a directory stands for its *.yaml, *.yml,
    /// *.json (and .gz) files, checked together as `serve --manifest DIR` reads them: one
    /// MCPServer with the MCPToolSets its spec.include takes.
    #[arg(value_name = "MANIFEST|DIR", required = true)]
    manifests: Vec<PathBuf>,
    /// Print one JSON document: `[{"file", "ok", "tools", "resources", "resourceTemplates",
    /// "prompts", "errors": [{"path", "message"}]}]`.
    #[arg(long)]
    json: bool,
}

/// The verdict on one manifest.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    /// The file.
    pub file: String,
    /// Whether the operator would accept it.
    pub ok: bool,
    /// Counts of what it declares (when it parses).
    pub tools: usize,
    /// Fixed resources.
    pub resources: usize,
    /// Resource templates.
    pub resource_templates: usize,
    /// Prompts.
    pub prompts: usize,
    /// Every problem, located by field path.
    pub errors: Vec<Problem>,
}

/// One problem.
#[derive(Debug, Serialize, PartialEq)]
pub struct Problem {
    /// Such as `spec.tools[2].http.url`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Checks manifest `text` (read from `file`): one server, with the `MCPToolSet`s it includes when
/// the file holds them too, as `serve` reads it.
pub fn check_text(file: &str, text: &str) -> Checked {
    check_bundle(file, &[(PathBuf::from(file), text.to_owned())])
}

/// `spec.secrets` of a manifest document.
fn listed_secrets(document: &serde_json::Value) -> Option<Vec<String>> {
    let secrets = document.pointer("/spec/secrets")?.clone();
    serde_json::from_value(secrets).ok()
}

/// The verdict on a manifest read: compiled, and checked against the cluster's rules.
fn verdict(
    mut checked: Checked,
    manifest: &mcp_declaration::Manifest,
    listed: &[String],
) -> Checked {
    let declaration: &Declaration = &manifest.declaration;
    checked.tools = declaration.tools.len();
    checked.resources = declaration.resources.len();
    checked.resource_templates = declaration.resource_templates.len();
    checked.prompts = declaration.prompts.len();
    let options = CompileOptions {
        read_files: false,
        secrets_dir: None,
        ..Default::default()
    };
    let mut errors: Vec<FieldError> = match compile(manifest, &options) {
        Ok(_) => Vec::new(),
        Err(invalid) => invalid.errors,
    };
    errors.extend(cluster_problems(declaration, listed));
    checked.ok = errors.is_empty();
    checked.errors = errors
        .into_iter()
        .map(|e| Problem {
            path: e.path,
            message: e.message,
        })
        .collect();
    checked
}

/// Checks the manifests `files` (each a path and its text) as one server, as `serve` reads them.
pub fn check_bundle(name: &str, files: &[(PathBuf, String)]) -> Checked {
    let bundle = match read_bundle(files) {
        Ok(bundle) => bundle,
        Err(err) => return unread(name, err.into_field_errors()),
    };
    // Read without error above, so each document parses; the server's lists its Secrets
    // (`spec.secrets` is a deployment field, so the declaration types do not hold it).
    let listed = files
        .iter()
        .filter_map(|(_, text)| parse_yaml_documents_bounded(text).ok())
        .flatten()
        .find(|doc| doc.get("kind").and_then(serde_json::Value::as_str) == Some(KIND))
        .and_then(|doc| listed_secrets(&doc))
        .unwrap_or_default();
    verdict(unread(name, Vec::new()), &bundle.manifest, &listed)
}

/// A verdict of refusal before anything was counted.
fn unread(file: &str, errors: Vec<FieldError>) -> Checked {
    Checked {
        file: file.to_owned(),
        ok: false,
        tools: 0,
        resources: 0,
        resource_templates: 0,
        prompts: 0,
        errors: errors
            .into_iter()
            .map(|e| Problem {
                path: e.path,
                message: e.message,
            })
            .collect(),
    }
}

fn check_dir(dir: &Path) -> Checked {
    let name = dir.display().to_string();
    let read = manifest_files(&[dir.to_owned()]).and_then(|paths| {
        paths
            .into_iter()
            .map(|path| {
                let text = manifest_text(&path, &read_manifest(&path)?)?;
                Ok((path, text))
            })
            .collect::<Result<Vec<_>, String>>()
    });
    match read {
        Ok(files) => check_bundle(&name, &files),
        Err(message) => unread(
            &name,
            vec![FieldError {
                path: "manifest".into(),
                message,
            }],
        ),
    }
}

fn check_path(path: &Path) -> Checked {
    if path.is_dir() {
        check_dir(path)
    } else {
        check_file(path)
    }
}

fn check_file(path: &Path) -> Checked {
    let file = path.display().to_string();
    let text = std::fs::File::open(path).and_then(|f| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(f, MAX_MANIFEST_BYTES), &mut text)
            .map(|_| text)
    });
    match text {
        Ok(text) => check_text(&file, &text),
        Err(err) => Checked {
            file,
            ok: false,
            tools: 0,
            resources: 0,
            resource_templates: 0,
            prompts: 0,
            errors: vec![Problem {
                path: "manifest".into(),
                message: format!("cannot read: {err}"),
            }],
        },
    }
}

/// Runs `check`: success only when every manifest would be accepted.
pub fn run_cli(args: CheckArgs) -> ExitCode {
    let results: Vec<Checked> = args.manifests.iter().map(|p| check_path(p)).collect();
    if args.json {
        match serde_json::to_string_pretty(&results) {
            Ok(text) => println!("{text}"),
            Err(err) => {
                eprintln!("error: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        for checked in &results {
            if checked.ok {
                println!(
                    "{}: ok ({} tools, {} resources, {} resource templates, {} prompts)",
                    checked.file,
                    checked.tools,
                    checked.resources,
                    checked.resource_templates,
                    checked.prompts
                );
            } else {
                for problem in &checked.errors {
                    println!("{}: {}: {}", checked.file, problem.path, problem.message);
                }
            }
        }
    }
    if results.iter().all(|c| c.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: t}\nspec:\n";

    #[test]
    fn a_valid_manifest_passes_with_counts() {
        let checked = check_text(
            "a.yaml",
            &format!("{HEAD}  tools:\n  - name: hi\n    content: [{{type: text, text: hi}}]\n"),
        );
        assert!(checked.ok, "{checked:?}");
        assert_eq!(checked.tools, 1);
    }

    #[test]
    fn every_problem_is_located() {
        let checked = check_text(
            "b.yaml",
            &format!(
                "{HEAD}  tools:\n  - name: 'bad name'\n    content: [{{type: text, text: hi}}]\n  \
                 - name: up\n    http:\n      url: 'http://{{host}}/x'\n      headers:\n      \
                 - {{name: Authorization, secretKeyRef: {{name: tok, key: t}}}}\n"
            ),
        );
        assert!(!checked.ok);
        let paths: Vec<&str> = checked.errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"spec.tools[0].name"), "{paths:?}");
        assert!(paths.contains(&"spec.tools[1].http.url"), "{paths:?}");
        // The unlisted Secret is reported where it is referenced, as the operator reports it.
        assert!(paths.contains(&"spec.tools[1].http"), "{paths:?}");
    }

    #[test]
    fn every_example_would_be_accepted() {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut files = Vec::new();
        let mut dirs = vec![examples];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() >= 2, "{files:?}");
        for file in files {
            let checked = check_file(&file);
            assert!(checked.ok, "{checked:?}");
        }
    }

    #[test]
    fn a_directory_is_checked_as_one_server_with_its_sets() {
        let dir = tempfile::tempdir().unwrap();
        let server = format!(
            "{HEAD}  secrets: [tok]\n  include:\n  - selector: {{matchLabels: {{api: t}}}}\n"
        );
        let set = "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPToolSet\n\
            metadata: {name: t-a, labels: {api: t}}\nspec:\n  tools:\n  - name: up\n    \
            http:\n      url: 'https://api.example.com/x'\n      headers:\n      \
            - {name: Authorization, secretKeyRef: {name: tok, key: t}}\n";
        std::fs::write(dir.path().join("server.yaml"), &server).unwrap();
        std::fs::write(dir.path().join("a.yaml"), set).unwrap();
        let checked = check_path(dir.path());
        assert!(checked.ok, "{checked:?}");
        assert_eq!(checked.tools, 1);
        // The Secret the set's tool reads must be listed by the server.
        std::fs::write(
            dir.path().join("server.yaml"),
            server.replace("[tok]", "[]"),
        )
        .unwrap();
        let checked = check_path(dir.path());
        assert!(!checked.ok);
        assert_eq!(checked.errors[0].path, "spec.tools[0].http", "{checked:?}");
        std::fs::remove_file(dir.path().join("server.yaml")).unwrap();
        let checked = check_path(dir.path());
        assert_eq!(
            checked.errors[0].message,
            "no MCPServer among the manifests"
        );
    }

    #[test]
    fn shape_errors_name_the_field() {
        let checked = check_text(
            "c.yaml",
            &format!("{HEAD}  tools:\n  - name: a\n    contnet: []\n"),
        );
        assert_eq!(
            checked.errors,
            [Problem {
                path: "spec.tools[0].contnet".into(),
                message: "unknown field".into()
            }]
        );
    }
}
