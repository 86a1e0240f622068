//! The CRD against its history. `tests/crd-history/rN.yaml` is the CRD of revision N as
//! `mcp-operator crd` wrote it, committed once and never edited. The generated CRD must be the
//! file of its own revision: a changed CRD needs a new revision, or operators would never apply
//! it over the old one. And it must keep what every earlier revision offered (its versions,
//! properties, enum values and types, and no newly required property): what the API server
//! stored under an older CRD must stay valid and keep its fields. Pure: reads committed files.

// A test's setup failures fail the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcp_operator::resource::{CRD_REVISION, REVISION_ANNOTATION, crd_yaml};
use serde_json::{Value, json};
use std::path::Path;

const HISTORY: &str = "operator/tests/crd-history";

fn parse(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

/// Every recorded revision, oldest first.
fn history() -> Vec<(u32, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crd-history");
    let mut revisions: Vec<(u32, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let revision: u32 = name
                .strip_prefix('r')
                .and_then(|n| n.strip_suffix(".yaml"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{HISTORY}/{name}: not named rN.yaml"));
            let crd = parse(&std::fs::read_to_string(&path).unwrap());
            let stamped = &crd["metadata"]["annotations"][REVISION_ANNOTATION];
            assert_eq!(stamped, &json!(revision.to_string()), "{HISTORY}/{name}");
            (revision, crd)
        })
        .collect();
    revisions.sort_by_key(|(revision, _)| *revision);
    revisions
}

#[test]
fn the_crd_is_the_one_recorded_for_its_revision() {
    let ours = parse(&crd_yaml().unwrap());
    let history = history();
    let next = CRD_REVISION + 1;
    let Some((_, recorded)) = history.iter().find(|(r, _)| *r == CRD_REVISION) else {
        panic!(
            "revision {CRD_REVISION} is not recorded: run \
             `cargo run -p mcp-operator -- crd > {HISTORY}/r{CRD_REVISION}.yaml`"
        );
    };
    assert!(
        recorded["spec"] == ours["spec"],
        "the CRD differs from revision {CRD_REVISION} as recorded: set CRD_REVISION in \
         operator/src/resource/revision.rs to {next}, regenerate both crds/ copies and run \
         `cargo run -p mcp-operator -- crd > {HISTORY}/r{next}.yaml` (CONTRIBUTING.md, step 4; \
         never edit a recorded revision: clusters hold it)"
    );
    let newest = history.last().map(|(r, _)| *r);
    assert_eq!(
        newest,
        Some(CRD_REVISION),
        "a recorded revision is newer than CRD_REVISION"
    );
}

#[test]
fn the_crd_keeps_what_every_earlier_revision_offered() {
    let ours = parse(&crd_yaml().unwrap());
    for (revision, old) in history() {
        let lost = crd_losses(&old, &ours);
        assert!(
            lost.is_empty(),
            "the CRD takes away what revision {revision} offered (CONTRIBUTING.md, CRD \
             compatibility: add a new API version instead):\n{}",
            lost.join("\n")
        );
    }
}

/// What `new` takes away from `old`, version by version.
fn crd_losses(old: &Value, new: &Value) -> Vec<String> {
    let mut lost = Vec::new();
    let versions = |crd: &Value| {
        crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let new_versions = versions(new);
    for version in versions(old) {
        let name = &version["name"];
        match new_versions.iter().find(|v| &v["name"] == name) {
            Some(next) if next["served"] == json!(true) => schema_losses(
                &version["schema"]["openAPIV3Schema"],
                &next["schema"]["openAPIV3Schema"],
                name.as_str().unwrap_or_default(),
                &mut lost,
            ),
            _ => lost.push(format!("version {name} is no longer served")),
        }
    }
    lost
}

/// What schema `new` takes away from schema `old` at `path`: each loss as a line.
fn schema_losses(old: &Value, new: &Value, path: &str, lost: &mut Vec<String>) {
    if let (Some(before), Some(after)) = (old.get("type"), new.get("type"))
        && before != after
    {
        lost.push(format!("{path}: type {before} became {after}"));
    }
    match (old.get("enum"), new.get("enum").and_then(Value::as_array)) {
        (Some(Value::Array(before)), Some(after)) => {
            for value in before.iter().filter(|v| !after.contains(v)) {
                lost.push(format!("{path}: enum value {value} removed"));
            }
        }
        (None, Some(_)) => lost.push(format!("{path}: values limited to an enum")),
        _ => {}
    }
    let required = |schema: &Value| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let before = required(old);
    for name in required(new).iter().filter(|n| !before.contains(n)) {
        lost.push(format!("{path}: {name} is newly required"));
    }
    let keeps_unknown = |schema: &Value| schema["x-kubernetes-preserve-unknown-fields"] == true;
    if keeps_unknown(old) && !keeps_unknown(new) {
        lost.push(format!("{path}: unknown fields are no longer kept"));
    }
    for (name, child) in old
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match new.get("properties").and_then(|p| p.get(name)) {
            Some(next) => schema_losses(child, next, &format!("{path}.{name}"), lost),
            None => lost.push(format!("{path}.{name}: removed")),
        }
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", ".*")] {
        if let (Some(before), Some(after)) = (old.get(key), new.get(key))
            && before.is_object()
            && after.is_object()
        {
            schema_losses(before, after, &format!("{path}{suffix}"), lost);
        }
    }
}

/// The check itself finds each kind of loss, and takes additions for none.
#[test]
fn losses_are_found_and_additions_are_not_losses() {
    let old = json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "enum": ["x", "y"]},
        "b": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "integer"}}}},
        "m": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "n": {"type": "integer"},
    }});
    let taken = json!({"type": "object", "required": ["a", "d"], "properties": {
        "a": {"type": "string", "enum": ["x", "z"]},
        "b": {"type": "array", "items": {"type": "object", "required": ["g"], "properties": {
            "g": {"type": "string"},
        }}},
        "d": {"type": "string", "enum": ["on"]},
        "m": {"type": "object"},
        "n": {"type": "string"},
    }});
    let mut lost = Vec::new();
    schema_losses(&old, &taken, "spec", &mut lost);
    assert_eq!(
        lost,
        [
            "spec: \"d\" is newly required",
            "spec.a: enum value \"y\" removed",
            "spec.b[]: \"g\" is newly required",
            "spec.b[].c: removed",
            "spec.m: unknown fields are no longer kept",
            "spec.n: type \"integer\" became \"string\"",
        ]
    );

    let added = json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "enum": ["x", "y", "z"]},
        "b": {"type": "array", "items": {"type": "object", "properties": {
            "c": {"type": "integer"},
            "e": {"type": "object", "required": ["f"], "properties": {"f": {"type": "string"}}},
        }}},
        "m": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "n": {"type": "integer"},
        "o": {"type": "string", "enum": ["on"]},
    }});
    let mut lost = Vec::new();
    schema_losses(&old, &added, "spec", &mut lost);
    assert!(lost.is_empty(), "{lost:?}");

    let dropped = json!({"spec": {"versions": [{"name": "v1", "served": false}]}});
    let offered = json!({"spec": {"versions": [{"name": "v1", "served": true}]}});
    assert_eq!(
        crd_losses(&offered, &dropped),
        ["version \"v1\" is no longer served"]
    );
}
