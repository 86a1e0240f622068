//! Load-time rules of `http.async` and `tools[].task`, and the egress rule of the URLs an
//! upstream hands back. Pure.

use super::super::http::tests::{compiled_with, errors};
use crate::types::TaskSupport;
use crate::{CompiledAsync, StatusUrl};
use url::Url;

fn async_tool(task: &str, job: &str) -> String {
    format!(
        "  tools:\n  - name: export\n{task}    http:\n      method: POST\n      url: https://jobs.example.com/exports\n      async:\n{job}"
    )
}

const JOB: &str = "        status: {url: \"{{ response.headers.location }}\"}\n        done: '.state == \"done\"'\n";

#[test]
fn an_async_tool_is_a_task_by_default_and_lists_its_support() {
    let compiled = compiled_with(&async_tool("", JOB), None).unwrap();
    let tool = &compiled.tools[0];
    assert_eq!(tool.task, TaskSupport::Optional);
    assert_eq!(tool.descriptor["execution"]["taskSupport"], "optional");
    let job = tool.http.as_ref().unwrap().job.as_ref().unwrap();
    assert!(matches!(job.status, StatusUrl::Template(_)));
    assert_eq!(job.interval.as_millis(), 2_000);
    assert_eq!(job.ttl.as_millis(), 3_600_000);
    assert!(job.cancel.is_none());
    let required = compiled_with(&async_tool("    task: required\n", JOB), None).unwrap();
    assert_eq!(required.tools[0].task, TaskSupport::Required);
}

#[test]
fn only_async_tools_can_be_tasks() {
    let spec = "  tools:\n  - name: t\n    task: required\n    content: [{type: text, text: hi}]\n";
    assert_eq!(
        errors(spec),
        [(
            "spec.tools[0].task".to_owned(),
            "only a tool with `http.async` can be a task".to_owned()
        )]
    );
    let never = "  tools:\n  - name: t\n    task: never\n    content: [{type: text, text: hi}]\n";
    let compiled = compiled_with(never, None).unwrap();
    assert_eq!(compiled.tools[0].task, TaskSupport::Never);
    assert!(compiled.tools[0].descriptor.get("execution").is_none());
}

#[test]
fn refuses_bad_async_fields_by_path() {
    let job = "        status: {url: x, jq: .x}\n        done: '.state =='\n        intervalMs: 10\n        ttlMs: 999999999999\n        result: {}\n";
    let found: Vec<String> = errors(&async_tool("", job))
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let at = |field: &str| format!("spec.tools[0].http.async.{field}");
    assert_eq!(
        found,
        [
            at("status"),
            at("intervalMs"),
            at("ttlMs"),
            at("done"),
            at("result")
        ]
    );
}

#[test]
fn async_applies_to_tools_only() {
    let spec = "  resources:\n  - uri: docs://r\n    name: r\n    http:\n      url: https://jobs.example.com/r\n      async:\n        status: {jq: .url}\n        done: .done\n";
    assert_eq!(
        errors(spec),
        [(
            "spec.resources[0].http.async".to_owned(),
            "applies to tools only".to_owned()
        )]
    );
}

#[test]
fn upstream_urls_resolve_against_the_base_and_keep_the_origin() {
    let origin = Url::parse("https://jobs.example.com/").unwrap();
    let base = Url::parse("https://jobs.example.com/exports").unwrap();
    let resolve = |found: &str| CompiledAsync::follow_up_url(found, &base, &origin);
    assert_eq!(
        resolve("/exports/7").unwrap().as_str(),
        "https://jobs.example.com/exports/7"
    );
    assert_eq!(
        resolve("exports/7?x=1").unwrap().as_str(),
        "https://jobs.example.com/exports/7?x=1"
    );
    assert_eq!(
        resolve("https://jobs.example.com:443/j/1")
            .unwrap()
            .as_str(),
        "https://jobs.example.com/j/1"
    );
    for elsewhere in [
        "https://evil.example.com/j/1",
        "http://jobs.example.com/j/1",
        "https://jobs.example.com:8443/j/1",
        "//169.254.169.254/latest",
    ] {
        assert!(resolve(elsewhere).is_err(), "{elsewhere}");
    }
    assert!(resolve("  ").is_err());
}
