//! Per-item access rules under `spec.auth`, compiled once at load: `requiredScopes` and the
//! `allow` condition (a template over `token.claims` and `args` that renders `true` to allow)
//! of every tool, prompt, resource and resource template, plus the checks of `spec.auth`
//! itself. An `allow` that does not compile, or reads anything but `token` and `args`, refuses
//! the declaration with its field path. Pure, no I/O.

use super::field_error::FieldError;
use super::secrets::secret_path;
use super::types::{Auth, Declaration};
use minijinja::Environment;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// Largest accepted `leewaySeconds`.
pub const MAX_LEEWAY_SECONDS: u64 = 300;

/// What a caller needs for one item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Access {
    /// Scopes needed to see and use the item.
    pub required_scopes: Vec<String>,
    allow: Option<Allow>,
}

#[derive(Clone, Debug, PartialEq)]
struct Allow {
    /// Template name in the rules' environment (the field path).
    name: String,
    /// Reads `args`: decided when the item is used, not when lists are built.
    reads_args: bool,
}

impl Access {
    /// Whether the item's `allow` can only be decided with the call's arguments.
    pub fn decided_at_call(&self) -> bool {
        self.allow.as_ref().is_some_and(|a| a.reads_args)
    }

    /// Whether this item has any rule at all.
    pub fn is_open(&self) -> bool {
        self.required_scopes.is_empty() && self.allow.is_none()
    }
}

/// The compiled access rules of a declaration: how to evaluate them. Each item's own rules
/// ([`Access`]) are on the compiled item itself, so a list, a call and an audit record read one
/// compiled item.
#[derive(Debug, Default)]
pub struct AccessRules {
    env: Environment<'static>,
    /// Every scope the declaration names (server-wide and per item), sorted.
    pub scopes: Vec<String>,
    /// Some item has `requiredScopes` or `allow` (without, no request needs an item check).
    item_rules: bool,
}

/// The caller an access decision is about.
#[derive(Clone, Copy, Debug)]
pub struct Caller<'a> {
    /// Granted scopes.
    pub scopes: &'a [String],
    /// Token claims (`token.claims`).
    pub claims: &'a Map<String, Value>,
}

/// The outcome of an access check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed.
    Allowed,
    /// Scopes are missing: the refusal names every scope the item needs.
    MissingScopes,
    /// The `allow` condition refused (or could not be evaluated).
    Denied,
}

/// Each item's rules, in declaration order, for the compiler to put on the compiled items.
#[derive(Debug, Default)]
pub struct ItemAccess {
    /// Of `spec.tools`.
    pub tools: Vec<Access>,
    /// Of `spec.prompts`.
    pub prompts: Vec<Access>,
    /// Of `spec.resources`.
    pub resources: Vec<Access>,
    /// Of `spec.resourceTemplates`.
    pub resource_templates: Vec<Access>,
}

impl AccessRules {
    /// Compiles the rules of `decl` with `fuel` per `allow` render.
    pub fn compile(decl: &Declaration, fuel: u64) -> Result<(Self, ItemAccess), Vec<FieldError>> {
        let mut compiler = Compiler::new(fuel, decl.auth.is_some());
        if let Some(auth) = &decl.auth {
            compiler.auth(auth);
        }
        let mut tools = Vec::new();
        for (i, tool) in decl.tools.iter().enumerate() {
            let access = compiler.item(
                &format!("spec.tools[{i}]"),
                &tool.required_scopes,
                tool.allow.as_deref(),
                true,
            );
            tools.push(access);
        }
        let mut prompts = Vec::new();
        for (i, prompt) in decl.prompts.iter().enumerate() {
            let access = compiler.item(
                &format!("spec.prompts[{i}]"),
                &prompt.required_scopes,
                prompt.allow.as_deref(),
                true,
            );
            prompts.push(access);
        }
        let mut resources = Vec::new();
        for (i, resource) in decl.resources.iter().enumerate() {
            let access = compiler.item(
                &format!("spec.resources[{i}]"),
                &resource.required_scopes,
                resource.allow.as_deref(),
                false,
            );
            resources.push(access);
        }
        let mut resource_templates = Vec::new();
        for (i, template) in decl.resource_templates.iter().enumerate() {
            let access = compiler.item(
                &format!("spec.resourceTemplates[{i}]"),
                &template.required_scopes,
                template.allow.as_deref(),
                true,
            );
            resource_templates.push(access);
        }
        // A view's scopes are checked like an item's (and listed in the metadata); the view
        // itself carries them (`compile/views.rs`).
        for (i, view) in decl.views.iter().enumerate() {
            compiler.item(
                &format!("spec.views[{i}]"),
                &view.required_scopes,
                None,
                false,
            );
        }
        if !compiler.errors.is_empty() {
            return Err(compiler.errors);
        }
        let item_rules = [&tools, &prompts, &resources, &resource_templates]
            .iter()
            .any(|items| items.iter().any(|access| !access.is_open()));
        let rules = Self {
            item_rules,
            env: compiler.env,
            scopes: compiler.scopes.into_iter().collect(),
        };
        let items = ItemAccess {
            tools,
            prompts,
            resources,
            resource_templates,
        };
        Ok((rules, items))
    }

    /// Whether some item has rules of its own (`requiredScopes` or `allow`).
    pub fn has_item_rules(&self) -> bool {
        self.item_rules
    }

    /// Whether `caller` sees the item in lists: it holds the item's scopes and an `allow` that
    /// reads only the token lets it through (one that reads `args` is decided at the call).
    pub fn listed(&self, access: &Access, caller: Caller<'_>) -> bool {
        if !has_all(caller.scopes, &access.required_scopes) {
            return false;
        }
        match &access.allow {
            Some(allow) if !allow.reads_args => self.evaluate(allow, caller, &Value::Null),
            _ => true,
        }
    }

    /// Whether `caller` may use the item with `args`.
    pub fn check(&self, access: &Access, caller: Caller<'_>, args: &Value) -> Verdict {
        if !has_all(caller.scopes, &access.required_scopes) {
            return Verdict::MissingScopes;
        }
        match &access.allow {
            Some(allow) if !self.evaluate(allow, caller, args) => Verdict::Denied,
            _ => Verdict::Allowed,
        }
    }

    fn evaluate(&self, allow: &Allow, caller: Caller<'_>, args: &Value) -> bool {
        let Ok(template) = self.env.get_template(&allow.name) else {
            return false;
        };
        let context = minijinja::context! {
            token => minijinja::context! { claims => minijinja::Value::from(minijinja::value::Serde(caller.claims)) },
            args => minijinja::Value::from(minijinja::value::Serde(args)),
        };
        match template.render(context) {
            // minijinja prints a boolean as Jinja does (`True`); a condition written as text may
            // say `true`.
            Ok(text) => text.trim().eq_ignore_ascii_case("true"),
            Err(err) => {
                // A condition that fails (a missing claim, out of fuel) refuses: fail closed.
                tracing::debug!(field = %allow.name, error = %err.kind(), "allow condition failed");
                false
            }
        }
    }
}

fn has_all(granted: &[String], needed: &[String]) -> bool {
    needed.iter().all(|n| granted.iter().any(|g| g == n))
}

struct Compiler {
    env: Environment<'static>,
    auth_on: bool,
    scopes: BTreeSet<String>,
    errors: Vec<FieldError>,
}

impl Compiler {
    fn new(fuel: u64, auth_on: bool) -> Self {
        let mut env = Environment::new();
        env.set_fuel(Some(fuel));
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_recursion_limit(32);
        Self {
            env,
            auth_on,
            scopes: BTreeSet::new(),
            errors: Vec::new(),
        }
    }

    fn error(&mut self, path: String, message: impl Into<String>) {
        self.errors.push(FieldError {
            path,
            message: message.into(),
        });
    }

    fn auth(&mut self, auth: &Auth) {
        if let Err(message) = super::auth_uri::trusted_url(&auth.issuer) {
            self.error("spec.auth.issuer".into(), message);
        }
        if let Some(uri) = &auth.jwks_uri
            && let Err(message) = super::auth_uri::trusted_url(uri)
        {
            self.error("spec.auth.jwksUri".into(), message);
        }
        for (i, audience) in auth.audiences.iter().enumerate() {
            if audience.is_empty()
                || audience.len() > 2048
                || audience.chars().any(char::is_control)
            {
                self.error(
                    format!("spec.auth.audiences[{i}]"),
                    "must be a non-empty URI or identifier",
                );
            }
        }
        self.scopes("spec.auth.requiredScopes", &auth.required_scopes);
        if auth.leeway_seconds.is_some_and(|l| l > MAX_LEEWAY_SECONDS) {
            self.error(
                "spec.auth.leewaySeconds".into(),
                format!("must be at most {MAX_LEEWAY_SECONDS}"),
            );
        }
        if let Some(introspection) = &auth.introspection {
            if let Some(endpoint) = &introspection.endpoint
                && let Err(message) = super::auth_uri::trusted_url(endpoint)
            {
                self.error("spec.auth.introspection.endpoint".into(), message);
            }
            if introspection.client_id.is_empty() {
                self.error(
                    "spec.auth.introspection.clientId".into(),
                    "must not be empty",
                );
            }
            if let Err(message) = secret_path(Path::new("/"), &introspection.client_secret) {
                self.error("spec.auth.introspection.clientSecret".into(), message);
            }
        }
    }

    /// RFC 6749 section 3.3 scope tokens: printable ASCII without space, `"` or `\`.
    fn scopes(&mut self, path: &str, scopes: &[String]) {
        for (i, scope) in scopes.iter().enumerate() {
            let ok = !scope.is_empty()
                && scope.len() <= 256
                && scope
                    .bytes()
                    .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
            if ok {
                self.scopes.insert(scope.clone());
            } else {
                self.error(format!("{path}[{i}]"), format!("`{scope}` is not a scope token (printable ASCII without space, quote or backslash)"));
            }
        }
    }

    fn item(
        &mut self,
        path: &str,
        scopes: &[String],
        allow: Option<&str>,
        has_args: bool,
    ) -> Access {
        if !self.auth_on && (!scopes.is_empty() || allow.is_some()) {
            let field = if scopes.is_empty() {
                "allow"
            } else {
                "requiredScopes"
            };
            self.error(
                format!("{path}.{field}"),
                "needs spec.auth (there is no caller to check without it)",
            );
            return Access::default();
        }
        self.scopes(&format!("{path}.requiredScopes"), scopes);
        let allow = allow.and_then(|source| self.allow(&format!("{path}.allow"), source, has_args));
        Access {
            required_scopes: scopes.to_vec(),
            allow,
        }
    }

    fn allow(&mut self, path: &str, source: &str, has_args: bool) -> Option<Allow> {
        if let Err(err) = self
            .env
            .add_template_owned(path.to_owned(), source.to_owned())
        {
            self.error(
                path.to_owned(),
                format!("does not compile: {}", describe(&err)),
            );
            return None;
        }
        let template = self.env.get_template(path).ok()?;
        let variables = template.undeclared_variables(false);
        if let Some(other) = variables.iter().find(|v| *v != "token" && *v != "args") {
            self.error(
                path.to_owned(),
                format!("reads `{other}`; a condition may read only `token.claims` and `args`"),
            );
            return None;
        }
        let reads_args = variables.contains("args");
        if reads_args && !has_args {
            self.error(
                path.to_owned(),
                "reads `args`, but a fixed resource has no arguments",
            );
            return None;
        }
        if !variables.contains("token") && !reads_args {
            self.error(
                path.to_owned(),
                "reads neither `token` nor `args`, so it decides nothing",
            );
            return None;
        }
        Some(Allow {
            name: path.to_owned(),
            reads_args,
        })
    }
}

fn describe(err: &minijinja::Error) -> String {
    match err.detail() {
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declaration(yaml: &str) -> Declaration {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    const AUTHED: &str = r#"
auth: {issuer: "https://idp.example.com", requiredScopes: [mcp]}
tools:
  - {name: open, content: []}
  - {name: writer, requiredScopes: ["issues:write"], content: []}
  - {name: repo, allow: "{{ args.repo in token.claims.repos }}", content: []}
  - {name: admin, allow: "{{ 'admin' in token.claims.groups }}", content: []}
resources:
  - {uri: "docs://a", name: a, text: x, requiredScopes: [docs]}
"#;

    fn claims(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else {
            panic!("object")
        };
        map
    }

    #[test]
    fn scopes_and_token_conditions_filter_lists() {
        let (rules, items) = AccessRules::compile(&declaration(AUTHED), 10_000).unwrap();
        assert_eq!(rules.scopes, ["docs", "issues:write", "mcp"]);
        let scopes = vec!["mcp".to_owned()];
        let claims = claims(json!({"repos": ["kube-mcp/kube-mcp"], "groups": ["dev"]}));
        let caller = Caller {
            scopes: &scopes,
            claims: &claims,
        };
        assert!(rules.listed(&items.tools[0], caller));
        assert!(!rules.listed(&items.tools[1], caller));
        // Reads args: listed, decided at the call.
        assert!(rules.listed(&items.tools[2], caller));
        assert!(&items.tools[2].decided_at_call());
        assert!(!rules.listed(&items.tools[3], caller));
        assert!(!rules.listed(&items.resources[0], caller));
        let admins = claims_admin();
        assert!(rules.listed(
            &items.tools[3],
            Caller {
                scopes: &scopes,
                claims: &admins
            }
        ));
    }

    fn claims_admin() -> Map<String, Value> {
        claims(json!({"groups": ["admin"]}))
    }

    #[test]
    fn calls_check_scopes_then_conditions_over_args() {
        let (rules, items) = AccessRules::compile(&declaration(AUTHED), 10_000).unwrap();
        let scopes = vec!["mcp".to_owned()];
        let claims = claims(json!({"repos": ["kube-mcp/kube-mcp"]}));
        let caller = Caller {
            scopes: &scopes,
            claims: &claims,
        };
        let repo = &items.tools[2];
        assert_eq!(
            rules.check(repo, caller, &json!({"repo": "kube-mcp/kube-mcp"})),
            Verdict::Allowed
        );
        assert_eq!(
            rules.check(repo, caller, &json!({"repo": "other/repo"})),
            Verdict::Denied
        );
        assert_eq!(rules.check(repo, caller, &json!({})), Verdict::Denied);
        assert_eq!(
            rules.check(&items.tools[1], caller, &json!({})),
            Verdict::MissingScopes
        );
        // A claim the token lacks fails closed.
        let none = Map::new();
        let bare = Caller {
            scopes: &scopes,
            claims: &none,
        };
        assert_eq!(
            rules.check(repo, bare, &json!({"repo": "kube-mcp/kube-mcp"})),
            Verdict::Denied
        );
        assert_eq!(
            rules.check(&items.tools[3], bare, &json!({})),
            Verdict::Denied
        );
    }

    #[test]
    fn bad_rules_are_refused_with_their_field_path() {
        let errors = AccessRules::compile(
            &declaration(
                r#"
auth: {issuer: "http://idp.example.com", leewaySeconds: 900, requiredScopes: ["a b"]}
tools:
  - {name: t, allow: "{{ args.x ", content: []}
  - {name: u, allow: "{{ env.HOME }}", content: []}
  - {name: v, allow: "true", content: []}
resources:
  - {uri: "docs://a", name: a, text: x, allow: "{{ args.x }}"}
"#,
            ),
            10_000,
        )
        .unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.auth.issuer",
                "spec.auth.requiredScopes[0]",
                "spec.auth.leewaySeconds",
                "spec.tools[0].allow",
                "spec.tools[1].allow",
                "spec.tools[2].allow",
                "spec.resources[0].allow",
            ],
            "{errors:?}"
        );
        assert!(
            errors[3].message.starts_with("does not compile"),
            "{}",
            errors[3].message
        );
    }

    #[test]
    fn item_rules_need_spec_auth() {
        let errors = AccessRules::compile(
            &declaration("tools: [{name: t, requiredScopes: [a], content: []}]"),
            10_000,
        )
        .unwrap_err();
        assert_eq!(errors[0].path, "spec.tools[0].requiredScopes");
        assert!(
            AccessRules::compile(&declaration("tools: [{name: t, content: []}]"), 10_000).is_ok()
        );
    }
}
