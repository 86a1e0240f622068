//! An issuer for the token tests: signs tokens with the fixture keys and serves its OpenID
//! metadata and key set on 127.0.0.1 (a real socket), counting key-set fetches. The key set can
//! be swapped while it runs (key rotation).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub const RSA_A: &str = include_str!("../fixtures/auth/rsa-a.pem");
pub const RSA_A_PUBLIC: &str = include_str!("../fixtures/auth/rsa-a.pub.pem");
pub const RSA_B: &str = include_str!("../fixtures/auth/rsa-b.pem");
pub const EC_C: &str = include_str!("../fixtures/auth/ec-c.pem");

/// A signing key and its id.
pub struct SigningKey {
    pub kid: &'static str,
    pub alg: Algorithm,
    pub key: EncodingKey,
}

impl SigningKey {
    pub fn rsa(kid: &'static str, pem: &str) -> Self {
        Self {
            kid,
            alg: Algorithm::RS256,
            key: EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
        }
    }

    pub fn ec(kid: &'static str, pem: &str) -> Self {
        Self {
            kid,
            alg: Algorithm::ES256,
            key: EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
        }
    }

    pub fn jwk(&self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.to_owned());
        jwk
    }

    /// A token with `claims`, signed by this key.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

#[derive(Default)]
pub struct Published {
    pub keys: Mutex<Vec<Jwk>>,
    pub fetches: AtomicUsize,
    pub issuer: Mutex<String>,
}

/// Serves `/.well-known/openid-configuration` and `/jwks`; returns the issuer URL.
pub async fn serve(published: Arc<Published>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    *published.issuer.lock().unwrap() = issuer.clone();
    let app = Router::new()
        .route("/.well-known/openid-configuration", get(configuration))
        .route("/jwks", get(jwks))
        .with_state(published);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    issuer
}

async fn configuration(State(published): State<Arc<Published>>) -> Json<Value> {
    let issuer = published.issuer.lock().unwrap().clone();
    Json(json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")}))
}

async fn jwks(State(published): State<Arc<Published>>) -> Json<JwkSet> {
    published.fetches.fetch_add(1, Ordering::SeqCst);
    Json(JwkSet {
        keys: published.keys.lock().unwrap().clone(),
    })
}
