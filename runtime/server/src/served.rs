//! What a replica serves: a compiled declaration and the live parts of its HTTP backends, loaded
//! together and swapped together on reload, so a request never pairs one declaration with
//! another's clients. Pure, apart from building the clients.

use crate::backends::http::{BuildError, Upstreams};
use mcp_declaration::Compiled;
use std::ops::Deref;

/// A declaration ready to serve.
#[derive(Debug)]
pub struct Served {
    /// The declaration.
    pub declaration: Compiled,
    /// Its HTTP backends' clients and concurrency limits.
    pub upstreams: Upstreams,
}

impl Served {
    /// Builds the live parts of `declaration`.
    pub fn new(declaration: Compiled) -> Result<Self, BuildError> {
        let upstreams = Upstreams::build(&declaration)?;
        Ok(Self {
            declaration,
            upstreams,
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
