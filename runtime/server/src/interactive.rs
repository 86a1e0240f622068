//! Interactive items at request time, for every era: given a call's arguments, the answers the
//! client gave so far and its declared capabilities, decide what is still to be asked (input
//! requests keyed by name), whether the user declined, or what the reply templates see. The
//! 2026-07-28 path (`interactive/stateless.rs`) carries answers in a sealed `requestState`; the
//! legacy path (`interactive/session.rs`) asks over the session's stream and loops. Pure here.

pub(crate) mod replay;
pub(crate) mod session;
pub(crate) mod stateless;

pub(crate) use replay::Rounds;

use super::RequestContext;
use super::authorize;
use crate::metrics::Metrics;
use crate::principal::Principal;
use mcp_declaration::{
    Access, CONFIRM_KEY, Compiled, CompiledField, CompiledInteraction, CompiledSample, ROOTS_KEY,
    SAMPLE_KEY, Templates,
};
use mcp_protocol::{Era, McpError, meta};
use serde_json::{Map, Value, json};

/// What happens next with an interactive call.
#[derive(Debug, PartialEq)]
pub(crate) enum Plan {
    /// Everything is known: the variables the reply templates see.
    Ready(Vars),
    /// Input requests still to be answered, by key (`{method, params}` each).
    Ask(Map<String, Value>),
    /// The user declined or cancelled: say so, call nothing.
    Stop(String),
}

/// What the reply templates see besides the declared arguments.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Vars {
    /// The call's arguments with elicited values merged in.
    pub args: Value,
    /// The sampling answer: `{text, model, stopReason, role, content}`.
    pub sample: Option<Value>,
    /// The client's roots: `[{uri, name?}]`.
    pub roots: Option<Value>,
}

impl Vars {
    /// The template variables `args`, `sample` and `roots` as one object.
    pub(crate) fn to_json(&self) -> Value {
        json!({"args": self.args, "sample": self.sample, "roots": self.roots})
    }
}

/// The outcome of the interactive part of a call.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Go on and answer with these variables.
    Ready(Vars),
    /// Answer with this result instead (2026-07-28 `input_required`).
    Reply(Value),
    /// The user declined or cancelled; say so.
    Stop(String),
}

/// [`resolve`] for a declared tool or prompt (its rules: `access`): its `allow` decided only the arguments the
/// call sent, so the values the user supplied are decided again, and a refusal stops the item
/// like a decline.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn resolve_item(
    decl: &Compiled,
    metrics: &Metrics,
    rounds: &Rounds,
    ctx: &RequestContext,
    method: &str,
    params: &Value,
    access: &Access,
    interaction: &CompiledInteraction,
    args: &Value,
) -> Result<Outcome, McpError> {
    let outcome = resolve(
        metrics,
        rounds,
        ctx,
        method,
        params,
        interaction,
        &decl.templates,
        args,
    )
    .await?;
    if let Outcome::Ready(vars) = &outcome
        && let Some(text) = authorize::recheck(decl, ctx.caller.as_deref(), access, &vars.args)
    {
        return Ok(Outcome::Stop(text));
    }
    Ok(outcome)
}

/// Runs the interactive part of a call in its era: one round per request in 2026-07-28, every
/// round over the session in legacy eras.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn resolve(
    metrics: &Metrics,
    rounds: &Rounds,
    ctx: &RequestContext,
    method: &str,
    params: &Value,
    interaction: &CompiledInteraction,
    templates: &Templates,
    args: &Value,
) -> Result<Outcome, McpError> {
    match ctx.era {
        Era::Modern => {
            let principal = principal(ctx);
            let caps = params
                .get("_meta")
                .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
                .cloned()
                .unwrap_or_else(|| json!({}));
            let answers =
                stateless::answers(rounds, principal.as_deref(), method, params, interaction)?;
            let fresh = params.get("inputResponses").and_then(Value::as_object);
            for (key, response) in fresh.into_iter().flatten() {
                if knows(interaction, key) {
                    count_answer(metrics, key, Some(response));
                }
            }
            match plan(interaction, templates, args, &answers, &caps, &claims(ctx))? {
                Plan::Ready(vars) => Ok(Outcome::Ready(vars)),
                Plan::Stop(text) => Ok(Outcome::Stop(text)),
                Plan::Ask(ask) => {
                    count_asked(metrics, &ask);
                    stateless::input_required(
                        &rounds.sealer,
                        principal.as_deref(),
                        method,
                        params,
                        answers,
                        ask,
                    )
                    .map(Outcome::Reply)
                }
            }
        }
        Era::Legacy(_) => session::resolve(metrics, ctx, interaction, templates, args).await,
    }
}

/// The caller a `requestState` is bound to (with `spec.auth`): a digest of the token's issuer and
/// subject, so state issued to one caller never opens for another. Without authentication every
/// caller is anonymous and the state binds to no one.
/// The caller's token claims, as URL steps see them (`token.claims`; empty without `spec.auth`).
pub(crate) fn claims(ctx: &RequestContext) -> Value {
    ctx.caller
        .as_ref()
        .map_or_else(|| json!({}), |caller| Value::Object(caller.claims.clone()))
}

pub(crate) fn principal(ctx: &RequestContext) -> Option<String> {
    ctx.caller.as_deref().map(Principal::hex_digest)
}

/// Counts the questions of one round.
fn count_asked(metrics: &Metrics, ask: &Map<String, Value>) {
    for input in ask.values() {
        let kind = match input.get("method").and_then(Value::as_str) {
            Some("sampling/createMessage") => "sampling",
            Some("roots/list") => "roots",
            _ => "elicitation",
        };
        metrics.input_request(kind, "asked");
    }
}

/// Counts one answer to the question `key` (`None`: the client refused or did not answer).
fn count_answer(metrics: &Metrics, key: &str, response: Option<&Value>) {
    let kind = match key {
        SAMPLE_KEY => "sampling",
        ROOTS_KEY => "roots",
        _ => "elicitation",
    };
    let outcome = match (kind, response) {
        (_, None) => "error",
        ("elicitation", Some(answer)) => match answer.get("action").and_then(Value::as_str) {
            Some("accept") => "accept",
            Some("decline") => "decline",
            Some("cancel") => "cancel",
            _ => "error",
        },
        _ => "answered",
    };
    metrics.input_request(kind, outcome);
}

/// Whether `key` names an input request of `interaction` (other answers are ignored).
pub(crate) fn knows(interaction: &CompiledInteraction, key: &str) -> bool {
    (key == CONFIRM_KEY && interaction.confirm.is_some())
        || (key == SAMPLE_KEY && interaction.sample.is_some())
        || (key == ROOTS_KEY && interaction.roots)
        || interaction.elicit.iter().any(|f| f.form == key)
        || interaction.urls.iter().any(|u| u.key == key)
}

/// Decides the next step. `caps` is the client's declared capabilities object; `claims` the
/// caller's token claims (URL steps are templates over them).
pub(crate) fn plan(
    interaction: &CompiledInteraction,
    templates: &Templates,
    args: &Value,
    answers: &Map<String, Value>,
    caps: &Value,
    claims: &Value,
) -> Result<Plan, McpError> {
    let mut args = args.as_object().cloned().unwrap_or_default();
    let missing: Vec<&CompiledField> = interaction
        .elicit
        .iter()
        .filter(|f| !args.contains_key(&f.name))
        .collect();
    required_capabilities(interaction, &missing, caps)?;
    let can_elicit = caps.get("elicitation").is_some();
    let mut ask = Map::new();
    // Forms in declaration order, each with its missing fields.
    let mut forms: Vec<(&str, Vec<&CompiledField>)> = Vec::new();
    for field in missing {
        if !can_elicit {
            // The capability check let this through: the field has a default.
            args.insert(
                field.name.clone(),
                field.default.clone().unwrap_or(Value::Null),
            );
            continue;
        }
        match forms.iter_mut().find(|(form, _)| *form == field.form) {
            Some((_, fields)) => fields.push(field),
            None => forms.push((&field.form, vec![field])),
        }
    }
    for (form, fields) in forms {
        match answers
            .get(form)
            .map(|a| elicit_answer(form, a))
            .transpose()?
        {
            None => {
                ask.insert(form.to_owned(), form_request(&fields));
            }
            Some(Answer::Accept(content)) => match form_values(&fields, &content) {
                Some(values) => args.extend(values),
                None => {
                    ask.insert(form.to_owned(), form_request(&fields));
                }
            },
            Some(Answer::Decline) => {
                let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                return Ok(Plan::Stop(format!(
                    "The user declined to provide {}; nothing was done.",
                    names.join(", ")
                )));
            }
            Some(Answer::Cancel) => {
                return Ok(Plan::Stop("The user cancelled; nothing was done.".into()));
            }
        }
    }
    let mut vars = Vars::default();
    if interaction.roots {
        match answers.get(ROOTS_KEY) {
            None => {
                ask.insert(
                    ROOTS_KEY.into(),
                    json!({"method": "roots/list", "params": {}}),
                );
            }
            Some(answer) => vars.roots = Some(roots_answer(answer)?),
        }
    }
    // Templated questions wait until every elicited value is known.
    let elicit_pending = ask.keys().any(|k| k != ROOTS_KEY);
    let args_value = Value::Object(args);
    if !elicit_pending {
        let vars = json!({"args": args_value, "token": {"claims": claims}});
        for step in &interaction.urls {
            match answers
                .get(&step.key)
                .map(|a| elicit_answer(&step.key, a))
                .transpose()?
            {
                None => {
                    ask.insert(step.key.clone(), url_request(templates, step, &vars)?);
                }
                Some(Answer::Accept(_)) => {}
                Some(Answer::Decline) => {
                    return Ok(Plan::Stop(format!(
                        "The user declined the step `{}`; nothing was done.",
                        step.key
                    )));
                }
                Some(Answer::Cancel) => {
                    return Ok(Plan::Stop("The user cancelled; nothing was done.".into()));
                }
            }
        }
    }
    if let Some(message) = &interaction.confirm
        && (!elicit_pending || matches!(message, mcp_declaration::Text::Literal(_)))
    {
        match answers
            .get(CONFIRM_KEY)
            .map(|a| elicit_answer(CONFIRM_KEY, a))
            .transpose()?
        {
            None => {
                let message = templates
                    .render(message, &args_value)
                    .map_err(|err| McpError::Internal(err.to_string()))?;
                ask.insert(CONFIRM_KEY.into(), confirm_request(&message));
            }
            Some(Answer::Accept(content))
                if content.get("confirm") != Some(&Value::Bool(false)) => {}
            Some(Answer::Cancel) => {
                return Ok(Plan::Stop("The user cancelled; nothing was done.".into()));
            }
            Some(_) => {
                return Ok(Plan::Stop(
                    "The user did not confirm; nothing was done.".into(),
                ));
            }
        }
    }
    if let Some(sample) = &interaction.sample
        && (!elicit_pending || sample.literal)
    {
        match answers.get(SAMPLE_KEY) {
            None => {
                ask.insert(
                    SAMPLE_KEY.into(),
                    json!({"method": "sampling/createMessage", "params": sample_params(sample, templates, &args_value)?}),
                );
            }
            Some(answer) => vars.sample = Some(sample_answer(answer)?),
        }
    }
    if !ask.is_empty() {
        return Ok(Plan::Ask(ask));
    }
    vars.args = args_value;
    Ok(Plan::Ready(vars))
}

/// -32021 naming every capability this call needs and the client did not declare.
fn required_capabilities(
    interaction: &CompiledInteraction,
    missing: &[&CompiledField],
    caps: &Value,
) -> Result<(), McpError> {
    let mut required = Map::new();
    let must_elicit = interaction.confirm.is_some() || missing.iter().any(|f| f.default.is_none());
    for (needed, name) in [
        (must_elicit, "elicitation"),
        (interaction.sample.is_some(), "sampling"),
        (interaction.roots, "roots"),
    ] {
        if needed && caps.get(name).is_none() {
            required.insert(name.into(), json!({}));
        }
    }
    let url_mode = caps.pointer("/elicitation/url").is_some();
    if !interaction.urls.is_empty() && !url_mode {
        required.insert("elicitation".into(), json!({"url": {}}));
    }
    if required.is_empty() {
        Ok(())
    } else {
        Err(McpError::MissingCapability(Value::Object(required)))
    }
}

enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

fn invalid(key: &str, what: &str) -> McpError {
    McpError::InvalidParams(format!("input response `{key}`: {what}"))
}

fn elicit_answer(key: &str, answer: &Value) -> Result<Answer, McpError> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => match answer.get("content") {
            None | Some(Value::Null) => Ok(Answer::Accept(Map::new())),
            Some(Value::Object(content)) => Ok(Answer::Accept(content.clone())),
            Some(_) => Err(invalid(key, "`content` must be an object")),
        },
        Some("decline") => Ok(Answer::Decline),
        Some("cancel") => Ok(Answer::Cancel),
        _ => Err(invalid(
            key,
            "expected an elicitation result with `action` accept, decline or cancel",
        )),
    }
}

/// The fields' values from an accepted form, or `None` when one is missing or invalid (the
/// form is asked again).
fn form_values(
    fields: &[&CompiledField],
    content: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let mut values = Map::new();
    for field in fields {
        let value = content
            .get(&field.name)
            .filter(|v| !v.is_null())
            .or(field.default.as_ref())?;
        if !field.validator.is_valid(value) {
            return None;
        }
        values.insert(field.name.clone(), value.clone());
    }
    Some(values)
}

fn form_request(fields: &[&CompiledField]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        properties.insert(field.name.clone(), field.schema.clone());
        if field.default.is_none() {
            required.push(json!(field.name));
        }
    }
    let described: Vec<&str> = fields
        .iter()
        .filter_map(|f| f.description.as_deref())
        .collect();
    let message = if described.is_empty() {
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        format!("Please provide: {}", names.join(", "))
    } else {
        described.join("\n")
    };
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    }})
}

/// A URL-mode `elicitation/create` (SEP-1036). Its `elicitationId` is fresh on every ask; the
/// answer is matched by the step's key, sealed in the `requestState` (2026-07-28) or awaited on
/// the session (legacy).
fn url_request(
    templates: &Templates,
    step: &mcp_declaration::CompiledUrlStep,
    vars: &Value,
) -> Result<Value, McpError> {
    let render = |text| {
        templates
            .render_in(text, vars)
            .map_err(|err| McpError::Internal(err.to_string()))
    };
    let id: u128 = rand::random();
    Ok(json!({"method": "elicitation/create", "params": {
        "mode": "url",
        "message": render(&step.message)?,
        "url": render(&step.url)?,
        "elicitationId": format!("{}-{id:032x}", step.key),
    }}))
}

fn confirm_request(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {
            CONFIRM_KEY: {"type": "boolean", "title": "Confirm", "default": true},
        }},
    }})
}

fn sample_params(
    sample: &CompiledSample,
    templates: &Templates,
    args: &Value,
) -> Result<Value, McpError> {
    let internal = |err: mcp_declaration::RenderError| McpError::Internal(err.to_string());
    let messages = sample
        .messages
        .iter()
        .map(|m| m.render(templates, args))
        .collect::<Result<Vec<_>, _>>()
        .map_err(internal)?;
    let mut params = json!({"messages": messages, "maxTokens": sample.max_tokens});
    if let Some(system) = &sample.system_prompt {
        params["systemPrompt"] = json!(templates.render(system, args).map_err(internal)?);
    }
    if let Some(preferences) = &sample.model_preferences {
        params["modelPreferences"] = Value::Object(preferences.clone());
    }
    Ok(params)
}

fn sample_answer(answer: &Value) -> Result<Value, McpError> {
    let blocks = match answer.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => {
            return Err(invalid(
                SAMPLE_KEY,
                "expected a sampling result with `content`",
            ));
        }
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    Ok(json!({
        "text": text.join("\n"),
        "model": answer.get("model"),
        "stopReason": answer.get("stopReason"),
        "role": answer.get("role"),
        "content": blocks,
    }))
}

fn roots_answer(answer: &Value) -> Result<Value, McpError> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid(ROOTS_KEY, "expected a roots result with `roots`"))?;
    roots
        .iter()
        .map(|root| match root.get("uri").and_then(Value::as_str) {
            Some(uri) => {
                let mut kept = json!({"uri": uri});
                if let Some(name) = root.get("name").and_then(Value::as_str) {
                    kept["name"] = json!(name);
                }
                Ok(kept)
            }
            None => Err(invalid(ROOTS_KEY, "every root needs a `uri`")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod url_tests;
