//! URL-mode elicitation steps (`elicit[]` with `url`, SEP-1036): the user is sent out of band
//! to a page (a consent screen, a sign-in at a third party) and the call goes on once they
//! accept. The URL is a template over `args` and `token.claims`, but its scheme and host are
//! literal, so no argument can point the user at another site; `https:` only, `http:` on a
//! loopback host for local tests. Pure.

use super::Compiler;
use crate::template::Text;
use crate::types::ElicitField;

/// One out-of-band step.
#[derive(Debug)]
pub struct CompiledUrlStep {
    /// Its input-request key (the field's `name`).
    pub key: String,
    /// The page, rendered with `args` and `token`.
    pub url: Text,
    /// Why the user should open it, rendered likewise.
    pub message: Text,
}

impl Compiler<'_> {
    /// Compiles the URL step `field` (at `path`), which has a `url`.
    pub(super) fn url_step(&mut self, path: &str, field: &ElicitField) -> Option<CompiledUrlStep> {
        let source = field.url.as_deref().unwrap_or_default();
        if !field.schema.is_empty() || field.form.is_some() || field.title.is_some() {
            self.error(
                path.to_owned(),
                "a `url` step takes `name`, `url` and `message` only (no `schema`, `form` or `title`)",
            );
        }
        if let Err(why) = literal_origin_prefix(source) {
            self.error(format!("{path}.url"), why);
        }
        let Some(message) = field.message.as_deref() else {
            self.error(
                format!("{path}.message"),
                "required with `url`: it tells the user why to open the page",
            );
            return None;
        };
        let url = self.text(&format!("{path}.url"), source)?;
        let message = self.text(&format!("{path}.message"), message)?;
        Some(CompiledUrlStep {
            key: field.name.clone(),
            url,
            message,
        })
    }
}

/// The scheme and host of a URL template must be literal: `https://host` or
/// `http://localhost|127.0.0.1|[::1]`, then `/`, `?`, `:port` or the end, before any template.
fn literal_origin_prefix(source: &str) -> Result<(), String> {
    let why = || {
        "must start with a literal https:// origin (http:// only on localhost, 127.0.0.1 or [::1]) \
         before any template expression"
            .to_owned()
    };
    let (secure, rest) = match (
        source.strip_prefix("https://"),
        source.strip_prefix("http://"),
    ) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        _ => return Err(why()),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.is_empty() || authority.contains(['{', '}', '%', '@']) {
        return Err(why());
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let loopback = ["localhost", "127.0.0.1", "::1"].contains(&host);
    if secure || loopback {
        Ok(())
    } else {
        Err(why())
    }
}

#[cfg(test)]
mod tests {
    use super::literal_origin_prefix;

    #[test]
    fn only_a_literal_https_or_loopback_origin_starts_the_url() {
        for good in [
            "https://consent.example.com/start?user={{ token.claims.sub }}",
            "https://consent.example.com",
            "http://127.0.0.1:8700/consent/{{ args.id }}",
            "http://localhost/x",
            "http://[::1]:9/x",
        ] {
            assert_eq!(literal_origin_prefix(good), Ok(()), "{good}");
        }
        for bad in [
            "http://consent.example.com/",
            "https://{{ args.host }}/x",
            "https://consent{{ args.x }}.example.com/",
            "{{ args.url }}",
            "https://user@evil.example.com/",
            "javascript:alert(1)",
            "https:///x",
        ] {
            assert!(literal_origin_prefix(bad).is_err(), "{bad}");
        }
    }
}
