//! Compiling the server-level fields: checks of `description`, `icons`, `websiteUrl` and
//! `repository`, and the `serverInfo` (MCP `Implementation`) they are served in. Pure.

use super::Compiler;
use crate::types::{Declaration, Icon, MAX_SERVER_DESCRIPTION};
use serde_json::{Value, json};

impl Compiler<'_> {
    /// `serverInfo` of server `name`: `name`, `version`, and what the declaration adds
    /// (`title`, and the SEP-973 fields `description`, `icons`, `websiteUrl`).
    pub(super) fn server_info(&mut self, name: &str, decl: &Declaration) -> Value {
        let mut info = json!({"name": name, "version": decl.version.as_deref().unwrap_or("0.0.0")});
        if let Some(title) = &decl.title {
            info["title"] = json!(title);
        }
        if let Some(description) = &decl.description {
            self.description("spec.description", description);
            info["description"] = json!(description);
        }
        for (i, icon) in decl.icons.iter().enumerate() {
            self.icon(&format!("spec.icons[{i}]"), icon);
        }
        if !decl.icons.is_empty() {
            info["icons"] = json!(decl.icons);
        }
        if let Some(url) = &decl.website_url {
            self.web_url("spec.websiteUrl", url);
            info["websiteUrl"] = json!(url);
        }
        if let Some(repository) = &decl.repository {
            self.web_url("spec.repository.url", &repository.url);
            if repository.source.trim().is_empty() {
                self.error("spec.repository.source", "must not be empty");
            }
            if let Some(subfolder) = &repository.subfolder
                && !clean_relative(subfolder)
            {
                self.error(
                    "spec.repository.subfolder",
                    "must be a relative path without `.` or `..` segments, such as `servers/tracker`",
                );
            }
        }
        info
    }

    fn description(&mut self, path: &str, text: &str) {
        let length = text.chars().count();
        if text.trim().is_empty() {
            self.error(path, "must not be empty");
        } else if length > MAX_SERVER_DESCRIPTION {
            self.error(
                path,
                format!("is {length} characters long; at most {MAX_SERVER_DESCRIPTION} are allowed (the MCP Registry's limit)"),
            );
        }
    }

    fn icon(&mut self, path: &str, icon: &Icon) {
        // `data:` icons are embedded; any other scheme would make clients fetch from wherever
        // the declaration points, so only `https:` is accepted for links.
        let src_ok = icon.src.starts_with("data:image/")
            || url::Url::parse(&icon.src).is_ok_and(|u| u.scheme() == "https" && u.has_host());
        if !src_ok {
            self.error(
                format!("{path}.src"),
                "must be an `https:` URL or a `data:image/...` URI",
            );
        }
        if let Some(mime) = &icon.mime_type
            && !mime.starts_with("image/")
        {
            self.error(
                format!("{path}.mimeType"),
                "must be an image type, such as `image/png`",
            );
        }
        for (i, size) in icon.sizes.iter().enumerate() {
            if !valid_size(size) {
                self.error(
                    format!("{path}.sizes[{i}]"),
                    "must be `WIDTHxHEIGHT` (such as `48x48`) or `any`",
                );
            }
        }
    }

    fn web_url(&mut self, path: &str, text: &str) {
        let ok = url::Url::parse(text)
            .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.has_host());
        if !ok {
            self.error(path, "must be an absolute `https:` or `http:` URL");
        }
    }
}

/// `48x48` or `any` (the form MCP and the registry give icon sizes).
fn valid_size(size: &str) -> bool {
    if size == "any" {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    size.split_once('x')
        .is_some_and(|(w, h)| digits(w) && digits(h))
}

/// A relative path with no empty, `.` or `..` segment (no way out of the repository).
fn clean_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && path
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

#[cfg(test)]
mod tests {
    use super::super::tests::compiled;
    use serde_json::json;

    #[test]
    fn server_info_carries_the_declared_metadata() {
        let c = compiled(
            "  title: Tracker\n  version: 1.4.0\n  description: Issue tracker of the platform team\n  icons: [{src: 'https://example.com/icon.png', mimeType: image/png, sizes: ['48x48'], theme: dark}]\n  websiteUrl: https://wiki.example.com/tracker-mcp\n  repository: {url: 'https://git.example.com/platform/tracker', source: git}\n",
        )
        .unwrap();
        assert_eq!(
            c.server_info,
            json!({
                "name": "t", "version": "1.4.0", "title": "Tracker",
                "description": "Issue tracker of the platform team",
                "icons": [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}],
                "websiteUrl": "https://wiki.example.com/tracker-mcp",
            })
        );
    }

    #[test]
    fn bad_metadata_is_refused_field_by_field() {
        let long = "x".repeat(101);
        let err = compiled(&format!(
            "  description: {long}\n  icons: [{{src: 'http://example.com/i.png', sizes: ['big']}}]\n  websiteUrl: 'javascript:alert(1)'\n  repository: {{url: 'https://git.example.com/r', source: git, subfolder: '../up'}}\n"
        ))
        .unwrap_err();
        let paths: Vec<&str> = err.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.description",
                "spec.icons[0].src",
                "spec.icons[0].sizes[0]",
                "spec.websiteUrl",
                "spec.repository.subfolder"
            ]
        );
        assert!(err.errors[0].message.starts_with("is 101 characters long"));
    }

    #[test]
    fn a_description_of_exactly_100_characters_is_accepted() {
        let text = "é".repeat(100);
        assert!(compiled(&format!("  description: {text}\n")).is_ok());
    }
}
