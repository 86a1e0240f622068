//! The one authorization decision (`spec.auth`): [`authorize`] decides every request that names
//! an item (call, read, subscribe, unsubscribe, listen, get, complete) from the item's compiled
//! rules, and [`listed`] decides what lists show. A request through a `spec.views` view needs
//! the view's `requiredScopes` too, whatever it names (the items a view does not publish were
//! resolved as undeclared before: `request.rs`). Transports only turn a [`Decision`] into HTTP
//! (a 403 challenge for missing scopes); the dispatch turns the rest into results. Pure.

use super::Principal;
use super::request::{Request, Target};
use mcp_declaration::{Access, Caller, Compiled, Verdict};
use mcp_protocol::{McpError, methods};
use serde_json::Value;

/// What a caller may do with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Allowed,
    /// The caller may not see the item: answered as if it did not exist (for methods that only
    /// reveal, such as `completion/complete`).
    NotListed,
    /// The caller lacks scopes: every scope the named items need (the transport answers 403 with
    /// a challenge naming them, so the client can ask for them).
    NeedsScopes(Vec<String>),
    /// An `allow` condition refused, with why: a result the model can read, never a scope
    /// challenge (no scope would help).
    Refused(String),
}

/// A request with its authorization decision: the only way to have one served.
pub struct Authorized {
    pub(crate) request: Request,
    pub(crate) decision: Decision,
}

impl Authorized {
    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The request.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// Checks the request's `Mcp-Param-*` headers ([`Request::check_param_headers`]), except
    /// for a tool the caller may not see: it is answered as unknown, and a complaint about its
    /// headers would tell that it exists.
    pub fn check_param_headers(
        &self,
        sent: &[(&str, &[u8])],
        expect: crate::param_headers::Expect,
    ) -> Result<(), McpError> {
        if self.decision == Decision::NotListed {
            return Ok(());
        }
        self.request.check_param_headers(sent, expect)
    }
}

/// Decides `request` for `caller` (`None`: the server does not authenticate).
pub(crate) fn authorize(caller: Option<&Principal>, request: Request) -> Authorized {
    let decision = decide(caller, &request);
    Authorized { request, decision }
}

fn decide(caller: Option<&Principal>, request: &Request) -> Decision {
    let decl: &Compiled = request.declaration();
    let view_scopes: &[String] = request
        .view
        .view(decl)
        .map_or(&[], |view| &view.required_scopes);
    if let Some(principal) = caller
        && !view_scopes.iter().all(|s| principal.scopes.contains(s))
    {
        // Every request through the view needs its scopes; the challenge names the item's too,
        // so that one token serves the request.
        let mut scopes = view_scopes.to_vec();
        for scope in request
            .accesses()
            .iter()
            .flat_map(|(a, _)| &a.required_scopes)
        {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        return Decision::NeedsScopes(scopes);
    }
    let Some(principal) = caller.filter(|_| decl.access.has_item_rules()) else {
        return Decision::Allowed;
    };
    let who = Caller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    let accesses = request.accesses();
    if request.method == methods::COMPLETION_COMPLETE {
        let visible = accesses
            .iter()
            .all(|(access, _)| decl.access.listed(access, who));
        return if visible {
            Decision::Allowed
        } else {
            Decision::NotListed
        };
    }
    let mut missing_scopes = false;
    let mut refused: Option<&Access> = None;
    for (access, args) in &accesses {
        match decl.access.check(access, who, args) {
            Verdict::Allowed => {}
            Verdict::MissingScopes => missing_scopes = true,
            Verdict::Denied => refused = refused.or(Some(access)),
        }
    }
    if missing_scopes {
        // One challenge names every scope the named items need together.
        let mut scopes: Vec<String> = view_scopes.to_vec();
        for scope in accesses.iter().flat_map(|(a, _)| &a.required_scopes) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        return Decision::NeedsScopes(scopes);
    }
    match refused {
        Some(access) => Decision::Refused(refusal_text(access).into()),
        None => Decision::Allowed,
    }
}

fn refusal_text(access: &Access) -> &'static str {
    if access.decided_at_call() {
        "the caller is not allowed to do this with these arguments"
    } else {
        "the caller is not allowed to use this"
    }
}

/// Whether lists show an item with `access` to `caller` (all items without authentication).
pub(crate) fn listed(decl: &Compiled, caller: Option<&Principal>, access: &Access) -> bool {
    let Some(principal) = caller.filter(|_| decl.access.has_item_rules()) else {
        return true;
    };
    let who = Caller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    decl.access.listed(access, who)
}

/// For an item whose arguments were completed by elicitation: `allow` decided on the arguments
/// the call sent, so it is decided again on the ones the user supplied (`Some`: refused, why).
pub(crate) fn recheck(
    decl: &Compiled,
    caller: Option<&Principal>,
    access: &Access,
    args: &Value,
) -> Option<String> {
    let principal = caller.filter(|_| decl.access.has_item_rules())?;
    let who = Caller {
        scopes: &principal.scopes,
        claims: &principal.claims,
    };
    match decl.access.check(access, who, args) {
        Verdict::Allowed => None,
        Verdict::MissingScopes => Some("the caller lacks the scopes this needs".into()),
        Verdict::Denied => Some(refusal_text(access).into()),
    }
}

/// The answer to a request whose item the caller may not see: what an undeclared item gets.
pub(crate) fn hidden(request: &Request) -> McpError {
    let decl: &Compiled = request.declaration();
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    McpError::InvalidParams(match &request.target {
        Target::Prompt(i) => format!(
            "unknown prompt: {}",
            text(&decl.prompts[*i].descriptor["name"])
        ),
        Target::Template(i) => format!(
            "unknown resource template: {}",
            text(&decl.resource_templates[*i].descriptor["uriTemplate"])
        ),
        Target::Tool(i) => format!("unknown tool: {}", text(&decl.tools[*i].descriptor["name"])),
        _ => "unknown item".to_owned(),
    })
}
