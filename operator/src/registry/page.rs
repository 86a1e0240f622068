//! The catalog page at `/`: every published server with its health (as `kubectl get mcps`
//! shows it), what it offers and how to connect, rendered on the server so the list works
//! without JavaScript; `page/catalog.js` then keeps it current from the API and adds live
//! search and copy buttons. Every declared string is escaped; the Content-Security-Policy
//! allows only this origin's script and stylesheet. Pure rendering plus thin handlers.

use super::catalog::Catalog;
use super::entry::{KUBE_MCP_META, OFFICIAL_META};
use super::query::{self, ListQuery, encode_cursor};
use super::settings::MAX_PAGE;
use super::state::RegistryState;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::fmt::Write as _;

const CSS: &str = include_str!("page/catalog.css");
const JS: &str = include_str!("page/catalog.js");

/// Only this origin's script, style and API; images from `https:` (declared icons) and
/// `data:`; no frames, no plugins, no inline code.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The Inspector version the snippets name (the one the project tests against).
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

/// `GET /`.
pub(super) async fn catalog_page(State(state): State<RegistryState>, request: Request) -> Response {
    let (status, body) = match query::parse_list(request.uri().query()) {
        Ok(mut query) => {
            query.limit = MAX_PAGE;
            query.include_deleted = false;
            query.updated_since = None;
            let html = state.read(|catalog| render(catalog, &query));
            (StatusCode::OK, html)
        }
        Err(problem) => (
            StatusCode::BAD_REQUEST,
            document(
                "",
                &format!(
                    "<p class=\"error\">{}</p><p><a href=\"/\">All servers</a></p>",
                    escape(&problem.to_string())
                ),
            ),
        ),
    };
    html_response(status, body, "text/html; charset=utf-8", "no-cache")
}

/// `GET /catalog.css`.
pub(super) async fn stylesheet() -> Response {
    html_response(
        StatusCode::OK,
        CSS.to_owned(),
        "text/css; charset=utf-8",
        "public, max-age=300",
    )
}

/// `GET /catalog.js`.
pub(super) async fn script() -> Response {
    html_response(
        StatusCode::OK,
        JS.to_owned(),
        "text/javascript; charset=utf-8",
        "public, max-age=300",
    )
}

fn html_response(
    status: StatusCode,
    body: String,
    kind: &'static str,
    cache: &'static str,
) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, kind),
        (header::CACHE_CONTROL, cache),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn document(search: &str, main: &str) -> String {
    format!(
        "<!doctype html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">
<title>MCP servers · kube-mcp catalog</title>
<link rel=\"icon\" href=\"data:,\">
<link rel=\"stylesheet\" href=\"/catalog.css\">
<script src=\"/catalog.js\" defer></script>
</head>
<body>
<header class=\"top\">
<h1>MCP servers</h1>
<p>Published by this cluster's kube-mcp operator. Registry API: <a href=\"/v0.1/servers\"><code>/v0.1/servers</code></a>.</p>
<form role=\"search\" method=\"get\" action=\"/\" class=\"search\">
<label for=\"search\">Search servers</label>
<input id=\"search\" name=\"search\" type=\"search\" value=\"{}\" autocomplete=\"off\">
<button type=\"submit\">Search</button>
</form>
</header>
<main id=\"main\">
{main}
</main>
</body>
</html>
",
        escape(search)
    )
}

/// The whole page for one query.
pub fn render(catalog: &Catalog, query: &ListQuery) -> String {
    let page = catalog.list(query);
    let mut main = String::new();
    let count = page.entries.len();
    let _ = writeln!(
        main,
        "<p id=\"count\" class=\"count\" role=\"status\">{}</p>\n<ul id=\"servers\" class=\"servers\">",
        if count == 1 {
            "1 server".to_owned()
        } else {
            format!("{count} servers")
        }
    );
    for (i, entry) in page.entries.iter().enumerate() {
        main.push_str(&card(i, &entry.response()));
    }
    main.push_str("</ul>\n");
    if let Some(next) = page.next_cursor {
        let mut href = format!("/?cursor={}", encode_cursor(&next));
        if let Some(search) = &query.search {
            href.push_str("&search=");
            href.push_str(&form_urlencoded::byte_serialize(search.as_bytes()).collect::<String>());
        }
        let _ = writeln!(
            main,
            "<p class=\"more\"><a href=\"{}\">More servers</a></p>",
            escape(&href)
        );
    }
    document(query.search.as_deref().unwrap_or_default(), &main)
}

/// The badge of a server: a class and its words (`catalog.js` decides the same way).
pub fn badge(response: &Value) -> (&'static str, &'static str) {
    let meta = &response["_meta"][KUBE_MCP_META];
    if meta["suspended"] == true {
        ("suspended", "Suspended")
    } else if response["_meta"][OFFICIAL_META]["status"] == "active" {
        ("ready", "Ready")
    } else if meta["ready"]["status"] != "True" {
        ("not-ready", "Not ready")
    } else {
        ("unverified", "Not verified")
    }
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// `STATUS (REASON): message`, as the condition reads in `kubectl describe`.
pub fn condition_text(condition: &Value) -> String {
    if condition.is_null() {
        return "not reported yet".into();
    }
    let mut out = format!(
        "{} ({})",
        text(condition, "status"),
        text(condition, "reason")
    );
    let message = text(condition, "message");
    if !message.is_empty() {
        out.push_str(": ");
        out.push_str(message);
    }
    out
}

/// Single-quotes a shell word unless it is plainly safe.
pub fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+=,".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Connection snippets for common clients: (id, label, text).
pub fn snippets(key: &str, url: &str) -> Vec<(&'static str, &'static str, String)> {
    let json = |value: Value| serde_json::to_string_pretty(&value).unwrap_or_default();
    vec![
        (
            "vscode",
            "VS Code (.vscode/mcp.json)",
            json(serde_json::json!({"servers": {key: {"type": "http", "url": url}}})),
        ),
        (
            "claude",
            "Claude Code",
            format!(
                "claude mcp add --transport http {} {}",
                shell_word(key),
                shell_word(url)
            ),
        ),
        (
            "cursor",
            "Cursor (~/.cursor/mcp.json)",
            json(serde_json::json!({"mcpServers": {key: {"url": url}}})),
        ),
        (
            "inspector",
            "MCP Inspector",
            format!(
                "npx {INSPECTOR} --cli {} --transport http --method tools/list",
                shell_word(url)
            ),
        ),
    ]
}

fn card(i: usize, response: &Value) -> String {
    let server = &response["server"];
    let meta = &response["_meta"][KUBE_MCP_META];
    let name = text(server, "name");
    let title = server["title"].as_str().unwrap_or(name);
    let key = name.rsplit('/').next().unwrap_or(name);
    let (badge_class, badge_text) = badge(response);
    let search = format!("{name}\n{title}\n{}", text(server, "description")).to_lowercase();
    let mut out = String::new();
    let _ = write!(
        out,
        "<li class=\"server\" data-name=\"{}\" data-search=\"{}\">\n<article aria-labelledby=\"s{i}-title\">\n<div class=\"head\">",
        escape(name),
        escape(&search)
    );
    if let Some(src) = server["icons"][0]["src"].as_str() {
        let _ = write!(
            out,
            "<img class=\"icon\" src=\"{}\" alt=\"\" width=\"40\" height=\"40\">",
            escape(src)
        );
    }
    let _ = writeln!(
        out,
        "<h2 id=\"s{i}-title\">{}</h2><span class=\"badge {badge_class}\">{badge_text}</span></div>",
        escape(title)
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\"><code>{}</code> · version {}</p>\n<p class=\"description\">{}</p>\n<dl class=\"facts\">",
        escape(name),
        escape(text(server, "version")),
        escape(text(server, "description"))
    );
    let url = server["remotes"][0]["url"].as_str();
    let fact = |out: &mut String, label: &str, value: &str, class: &str| {
        let _ = writeln!(
            out,
            "<dt>{label}</dt><dd class=\"{class}\">{}</dd>",
            escape(value)
        );
    };
    fact(&mut out, "URL", url.unwrap_or("not reported yet"), "url");
    fact(&mut out, "Ready", &condition_text(&meta["ready"]), "ready");
    fact(
        &mut out,
        "Verified",
        &condition_text(&meta["verified"]),
        "verified",
    );
    let issuer = meta["auth"]["issuer"].as_str();
    fact(
        &mut out,
        "Sign-in",
        issuer.map_or("none: anyone who reaches the URL may call it", |i| i),
        "auth",
    );
    let object = format!("{}/{}", text(meta, "namespace"), text(meta, "name"));
    fact(&mut out, "MCPServer", &object, "object");
    if let Some(website) = server["websiteUrl"].as_str() {
        let _ = writeln!(
            out,
            "<dt>Website</dt><dd><a href=\"{0}\" rel=\"noopener noreferrer\">{0}</a></dd>",
            escape(website)
        );
    }
    out.push_str("</dl>\n");
    out.push_str(&tools(meta));
    match url {
        Some(url) => {
            let _ = writeln!(out, "<details class=\"connect\"><summary>Connect</summary>");
            for (id, label, snippet) in snippets(key, url) {
                let _ = writeln!(
                    out,
                    "<div class=\"snippet\"><h3 id=\"s{i}-{id}-label\">{label}</h3><pre id=\"s{i}-{id}\" aria-labelledby=\"s{i}-{id}-label\"><code>{}</code></pre><button type=\"button\" class=\"copy\" data-copy=\"s{i}-{id}\" aria-label=\"Copy the {label} snippet of {}\" hidden>Copy</button></div>",
                    escape(&snippet),
                    escape(title)
                );
            }
            out.push_str("</details>\n");
        }
        None => out.push_str(
            "<p class=\"connect\">No URL yet: the operator has not reported where it serves.</p>\n",
        ),
    }
    out.push_str("</article>\n</li>\n");
    out
}

fn tools(meta: &Value) -> String {
    let tools = meta["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let omitted = meta["toolsOmitted"].as_u64().unwrap_or(0);
    let total = tools.len() as u64 + omitted;
    let mut out = format!(
        "<details class=\"tools\"><summary>{total} tool{}</summary>\n<ul>\n",
        if total == 1 { "" } else { "s" }
    );
    for tool in tools {
        let name = text(tool, "name");
        let _ = write!(
            out,
            "<li><span class=\"tool-title\">{}</span> <code>{}</code>",
            escape(tool["title"].as_str().unwrap_or(name)),
            escape(name)
        );
        for (hint, words) in [
            ("readOnlyHint", "read-only"),
            ("destructiveHint", "destructive"),
            ("idempotentHint", "idempotent"),
            ("openWorldHint", "open world"),
        ] {
            if tool["annotations"][hint] == true {
                let _ = write!(out, " <span class=\"hint\">{words}</span>");
            }
        }
        if let Some(scopes) = tool["requiredScopes"].as_array() {
            let scopes: Vec<&str> = scopes.iter().filter_map(Value::as_str).collect();
            let _ = write!(
                out,
                " <span class=\"scopes\">needs {}</span>",
                escape(&scopes.join(" "))
            );
        }
        if let Some(description) = tool["description"].as_str() {
            let _ = write!(out, "<p>{}</p>", escape(description));
        }
        out.push_str("</li>\n");
    }
    if omitted > 0 {
        let _ = writeln!(out, "<li class=\"omitted\">and {omitted} more</li>");
    }
    out.push_str("</ul></details>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{catalog_of, server};
    use crate::registry::routes::router;
    use axum::body::Body;
    use tower::ServiceExt as _;

    fn hostile() -> crate::resource::MCPServer {
        let mut s = server("ns", "evil", "2025-01-01T00:00:00Z", true);
        let decl = &mut s.spec.declaration;
        decl.title = Some("<img src=x onerror=alert(1)>".into());
        decl.description = Some("<script>alert('x')</script> & \"quotes\"".into());
        decl.tools[0].description = Some("</li><script>alert(2)</script>".into());
        decl.tools[0].title = Some("<b>bold</b>".into());
        s
    }

    #[test]
    fn declared_strings_are_text_never_markup() {
        let html = render(&catalog_of(&[hostile()]), &ListQuery::default());
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(!html.contains("<b>bold"), "{html}");
        assert!(
            html.contains(
                "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;quotes&quot;"
            )
        );
        assert!(html.contains("&lt;/li&gt;&lt;script&gt;alert(2)&lt;/script&gt;"));
        // The only scripts are the page's own.
        assert_eq!(html.matches("<script").count(), 1);
        assert!(html.contains("<script src=\"/catalog.js\" defer></script>"));
    }

    #[test]
    fn the_list_shows_health_tools_and_snippets_without_script() {
        let html = render(
            &catalog_of(&[
                server("ns", "weather", "2025-01-01T00:00:00Z", true),
                server("ns", "tracker", "2025-01-01T00:00:00Z", false),
            ]),
            &ListQuery::default(),
        );
        assert!(html.contains("<p id=\"count\" class=\"count\" role=\"status\">2 servers</p>"));
        assert!(html.contains("<span class=\"badge ready\">Ready</span>"));
        assert!(html.contains("<span class=\"badge not-ready\">Not ready</span>"));
        assert!(html.contains("<dd class=\"ready\">False (Available): ok</dd>"));
        assert!(html.contains("<span class=\"hint\">read-only</span>"));
        assert!(html.contains("<span class=\"scopes\">needs greet</span>"));
        assert!(html.contains(
            "claude mcp add --transport http ns.weather https://mcp.example.com/weather/mcp"
        ));
        assert!(html.contains("&quot;type&quot;: &quot;http&quot;"));
        // Copy buttons appear only once the script runs.
        assert!(html.contains("class=\"copy\" data-copy=\"s1-vscode\" aria-label=\"Copy the VS Code (.vscode/mcp.json) snippet of weather title\" hidden>"));
        let searched = render(
            &catalog_of(&[server("ns", "weather", "2025-01-01T00:00:00Z", true)]),
            &ListQuery {
                search: Some("nothing".into()),
                ..ListQuery::default()
            },
        );
        assert!(searched.contains(">0 servers<"));
        assert!(searched.contains("value=\"nothing\""));
    }

    #[test]
    fn snippets_quote_what_a_shell_would_split() {
        assert_eq!(
            shell_word("https://a.example/x/mcp"),
            "https://a.example/x/mcp"
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$(rm -rf ~)"), "'$(rm -rf ~)'");
        let all = snippets("k", "https://h/mcp");
        assert_eq!(
            all[2].2,
            "{\n  \"mcpServers\": {\n    \"k\": {\n      \"url\": \"https://h/mcp\"\n    }\n  }\n}"
        );
        assert_eq!(
            all[3].2,
            "npx @modelcontextprotocol/inspector@2.12.0 --cli https://h/mcp --transport http --method tools/list"
        );
    }

    #[tokio::test]
    async fn the_page_and_its_assets_carry_a_strict_policy() {
        let state = RegistryState::new(catalog_of(&[hostile()]));
        for (path, kind) in [
            ("/", "text/html; charset=utf-8"),
            ("/?search=evil", "text/html; charset=utf-8"),
            ("/catalog.css", "text/css; charset=utf-8"),
            ("/catalog.js", "text/javascript; charset=utf-8"),
        ] {
            let response = router(state.clone())
                .oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let headers = response.headers();
            assert_eq!(headers["content-type"], kind);
            assert_eq!(headers["content-security-policy"], CSP);
            assert!(!CSP.contains("unsafe"));
            assert_eq!(headers["x-content-type-options"], "nosniff");
        }
        let response = router(state)
            .oneshot(
                axum::http::Request::get("/?limit=0")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }
}
