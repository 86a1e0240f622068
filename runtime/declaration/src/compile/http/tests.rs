//! Load-time refusals of `http` declarations, each naming its field path. Pure except for the
//! temporary secrets directory.

use crate::{CompileOptions, Compiled, InvalidDeclaration, compile, parse_manifest};
use std::path::{Path, PathBuf};

/// Compiles a server whose spec is `spec` (block YAML, indented two spaces).
pub(in crate::compile) fn compiled_with(
    spec: &str,
    secrets_dir: Option<&Path>,
) -> Result<Compiled, InvalidDeclaration> {
    let text = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"
    );
    let manifest = parse_manifest(&text, PathBuf::new()).unwrap();
    let options = CompileOptions {
        secrets_dir: secrets_dir.map(Path::to_owned),
        ..CompileOptions::default()
    };
    compile(&manifest, &options)
}

/// The `(path, message)` of every error of a spec that must be refused.
pub(in crate::compile) fn errors(spec: &str) -> Vec<(String, String)> {
    compiled_with(spec, None)
        .unwrap_err()
        .errors
        .into_iter()
        .map(|e| (e.path, e.message))
        .collect()
}

fn tool(http: &str) -> String {
    format!(
        "  tools:\n  - name: t\n    inputSchema: {{type: object, properties: {{id: {{type: string}}}}}}\n    http:\n{http}"
    )
}

#[test]
fn refuses_a_url_template_that_could_change_the_host() {
    for url in [
        "https://{id}.example.com/x",
        "https://api.example.com{+id}",
        "https://api.example.com:{id}/",
    ] {
        let found = errors(&tool(&format!("      url: \"{url}\"\n")));
        assert_eq!(found.len(), 1, "{url}: {found:?}");
        assert_eq!(found[0].0, "spec.tools[0].http.url", "{url}");
    }
}

#[test]
fn refuses_bad_jq_and_bad_templates_naming_each_field() {
    let found = errors(&tool(
        "      url: https://api.example.com/x\n      method: POST\n      headers:\n      - {name: X-A, value: '{{ args.id '}\n      body:\n        json: {a: [1, '{% if %}']}\n      responses:\n      - {status: 2xx, jq: '.items | map('}\n      - status: '404'\n        content: [{type: text, text: '{{ status '}]\n",
    ));
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.tools[0].http.headers[0].value",
            "spec.tools[0].http.body.json.a[1]",
            "spec.tools[0].http.responses[0].jq",
            "spec.tools[0].http.responses[1].content[0].text",
        ],
        "{found:?}"
    );
    assert!(found[2].1.starts_with("invalid jq program"), "{found:?}");
}

#[test]
fn refuses_unknown_arguments_and_unknown_jq_filters() {
    let found = errors(&tool(
        "      url: https://api.example.com/items/{idd}\n      query: [{name: q, arg: filter.q}]\n      responses: [{status: default, jq: 'frob'}]\n",
    ));
    assert_eq!(
        found,
        [
            (
                "spec.tools[0].http.url".into(),
                "`idd` is not a property of inputSchema".into()
            ),
            (
                "spec.tools[0].http.query[0].arg".into(),
                "`filter.q` is not a property of inputSchema".into()
            ),
            (
                "spec.tools[0].http.responses[0].jq".into(),
                "invalid jq program: undefined filter `frob`".into()
            ),
        ]
    );
}

#[test]
fn retries_need_a_read_only_or_idempotent_tool() {
    let found = errors(&tool(
        "      method: POST\n      url: https://api.example.com/x\n      retry: {attempts: 3}\n",
    ));
    assert_eq!(found[0].0, "spec.tools[0].http.retry");
    let spec = "  tools:\n  - name: t\n    annotations: {idempotentHint: true}\n    http:\n      method: PUT\n      url: https://api.example.com/x\n      retry: {attempts: 3}\n";
    assert!(compiled_with(spec, None).is_ok());
}

#[test]
fn refuses_misplaced_and_out_of_range_fields() {
    let found = errors(&tool(
        "      url: https://api.example.com/x\n      timeoutMs: 999999\n      cacheTtlMs: 5\n      headers: [{name: Host, value: evil.example.com}]\n      body: {text: hi}\n      responses: [{status: 2xx, text: x}, {status: 2XX}, {status: 6xx}]\n",
    ));
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.tools[0].http.headers[0].name",
            "spec.tools[0].http.body",
            "spec.tools[0].http.timeoutMs",
            "spec.tools[0].http.cacheTtlMs",
            "spec.tools[0].http.responses[0].text",
            "spec.tools[0].http.responses[1].status",
            "spec.tools[0].http.responses[2].status",
        ],
        "{found:?}"
    );
    let found = errors(
        "  tools:\n  - name: t\n    content: [{type: text, text: hi}]\n    http: {url: 'https://a.example/'}\n",
    );
    assert_eq!(found[0].0, "spec.tools[0].http");
}

#[test]
fn resource_http_uses_uri_variables_only() {
    let found = errors(
        "  resourceTemplates:\n  - uriTemplate: 'x://item/{id}'\n    name: item\n    http:\n      url: https://api.example.com/items/{id}/{other}\n      responses: [{status: 2xx, content: []}]\n",
    );
    assert_eq!(
        found,
        [
            (
                "spec.resourceTemplates[0].http.url".into(),
                "`other` is not a variable of the resource URI".into()
            ),
            (
                "spec.resourceTemplates[0].http.responses[0].content".into(),
                "applies to tools only".into()
            ),
        ]
    );
}

#[test]
fn secrets_resolve_from_the_directory_and_never_print() {
    let dir = std::env::temp_dir().join(format!("kube-mcp-http-secrets-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tracker-api")).unwrap();
    std::fs::write(dir.join("tracker-api/token"), "tok-SECRET-1\n").unwrap();
    let spec = tool(
        "      url: https://api.example.com/x\n      headers:\n      - name: Authorization\n        secretKeyRef: {name: tracker-api, key: token}\n        prefix: 'Bearer '\n      query:\n      - name: key\n        secretKeyRef: {name: other, key: api-key}\n",
    );
    let manifest = parse_manifest(
        &format!("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"),
        PathBuf::new(),
    )
    .unwrap();
    assert_eq!(
        manifest
            .declaration
            .secret_refs()
            .into_iter()
            .collect::<Vec<_>>(),
        ["other", "tracker-api"]
    );
    let err = compiled_with(&spec, Some(&dir)).unwrap_err();
    assert_eq!(err.errors.len(), 1);
    assert_eq!(
        err.errors[0].path,
        "spec.tools[0].http.query[0].secretKeyRef"
    );
    assert!(
        err.errors[0]
            .message
            .contains("Secret `other` key `api-key` not found")
    );
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(dir.join("other/api-key"), "k").unwrap();
    let compiled = compiled_with(&spec, Some(&dir)).unwrap();
    let http = compiled.tool("t").unwrap().http.as_ref().unwrap();
    assert_eq!(http.secrets.len(), 2);
    assert!(!format!("{http:?}").contains("tok-SECRET-1"));
    std::fs::write(dir.join("other/api-key"), "bad\nvalue").unwrap();
    let header_spec = spec.replace("      query:\n      - name: key\n", "      - name: X-Key\n");
    let err = compiled_with(&header_spec, Some(&dir)).unwrap_err();
    assert_eq!(
        err.errors[0].path,
        "spec.tools[0].http.headers[1].secretKeyRef"
    );
    assert!(!err.to_string().contains("bad"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compiles_each_distinct_jq_program_once() {
    let tool = |name: &str, jq: &str| {
        format!(
            "  - name: {name}\n    inputSchema: {{type: object}}\n    http:\n      url: https://api.example.com/{name}\n      responses:\n      - {{status: 2xx, jq: '{jq}'}}\n      - {{status: '404', jq: '.error'}}\n"
        )
    };
    let spec = format!(
        "  tools:\n{}{}{}",
        tool("a", "{id, name}"),
        tool("b", "{id, name}"),
        tool("c", "[.items[] | .id]")
    );
    let compiled = compiled_with(&spec, None).unwrap();
    let jq = |tool: usize, response: usize| {
        compiled.tools[tool].http.as_ref().unwrap().responses[response]
            .jq
            .clone()
            .unwrap()
    };
    assert!(std::sync::Arc::ptr_eq(&jq(0, 0), &jq(1, 0)));
    assert!(!std::sync::Arc::ptr_eq(&jq(0, 0), &jq(2, 0)));
    assert!(std::sync::Arc::ptr_eq(&jq(0, 1), &jq(2, 1)));
    // A program that does not compile is refused at every use, each with its own path.
    let spec = format!("  tools:\n{}{}", tool("a", ".["), tool("b", ".["));
    let paths: Vec<String> = errors(&spec).into_iter().map(|(path, _)| path).collect();
    assert_eq!(
        paths,
        [
            "spec.tools[0].http.responses[0].jq",
            "spec.tools[1].http.responses[0].jq"
        ]
    );
}
