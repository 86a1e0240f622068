//! Validate step of the reconcile pipeline: compile the declaration with the runtime's own
//! compiler, and render the manifest the runtime will read from the ConfigMap. Pure.

use super::manifest_data::{MAX_MANIFEST_BYTES, ManifestData, manifest_data};
use crate::resource::{Counts, IncludedToolSet, LimitsStatus, MCPServer};
use kube::ResourceExt;
use mcp_declaration::{
    CompileOptions, Declaration, FieldError, IncludeError, IncludeProblem, Manifest, ToolSet,
    ToolSetGrant, cluster_problems, compile, render_manifest, resolve_includes,
};
use std::collections::{BTreeMap, BTreeSet};

/// A declaration the runtime will serve.
#[derive(Clone, Debug, PartialEq)]
pub struct Accepted {
    /// The runtime manifest: an `MCPServer` document holding only the declaration, its
    /// included sets merged in.
    pub manifest_yaml: String,
    /// How its ConfigMap stores it (compressed when too large as text).
    pub data: ManifestData,
    /// The sets `spec.include` took, in include order.
    pub tool_sets: Vec<IncludedToolSet>,
    /// What it declares.
    pub counts: Counts,
    /// [`declaration_hash`] of it, stamped into the manifest (the runtime reports the hash it
    /// serves, so the operator can tell whether pods serve this declaration).
    pub hash: String,
    /// Each replica's share of `spec.limits`, as rendered into the manifest.
    pub limits: Option<LimitsStatus>,
    /// The audiences of the projected ServiceAccount tokens its `http.auth` clients send
    /// (`serviceAccountToken`), included sets' items among them: the pods mount one each.
    pub service_account_audiences: BTreeSet<String>,
    /// The groups that approve its gated tools (`tools[].approval`), each once, sorted; empty
    /// when no tool needs an approval (the pods then get no API access for approvals).
    pub approver_groups: Vec<String>,
}

/// Annotation of the runtime manifest (and of its ConfigMap) holding the declaration's hash; the
/// hash is [`declaration_hash`] of the manifest rendered without it (the runtime crate's
/// functions, so a pod computes the same hash for a manifest without the stamp).
pub use mcp_declaration::{HASH_ANNOTATION, declaration_hash};

/// The container variable the operator sets to the pod's IP (for `--advertise-address`);
/// `spec.env` may not set it.
pub const POD_IP_VAR: &str = "KUBE_MCP_POD_IP";

/// A spec the operator will not serve, with every problem located by its field path.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    /// The problems, in declaration order.
    pub errors: Vec<FieldError>,
    /// The reason of the `Accepted=False` condition.
    pub reason: RefusalReason,
}

/// Why a spec is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalReason {
    /// The runtime would refuse the declaration.
    InvalidDeclaration,
    /// An older `MCPServer` already claims the same host and path.
    HostConflict,
    /// The object has a field or value this operator does not know (written under a newer
    /// CRD): it is not served with that field dropped.
    Unparseable,
    /// `spec.include` names an `MCPToolSet` that does not exist.
    ToolSetNotFound,
    /// `spec.include` selects an `MCPToolSet` of another namespace that no grant there allows.
    ToolSetNotGranted,
    /// An included item has the name (or URI) of another, or a shared schema two definitions.
    ToolSetConflict,
}

impl RefusalReason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidDeclaration => "InvalidDeclaration",
            Self::HostConflict => "HostConflict",
            Self::Unparseable => "Unparseable",
            Self::ToolSetNotFound => "ToolSetNotFound",
            Self::ToolSetNotGranted => "ToolSetNotGranted",
            Self::ToolSetConflict => "ToolSetConflict",
        }
    }
}

/// Most problems quoted in a condition message; the rest are counted.
const MAX_QUOTED_ERRORS: usize = 8;

impl Refused {
    /// An object this operator cannot read, at the field it stopped on.
    pub fn unparseable(error: FieldError) -> Self {
        Self {
            errors: vec![error],
            reason: RefusalReason::Unparseable,
        }
    }

    /// An include that cannot be served: the reason is the first problem's (conflicts and
    /// missing grants are what a person acts on; the message lists them all).
    pub fn include(errors: Vec<IncludeError>) -> Self {
        let reason = match errors.first().map(|e| e.problem) {
            Some(IncludeProblem::NotFound) => RefusalReason::ToolSetNotFound,
            Some(IncludeProblem::NotGranted) => RefusalReason::ToolSetNotGranted,
            Some(IncludeProblem::Conflict) => RefusalReason::ToolSetConflict,
            Some(IncludeProblem::Invalid) | None => RefusalReason::InvalidDeclaration,
        };
        Self {
            errors: errors.into_iter().map(|e| e.error).collect(),
            reason,
        }
    }

    /// A declaration the runtime would refuse.
    pub fn invalid(errors: Vec<FieldError>) -> Self {
        Self {
            errors,
            reason: RefusalReason::InvalidDeclaration,
        }
    }

    /// One line for the `Accepted` condition: the failing fields and what is wrong with them.
    pub fn message(&self) -> String {
        let mut parts: Vec<String> = self
            .errors
            .iter()
            .take(MAX_QUOTED_ERRORS)
            .map(ToString::to_string)
            .collect();
        if self.errors.len() > MAX_QUOTED_ERRORS {
            parts.push(format!(
                "and {} more",
                self.errors.len() - MAX_QUOTED_ERRORS
            ));
        }
        parts.join("; ")
    }
}

/// A variable of `spec.env` that the operator sets itself.
fn reserved_env(server: &MCPServer) -> impl Iterator<Item = FieldError> + '_ {
    let env = server.spec.deployment.env.iter().enumerate();
    env.filter(|(_, var)| var.name == POD_IP_VAR)
        .map(|(i, _)| FieldError {
            path: format!("spec.env[{i}].name"),
            message: format!("`{POD_IP_VAR}` is reserved: the operator sets it to the pod's IP"),
        })
}

/// Compiles the declaration of `server` as the runtime will, without reading files, and renders
/// the manifest its pods read, with every limit divided among `replicas` (each pod enforces its
/// share). `allow_link_local_upstreams` is the platform's choice (`BuildConfig`): declared
/// upstreams at link-local addresses are refused unless it is set.
pub fn validate(
    server: &MCPServer,
    allow_link_local_upstreams: bool,
    replicas: i32,
    fragments: &Fragments,
) -> Result<Accepted, Refused> {
    let name = server.name_any();
    let namespace = server.namespace().unwrap_or_default();
    // The sets merged in; a server without `include` is served as it is, uncopied.
    let resolved = match server.spec.declaration.include.is_empty() {
        true => None,
        false => Some(
            resolve_includes(
                &namespace,
                &server.spec.declaration,
                &fragments.sets,
                &fragments.grants,
            )
            .map_err(Refused::include)?,
        ),
    };
    let (declaration, included) = match &resolved {
        Some(resolved) => (&resolved.declaration, resolved.sets.as_slice()),
        None => (&server.spec.declaration, &[][..]),
    };
    // Scaled to zero, no pod enforces anything; the first to start takes the whole.
    let replicas = replicas.max(1);
    let shares = declaration.limits.as_ref().map(|limits| LimitsStatus {
        replicas,
        per_replica: limits.divided(u32::try_from(replicas).unwrap_or(1)),
    });
    // What the pods read, compiled as they will compile it: the declaration with each limit
    // replaced by one replica's share (a share of valid limits is valid).
    let manifest = Manifest {
        name: name.clone(),
        declaration: Declaration {
            limits: shares.as_ref().map(|s| s.per_replica.clone()),
            ..declaration.clone()
        },
        base_dir: Default::default(),
        hash: None,
    };
    let options = CompileOptions {
        read_files: false,
        allow_link_local_upstreams,
        ..Default::default()
    };
    let (mut errors, approver_groups) = match compile(&manifest, &options) {
        Ok(compiled) => (
            Vec::new(),
            compiled
                .approver_groups()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        Err(invalid) => (invalid.errors, Vec::new()),
    };
    errors.extend(cluster_problems(
        declaration,
        &server.spec.deployment.secrets,
    ));
    errors.extend(reserved_env(server));
    if !errors.is_empty() {
        for error in &mut errors {
            if let Some(item) = named_item(declaration, &error.path) {
                error.path = format!("{} ({item})", error.path);
            }
        }
        return Err(Refused::invalid(errors));
    }
    let render = |annotations: &BTreeMap<&'static str, String>| {
        render_manifest(&name, &manifest.declaration, annotations).map_err(|err| {
            Refused::invalid(vec![FieldError {
                path: "spec".into(),
                message: format!("cannot be written as YAML: {err}"),
            }])
        })
    };
    let hash = declaration_hash(&render(&BTreeMap::new())?);
    let manifest_yaml = render(&[(HASH_ANNOTATION, hash.clone())].into())?;
    let data = manifest_data(&manifest_yaml).map_err(|compressed| {
        Refused::invalid(vec![FieldError {
            path: "spec".into(),
            message: format!(
                "renders to {} bytes, {compressed} compressed, more than the \
                 {MAX_MANIFEST_BYTES} a ConfigMap can hold: serve large contents from an \
                 upstream (`http`) instead of inline `text` or `blob`",
                manifest_yaml.len()
            ),
        }])
    })?;
    let tool_sets = included
        .iter()
        .map(|set| IncludedToolSet {
            namespace: set.namespace.clone(),
            name: set.name.clone(),
            items: u32::try_from(set.items).unwrap_or(u32::MAX),
        })
        .collect();
    Ok(Accepted {
        manifest_yaml,
        data,
        tool_sets,
        counts: counts(declaration),
        hash,
        limits: shares,
        service_account_audiences: declaration.service_account_audiences(),
        approver_groups,
    })
}

/// The `MCPToolSet`s and `MCPToolSetGrant`s a server's `spec.include` may take: those of the
/// namespaces it names, parsed.
#[derive(Clone, Debug, Default)]
pub struct Fragments {
    /// The sets.
    pub sets: Vec<ToolSet>,
    /// The grants.
    pub grants: Vec<ToolSetGrant>,
}

/// The tool, resource or prompt a field path points into, by name: `spec.tools[2].content` ->
/// ``tool `get_forecast` ``, so a person finds the culprit without counting list entries.
fn named_item(declaration: &Declaration, path: &str) -> Option<String> {
    let rest = path.strip_prefix("spec.")?;
    let (list, rest) = rest.split_once('[')?;
    let index: usize = rest.split_once(']')?.0.parse().ok()?;
    match list {
        "tools" => declaration
            .tools
            .get(index)
            .map(|t| format!("tool `{}`", t.name)),
        "resources" => declaration
            .resources
            .get(index)
            .map(|r| format!("resource `{}`", r.uri)),
        "resourceTemplates" => declaration
            .resource_templates
            .get(index)
            .map(|t| format!("resource template `{}`", t.uri_template)),
        "prompts" => declaration
            .prompts
            .get(index)
            .map(|p| format!("prompt `{}`", p.name)),
        _ => None,
    }
}

fn counts(declaration: &Declaration) -> Counts {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Counts {
        tools: count(declaration.tools.len()),
        resources: count(declaration.resources.len()),
        resource_templates: count(declaration.resource_templates.len()),
        prompts: count(declaration.prompts.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::test_support::server;
    use mcp_declaration::parse_manifest;

    #[test]
    fn each_replica_reads_its_share_of_the_limits() {
        let tracker = server(
            r##"
            metadata: {name: tracker, namespace: tools}
            spec:
              replicas: 3
              limits:
                server: {rate: 100/s, burst: 200}
                perPrincipal: {rate: 10/s, quota: 5000/day}
                tools:
                  create_issue: {rate: 3/s, perPrincipal: true}
              tools:
                - {name: create_issue, content: [{type: text, text: created}]}
            "##,
        );
        let accepted = validate(&tracker, false, 3, &Fragments::default()).unwrap();
        let served = parse_manifest(&accepted.manifest_yaml, Default::default())
            .unwrap()
            .declaration
            .limits
            .unwrap();
        let shares = accepted.limits.unwrap();
        assert_eq!((shares.replicas, &shares.per_replica), (3, &served));
        let server_share = served.server.unwrap();
        assert_eq!(
            (server_share.rate.as_deref(), server_share.burst),
            (Some("2000/min"), Some(66))
        );
        let each = served.per_principal.unwrap();
        assert_eq!(
            (each.rate.as_deref(), each.quota.as_deref()),
            (Some("200/min"), Some("1666/day"))
        );
        assert_eq!(
            served.tools["create_issue"].limit.rate.as_deref(),
            Some("1/s")
        );
        // The declared limits are what the spec says; only the pods' manifest is divided.
        let alone = validate(&tracker, false, 1, &Fragments::default()).unwrap();
        assert_ne!(
            alone.hash, accepted.hash,
            "a new share is a new declaration for the pods"
        );
        assert!(alone.manifest_yaml.contains("rate: 100/s"));
        assert_eq!(
            validate(&tracker, false, 0, &Fragments::default())
                .unwrap()
                .hash,
            alone.hash,
            "scaled to zero"
        );
        assert_eq!(
            validate(
                &server(
                    r#"
            metadata: {name: plain, namespace: tools}
            spec:
              tools: [{name: a, content: [{type: text, text: a}]}]
            "#
                ),
                false,
                3,
                &Fragments::default(),
            )
            .unwrap()
            .limits,
            None
        );
    }

    #[test]
    fn accepts_a_declaration_and_renders_what_the_runtime_reads() {
        let server = server(
            r##"
            metadata: {name: weather, namespace: tools}
            spec:
              title: Weather
              replicas: 3
              ingress: {host: mcp.example.com}
              tools:
                - name: greet
                  inputSchema: {type: object, properties: {name: {type: string}}, required: [name]}
                  content: [{type: text, text: "Hello, {{ args.name }}!"}]
              resources:
                - {uri: "docs://readme", name: readme, text: "# Weather"}
              prompts:
                - name: plan
                  messages: [{role: user, content: {type: text, text: Plan.}}]
            "##,
        );
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        assert_eq!(
            accepted.counts,
            Counts {
                tools: 1,
                resources: 1,
                resource_templates: 0,
                prompts: 1
            }
        );
        insta::assert_snapshot!(accepted.manifest_yaml);
        let parsed = parse_manifest(&accepted.manifest_yaml, Default::default()).unwrap();
        assert_eq!(parsed.name, "weather");
        assert_eq!(parsed.declaration, server.spec.declaration);
        // The pod reports the stamped hash, and would compute the same one without the stamp.
        assert_eq!(parsed.hash.as_deref(), Some(accepted.hash.as_str()));
        assert_eq!(
            mcp_declaration::hash_of(&parsed.name, &parsed.declaration).unwrap(),
            accepted.hash
        );
    }

    #[test]
    fn shared_schemas_are_rendered_once_for_the_pod() {
        let server = server(
            r#"
            metadata: {name: pods, namespace: tools}
            spec:
              schemas:
                Pod: {type: object, properties: {name: {type: string, description: "The name of the pod."}}}
              tools:
                - name: create
                  inputSchema: {type: object, properties: {pod: {$ref: '#/schemas/Pod'}}}
                  content: [{type: text, text: ok}]
                - name: replace
                  inputSchema: {type: object, properties: {pod: {$ref: '#/schemas/Pod'}}}
                  content: [{type: text, text: ok}]
            "#,
        );
        let accepted = validate(&server, false, 1, &Fragments::default()).unwrap();
        // The ConfigMap carries the declaration as written (the pod resolves it again), so a
        // schema shared by many tools counts once against its 1 MiB.
        assert_eq!(
            accepted
                .manifest_yaml
                .matches("The name of the pod.")
                .count(),
            1
        );
        let parsed = parse_manifest(&accepted.manifest_yaml, Default::default()).unwrap();
        assert_eq!(parsed.declaration, server.spec.declaration);
        let mut cyclic = server.clone();
        cyclic.spec.declaration.schemas.insert(
            "Pod".into(),
            serde_json::json!({"allOf": [{"$ref": "#/schemas/Pod"}]}),
        );
        let refused = validate(&cyclic, false, 1, &Fragments::default()).unwrap_err();
        assert!(
            refused
                .message()
                .starts_with("spec.schemas[Pod].allOf[0].$ref: the cycle Pod -> Pod"),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn refuses_with_the_path_of_every_failing_field() {
        let server = server(
            r#"
            metadata: {name: weather, namespace: tools}
            spec:
              tools:
                - name: greet
                  content: [{type: text, text: "Hello, {{ args.name"}]
                - name: "bad name"
                  content: [{type: text, text: hi}]
            "#,
        );
        let refused = validate(&server, false, 1, &Fragments::default()).unwrap_err();
        let paths: Vec<&str> = refused.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.tools[0].content[0].text (tool `greet`)",
                "spec.tools[1].name (tool `bad name`)"
            ]
        );
        assert!(
            refused
                .message()
                .starts_with("spec.tools[0].content[0].text (tool `greet`): "),
            "{}",
            refused.message()
        );
    }

    #[test]
    fn refuses_file_resources_which_no_pod_could_read() {
        let server = server(
            r#"
            metadata: {name: docs, namespace: tools}
            spec:
              resources:
                - {uri: "docs://readme", name: readme, file: README.md}
            "#,
        );
        let refused = validate(&server, false, 1, &Fragments::default()).unwrap_err();
        assert_eq!(
            refused.errors[0].path,
            "spec.resources[0].file (resource `docs://readme`)"
        );
    }

    #[test]
    fn refuses_a_secret_reference_the_pods_would_not_mount() {
        let manifest = r#"
            metadata: {name: api, namespace: tools}
            spec:
              SECRETS
              tools:
                - name: forecast
                  http:
                    url: "https://api.example.com/forecast"
                    headers:
                      - {name: Authorization, secretKeyRef: {name: weather-api, key: token}}
            "#;
        let refused = validate(
            &server(&manifest.replace("SECRETS", "")),
            false,
            1,
            &Fragments::default(),
        )
        .unwrap_err();
        assert_eq!(
            refused.errors[0].path,
            "spec.tools[0].http (tool `forecast`)"
        );
        assert!(
            refused.errors[0].message.contains("Secret `weather-api`"),
            "{}",
            refused.message()
        );
        assert!(
            validate(
                &server(&manifest.replace("SECRETS", "secrets: [weather-api]")),
                false,
                1,
                &Fragments::default(),
            )
            .is_ok()
        );
    }

    #[test]
    fn refuses_the_variable_that_holds_the_pod_ip() {
        let server = server(
            r#"
            metadata: {name: api, namespace: tools}
            spec:
              tools: [{name: hi, content: [{type: text, text: hi}]}]
              env: [{name: LANG, value: C}, {name: KUBE_MCP_POD_IP, value: "10.9.9.9"}]
            "#,
        );
        let refused = validate(&server, false, 1, &Fragments::default()).unwrap_err();
        assert_eq!(refused.errors.len(), 1, "{}", refused.message());
        assert_eq!(refused.errors[0].path, "spec.env[1].name");
        assert!(refused.errors[0].message.contains("reserved"));
    }

    #[test]
    fn quotes_a_bounded_number_of_errors() {
        let errors = (0..12)
            .map(|i| FieldError {
                path: format!("spec.tools[{i}].name"),
                message: "bad".into(),
            })
            .collect();
        let message = Refused::invalid(errors).message();
        assert!(message.ends_with("; and 4 more"), "{message}");
    }

    #[test]
    fn a_declaration_too_big_for_a_config_map_is_compressed_then_refused() {
        let compressible = "x".repeat(MAX_MANIFEST_BYTES);
        let small = server(&format!(
            "
            metadata: {{name: big, namespace: tools}}
            spec:
              resources: [{{uri: 'docs://big', name: big, text: '{compressible}'}}]
            "
        ));
        let accepted = validate(&small, false, 1, &Fragments::default()).unwrap();
        assert!(matches!(accepted.data, ManifestData::Compressed(_)));
        // Hex of a xorshift sequence: about half its size compressed.
        let mut big = String::new();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        while big.len() <= 3 * MAX_MANIFEST_BYTES {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            big.push_str(&format!("{state:016x}"));
        }
        let server = server(&format!(
            "
            metadata: {{name: big, namespace: tools}}
            spec:
              resources: [{{uri: 'docs://big', name: big, text: '{big}'}}]
            "
        ));
        let refused = validate(&server, false, 1, &Fragments::default()).unwrap_err();
        assert_eq!(refused.errors[0].path, "spec");
        assert!(
            refused.errors[0]
                .message
                .contains("compressed, more than the 1000000 a ConfigMap can hold"),
            "{}",
            refused.message()
        );
    }
}
