//! One invalid manifest per compile rule (`tests/invalid/*.yaml`), each naming the error it
//! expects in a `# expect: <field path>: <message start>` line. Every fixture must be refused
//! with exactly its expected errors, so a rule that stops firing, or fires on the wrong field,
//! fails here. Reads the fixture files; compiles without network.

#![allow(clippy::expect_used)]

use mcp_declaration::{CompileOptions, FieldError, compile, parse_manifest};
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/invalid exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The `# expect:` lines of a fixture, as (path, message start).
fn expected(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# expect: "))
        .map(|rest| {
            // `path:` alone expects any message on that field (template errors vary in wording).
            let rest = rest.trim_end();
            let (path, message) = rest
                .split_once(": ")
                .unwrap_or((rest.trim_end_matches(':'), ""));
            (path.to_owned(), message.to_owned())
        })
        .collect()
}

fn matches(error: &FieldError, (path, message): &(String, String)) -> bool {
    error.path == *path && error.message.starts_with(message.as_str())
}

#[test]
fn every_fixture_is_refused_with_exactly_its_expected_errors() {
    let files = fixtures();
    assert!(files.len() >= 40, "only {} fixtures found", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(file).expect("readable fixture");
        let expect = expected(&text);
        if expect.is_empty() {
            failures.push(format!("{name}: no `# expect:` line"));
            continue;
        }
        let dir = file.parent().expect("fixture dir").to_path_buf();
        let manifest = match parse_manifest(&text, dir) {
            Ok(manifest) => manifest,
            Err(err) => {
                failures.push(format!("{name}: refused before compiling: {err}"));
                continue;
            }
        };
        let errors = match compile(&manifest, &CompileOptions::default()) {
            Ok(_) => {
                failures.push(format!("{name}: compiled without errors"));
                continue;
            }
            Err(invalid) => invalid.errors,
        };
        for wanted in &expect {
            if !errors.iter().any(|error| matches(error, wanted)) {
                failures.push(format!("{name}: missing `{}: {}`", wanted.0, wanted.1));
            }
        }
        for error in &errors {
            if !expect.iter().any(|wanted| matches(error, wanted)) {
                failures.push(format!("{name}: unexpected `{error}`"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fixture_names_are_unique_rules() {
    // Two fixtures expecting the same error test one rule twice and leave another untested.
    let mut seen = std::collections::HashMap::new();
    for file in fixtures() {
        let text = std::fs::read_to_string(&file).expect("readable fixture");
        for wanted in expected(&text) {
            if let Some(other) = seen.insert(wanted.clone(), file.clone()) {
                panic!(
                    "{} and {} expect the same error",
                    other.display(),
                    file.display()
                );
            }
        }
    }
}
