//! The `spec.views` view a request came through, resolved once against the declaration that
//! serves it: which items it may reach (`Request::from_message` answers an item outside it as
//! undeclared; lists leave it out) and the scopes it adds (`authorize.rs`). Which view a request
//! came through is the transport's to say (by its path). Pure.

use mcp_declaration::{Compiled, CompiledView, UriItem};

/// The view of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewRef {
    /// No view: the whole server.
    All,
    /// A view (index into `Compiled::views`).
    View(usize),
    /// A view the served declaration no longer has (a reload removed it between routing and
    /// serving): nothing is reachable through it.
    Gone,
}

impl ViewRef {
    /// `name` resolved against `decl` (`None`: no view).
    pub fn resolve(decl: &Compiled, name: Option<&str>) -> Self {
        match name {
            None => Self::All,
            Some(name) => decl
                .views
                .all()
                .iter()
                .position(|view| view.name == name)
                .map_or(Self::Gone, Self::View),
        }
    }

    /// The compiled view, if any.
    pub fn view(self, decl: &Compiled) -> Option<&CompiledView> {
        match self {
            Self::View(i) => decl.views.all().get(i),
            Self::All | Self::Gone => None,
        }
    }

    /// Whether the view publishes the tool at index `i`.
    pub fn tool(self, decl: &Compiled, i: usize) -> bool {
        self.test(decl, |view| view.tools.contains(i))
    }

    /// Whether the view publishes the fixed resource at index `i`.
    pub fn resource(self, decl: &Compiled, i: usize) -> bool {
        self.test(decl, |view| view.resources.contains(i))
    }

    /// Whether the view publishes the resource template at index `i`.
    pub fn template(self, decl: &Compiled, i: usize) -> bool {
        self.test(decl, |view| view.resource_templates.contains(i))
    }

    /// Whether the view publishes the prompt at index `i`.
    pub fn prompt(self, decl: &Compiled, i: usize) -> bool {
        self.test(decl, |view| view.prompts.contains(i))
    }

    /// Whether the view publishes the item serving a resolved URI.
    pub fn uri(self, decl: &Compiled, item: &UriItem) -> bool {
        match item {
            UriItem::Resource(i) => self.resource(decl, *i),
            UriItem::Template(i, _) => self.template(decl, *i),
        }
    }

    /// The view's name, for audit lines and traces.
    pub fn name(self, decl: &Compiled) -> Option<&str> {
        self.view(decl).map(|view| view.name.as_str())
    }

    fn test(self, decl: &Compiled, contains: impl Fn(&CompiledView) -> bool) -> bool {
        match self {
            Self::All => true,
            Self::Gone => false,
            Self::View(_) => self.view(decl).is_some_and(contains),
        }
    }
}
