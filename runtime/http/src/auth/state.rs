//! The authenticator of the declaration being served. `spec.auth` can change on reload, so the
//! authenticator is rebuilt when (and only when) the served `spec.auth`, the scopes it lists or
//! the `spec.views` (each a protected resource of its own) differ from the ones it was built for; the key cache survives every other reload. Reads the
//! introspection secret from the secrets directory when it builds (file I/O).

use super::{AuthConfigError, Authenticator, KeySettings};
use arc_swap::ArcSwapOption;
use mcp_declaration::{Auth, Compiled, CompiledViews, read_secret};
use std::path::PathBuf;
use std::sync::Arc;

/// Settings from the command line.
#[derive(Clone, Debug, Default)]
pub struct AuthSettings {
    /// `--public-url`: the canonical URL of this server (path prefix included).
    pub public_url: Option<String>,
    /// Where `secretKeyRef`s are read.
    pub secrets_dir: Option<PathBuf>,
    /// Key cache settings.
    pub keys: KeySettings,
}

struct Built {
    auth: Auth,
    scopes: Vec<String>,
    views: CompiledViews,
    authenticator: Arc<Authenticator>,
}

/// The current authenticator.
pub struct AuthState {
    settings: AuthSettings,
    built: ArcSwapOption<Built>,
}

impl AuthState {
    /// Nothing built yet.
    pub fn new(settings: AuthSettings) -> Self {
        Self {
            settings,
            built: ArcSwapOption::empty(),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// The authenticator for the `spec.auth` of `compiled` (none when it has none), built on
    /// first use and after `spec.auth`, the scopes it lists or its views changed.
    pub fn for_spec(
        &self,
        compiled: &Compiled,
    ) -> Result<Option<Arc<Authenticator>>, AuthConfigError> {
        let Some(auth) = compiled.auth.as_ref() else {
            return Ok(None);
        };
        let scopes = compiled.access.scopes.as_slice();
        if let Some(built) = self.built.load().as_ref()
            && built.auth == *auth
            && built.scopes == scopes
            && built.views == compiled.views
        {
            return Ok(Some(built.authenticator.clone()));
        }
        let secret = match (&auth.introspection, &self.settings.secrets_dir) {
            (Some(introspection), Some(dir)) => Some(
                read_secret(dir, &introspection.client_secret).map_err(|message| {
                    AuthConfigError::Field {
                        field: "introspection.clientSecret",
                        message,
                    }
                })?,
            ),
            _ => None,
        };
        let authenticator = Arc::new(
            Authenticator::new(
                auth,
                self.settings.public_url.as_deref(),
                scopes.to_vec(),
                secret,
                self.settings.keys.clone(),
            )?
            .with_views(compiled),
        );
        self.built.store(Some(Arc::new(Built {
            auth: auth.clone(),
            scopes: scopes.to_vec(),
            views: compiled.views.clone(),
            authenticator: authenticator.clone(),
        })));
        Ok(Some(authenticator))
    }
}
