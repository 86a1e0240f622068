//! What a replica serves: a compiled declaration and the live parts of its HTTP backends, loaded
//! together and swapped together on reload, so a request never pairs one declaration with
//! another's clients. Pure, apart from building the clients.

use crate::backends::http::{BuildError, Upstreams};
use crate::limits::Limiter;
use mcp_declaration::Compiled;
use std::ops::Deref;

/// A declaration ready to serve.
#[derive(Debug)]
pub struct Served {
    /// The declaration.
    pub declaration: Compiled,
    /// Its HTTP backends' clients and concurrency limits.
    pub upstreams: Upstreams,
    /// Its rate limits and quotas, counted from zero (a reload starts them afresh).
    pub limiter: Limiter,
}

impl Served {
    /// Builds the live parts of `declaration`.
    pub fn new(declaration: Compiled) -> Result<Self, BuildError> {
        let upstreams = Upstreams::build(&declaration)?;
        let tool_names: Vec<&str> = declaration
            .tools
            .iter()
            .map(|t| t.descriptor["name"].as_str().unwrap_or_default())
            .collect();
        let limiter = Limiter::new(&declaration.limits, &tool_names);
        Ok(Self {
            declaration,
            upstreams,
            limiter,
        })
    }
}

/// Everything but the HTTP calls only reads the declaration.
impl Deref for Served {
    type Target = Compiled;

    fn deref(&self) -> &Compiled {
        &self.declaration
    }
}
