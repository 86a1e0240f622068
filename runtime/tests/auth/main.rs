//! The adversarial token matrix: every way a bearer token can be wrong, each refused with the
//! right status and `WWW-Authenticate` challenge, against an issuer serving its keys on a real
//! socket; and key rotation picked up without a restart.

// Test helpers outside `#[test]` functions may panic on setup failures: that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod issuer;

use http::{HeaderMap, HeaderValue, StatusCode, header};
use issuer::{EC_C, Published, RSA_A, RSA_A_PUBLIC, RSA_B, SigningKey};
use mcp_declaration::Auth;
use mcp_http::auth::{Authenticator, KeySettings, Refusal};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

const RESOURCE: &str = "http://127.0.0.1:8080/weather/mcp";

struct Fixture {
    published: Arc<Published>,
    issuer: String,
    auth: Authenticator,
    a: SigningKey,
}

async fn fixture(refresh_interval: Duration) -> Fixture {
    let a = SigningKey::rsa("a", RSA_A);
    let published = Arc::new(Published::default());
    published.keys.lock().unwrap().push(a.jwk());
    published
        .keys
        .lock()
        .unwrap()
        .push(SigningKey::ec("c", EC_C).jwk());
    let issuer = issuer::serve(published.clone()).await;
    let spec = Auth {
        issuer: issuer.clone(),
        required_scopes: vec!["mcp".into()],
        ..Auth::default()
    };
    let auth = Authenticator::new(
        &spec,
        Some(RESOURCE),
        vec!["mcp".into(), "issues:write".into()],
        None,
        KeySettings {
            refresh_interval,
            max_age: Duration::from_secs(3600),
            ..KeySettings::default()
        },
    )
    .unwrap();
    Fixture {
        published,
        issuer,
        auth,
        a,
    }
}

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

impl Fixture {
    fn claims(&self) -> Value {
        json!({
            "iss": self.issuer, "sub": "alice", "aud": RESOURCE,
            "exp": now() + 300, "iat": now(), "scope": "mcp issues:read",
        })
    }

    fn with(&self, changes: Value) -> Value {
        let mut claims = self.claims();
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    }

    async fn check(&self, token: &str) -> Result<(), Refusal> {
        self.check_query(token, None).await
    }

    async fn check_query(&self, token: &str, query: Option<&str>) -> Result<(), Refusal> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        self.auth.authenticate(&headers, query).await.map(|_| ())
    }
}

fn b64(value: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

#[tokio::test]
async fn a_valid_token_is_accepted_with_its_scopes() {
    let f = fixture(Duration::from_secs(60)).await;
    let mut headers = HeaderMap::new();
    let token = f.a.sign(&f.claims());
    headers.insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    let principal = f.auth.authenticate(&headers, None).await.unwrap();
    assert_eq!(principal.subject.as_deref(), Some("alice"));
    assert_eq!(principal.scopes, ["issues:read", "mcp"]);
    // ES256 keys of the same set work too.
    let ec = SigningKey::ec("c", EC_C);
    assert_eq!(f.check(&ec.sign(&f.claims())).await, Ok(()));
    // Audiences compare as canonical URIs (RFC 8707): case of scheme and host, default port,
    // trailing slash; and `aud` may be an array.
    for aud in [
        json!("HTTP://127.0.0.1:8080/weather/mcp/"),
        json!(["https://other.example.com", RESOURCE]),
    ] {
        assert_eq!(
            f.check(&f.a.sign(&f.with(json!({"aud": aud})))).await,
            Ok(()),
            "{aud}"
        );
    }
    // RFC 9068 access tokens.
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("a".into());
    header.typ = Some("at+jwt".into());
    let at_jwt = jsonwebtoken::encode(&header, &f.claims(), &f.a.key).unwrap();
    assert_eq!(f.check(&at_jwt).await, Ok(()));
    // `scp` as an array, as some providers issue it.
    let scp = f.with(json!({"scope": null, "scp": ["mcp"]}));
    assert_eq!(f.check(&f.a.sign(&scp)).await, Ok(()));
}

#[tokio::test]
async fn the_adversarial_matrix_is_refused() {
    let f = fixture(Duration::from_secs(60)).await;
    let good = f.a.sign(&f.claims());
    let (head, rest) = good.split_once('.').unwrap();
    let (_payload, signature) = rest.split_once('.').unwrap();
    let header_none = b64(&json!({"alg": "none", "kid": "a", "typ": "JWT"}));
    let hs256 = {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("a".into());
        let key = jsonwebtoken::EncodingKey::from_secret(RSA_A_PUBLIC.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &f.claims(), &key).unwrap()
    };
    let mut other_sub = f.claims();
    other_sub["sub"] = json!("mallory");
    let tampered = format!("{head}.{}.{signature}", b64(&other_sub));
    let unknown_kid = SigningKey::rsa("z", RSA_B).sign(&f.claims());
    let wrong_key_same_kid = SigningKey {
        kid: "a",
        ..SigningKey::rsa("a", RSA_B)
    }
    .sign(&f.claims());
    let oversized = f.a.sign(&f.with(json!({"pad": "x".repeat(9000)})));
    let typed = |typ: &str| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some("a".into());
        header.typ = Some(typ.into());
        jsonwebtoken::encode(&header, &f.claims(), &f.a.key).unwrap()
    };
    // An OpenID Connect ID token naming this resource among its audiences, as a client that
    // passes on its login token might send it.
    let id_token = f.a.sign(&f.with(json!({"aud": [RESOURCE, "desktop-app"],
        "azp": "desktop-app", "nonce": "n-0S6_WzA2Mj"})));
    let cases: Vec<(&str, String, Refusal)> = vec![
        ("garbage", "garbage".into(), Refusal::Malformed("not a JWT")),
        (
            "a logout token",
            typed("logout+jwt"),
            Refusal::Malformed("not an access token"),
        ),
        (
            "an ID token",
            id_token,
            Refusal::Malformed("an ID token, not an access token"),
        ),
        (
            "garbage with dots",
            "a.b.c".into(),
            Refusal::Malformed("not a JWT with a supported algorithm"),
        ),
        (
            "alg none",
            format!("{header_none}.{}.", b64(&f.claims())),
            Refusal::Malformed("not a JWT with a supported algorithm"),
        ),
        (
            "HS256 with the public key",
            hs256,
            Refusal::Malformed("algorithm not accepted"),
        ),
        (
            "wrong issuer",
            f.a.sign(&f.with(json!({"iss": "http://127.0.0.1:1"}))),
            Refusal::WrongIssuer,
        ),
        (
            "issuer with a trailing slash",
            f.a.sign(&f.with(json!({"iss": format!("{}/", f.issuer)}))),
            Refusal::WrongIssuer,
        ),
        (
            "no issuer",
            f.a.sign(&f.with(json!({"iss": null}))),
            Refusal::WrongIssuer,
        ),
        (
            "wrong audience",
            f.a.sign(&f.with(json!({"aud": "http://127.0.0.1:8080/other/mcp"}))),
            Refusal::WrongAudience,
        ),
        (
            "audience on another port",
            f.a.sign(&f.with(json!({"aud": "http://127.0.0.1:8081/weather/mcp"}))),
            Refusal::WrongAudience,
        ),
        (
            "no audience",
            f.a.sign(&f.with(json!({"aud": null}))),
            Refusal::WrongAudience,
        ),
        (
            "expired",
            f.a.sign(&f.with(json!({"exp": now() - 120}))),
            Refusal::Expired,
        ),
        (
            "no exp",
            f.a.sign(&f.with(json!({"exp": null}))),
            Refusal::Malformed("a required claim is missing"),
        ),
        (
            "not yet valid",
            f.a.sign(&f.with(json!({"nbf": now() + 300}))),
            Refusal::NotYetValid,
        ),
        ("unknown kid", unknown_kid, Refusal::UnknownKey),
        (
            "another key under a known kid",
            wrong_key_same_kid,
            Refusal::InvalidSignature,
        ),
        ("tampered payload", tampered, Refusal::InvalidSignature),
        (
            "oversized",
            oversized,
            Refusal::Malformed("token too large"),
        ),
        (
            "missing scope",
            f.a.sign(&f.with(json!({"scope": "issues:read"}))),
            Refusal::InsufficientScope(vec!["mcp".into()]),
        ),
    ];
    for (name, token, expected) in cases {
        assert_eq!(f.check(&token).await, Err(expected.clone()), "{name}");
    }
    // Within leeway (30 s) an expired token still passes.
    assert_eq!(
        f.check(&f.a.sign(&f.with(json!({"exp": now() - 10}))))
            .await,
        Ok(())
    );
    // A token in the query string refuses the request even with a valid header.
    assert_eq!(
        f.check_query(&good, Some(&format!("access_token={good}")))
            .await,
        Err(Refusal::Malformed("token in the query string"))
    );
    assert_eq!(f.check(&good).await, Ok(()));
}

#[tokio::test]
async fn refusals_carry_status_and_challenge() {
    let f = fixture(Duration::from_secs(60)).await;
    let metadata = "http://127.0.0.1:8080/.well-known/oauth-protected-resource/weather/mcp";
    let missing = f
        .auth
        .authenticate(&HeaderMap::new(), None)
        .await
        .unwrap_err();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        f.auth.challenge(&missing),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\"")
    );
    let expired = f
        .check(&f.a.sign(&f.with(json!({"exp": now() - 120}))))
        .await
        .unwrap_err();
    assert_eq!(expired.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        f.auth.challenge(&expired),
        format!(
            "Bearer resource_metadata=\"{metadata}\", scope=\"mcp\", error=\"invalid_token\", error_description=\"token expired\""
        )
    );
    let principal = f
        .auth
        .authenticate(
            &{
                let mut h = HeaderMap::new();
                h.insert(
                    header::AUTHORIZATION,
                    format!("Bearer {}", f.a.sign(&f.claims())).parse().unwrap(),
                );
                h
            },
            None,
        )
        .await
        .unwrap();
    let scope = f
        .auth
        .require(&principal, &["issues:write".into()])
        .unwrap_err();
    assert_eq!(scope.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        f.auth.challenge(&scope),
        format!(
            "Bearer resource_metadata=\"{metadata}\", scope=\"mcp issues:write\", error=\"insufficient_scope\", error_description=\"insufficient scope\""
        )
    );
    assert_eq!(f.auth.metadata_url(), metadata);
    assert_eq!(
        f.auth.metadata(),
        &json!({
            "resource": RESOURCE,
            "authorization_servers": [f.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp", "issues:write"],
        })
    );
}

#[tokio::test]
async fn unknown_kids_cannot_flood_the_issuer() {
    let f = fixture(Duration::from_secs(60)).await;
    assert_eq!(f.check(&f.a.sign(&f.claims())).await, Ok(()));
    assert_eq!(f.published.fetches.load(Ordering::SeqCst), 1);
    for i in 0..50 {
        let kid: &'static str = Box::leak(format!("made-up-{i}").into_boxed_str());
        let token = SigningKey::rsa(kid, RSA_B).sign(&f.claims());
        assert_eq!(f.check(&token).await, Err(Refusal::UnknownKey));
    }
    // One refresh at most within the interval, whatever the number of unknown kids.
    assert!(f.published.fetches.load(Ordering::SeqCst) <= 2);
}

#[tokio::test]
async fn a_rotated_key_is_accepted_without_a_restart() {
    let f = fixture(Duration::from_millis(200)).await;
    assert_eq!(f.check(&f.a.sign(&f.claims())).await, Ok(()));
    let b = SigningKey::rsa("b", RSA_B);
    let with_b = b.sign(&f.claims());
    assert_eq!(f.check(&with_b).await, Err(Refusal::UnknownKey));
    // The issuer publishes b and retires a.
    *f.published.keys.lock().unwrap() = vec![b.jwk()];
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(f.check(&with_b).await, Ok(()));
    // A token signed by the retired key is refused now, even one validated before.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let with_a = f.a.sign(&f.with(json!({"jti": "new"})));
    assert_eq!(f.check(&with_a).await, Err(Refusal::UnknownKey));
}

#[tokio::test]
async fn an_unreachable_issuer_is_unavailable_not_unauthorized() {
    let spec = Auth {
        issuer: "http://127.0.0.1:9".into(),
        ..Auth::default()
    };
    let auth =
        Authenticator::new(&spec, Some(RESOURCE), vec![], None, KeySettings::default()).unwrap();
    let token = SigningKey::rsa("a", RSA_A)
        .sign(&json!({"iss": "http://127.0.0.1:9", "aud": RESOURCE, "exp": now() + 60}));
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    let refusal = auth.authenticate(&headers, None).await.unwrap_err();
    assert_eq!(refusal, Refusal::Unavailable);
    assert_eq!(refusal.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[test]
fn plain_http_issuers_only_on_loopback() {
    let spec = Auth {
        issuer: "http://idp.example.com".into(),
        ..Auth::default()
    };
    let err = Authenticator::new(&spec, Some(RESOURCE), vec![], None, KeySettings::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("spec.auth.issuer"), "{err}");
    let no_url = Authenticator::new(
        &Auth {
            issuer: "https://idp.example.com".into(),
            ..Auth::default()
        },
        None,
        vec![],
        None,
        KeySettings::default(),
    );
    assert!(no_url.err().unwrap().to_string().contains("--public-url"));
}
