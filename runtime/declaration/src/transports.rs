//! A set of transports ([`Transport`]): what `--transports` and `spec.transports` each allow,
//! and what is served, which is what both allow. Parsing the flag's list lives here so the
//! command line and the declaration spell the names alike. Pure.

use crate::types::Transport;

/// Transports a server answers on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transports {
    modern: bool,
    streamable: bool,
    sse: bool,
}

impl Default for Transports {
    /// All three.
    fn default() -> Self {
        Self::of(&Transport::ALL)
    }
}

impl Transports {
    /// The set of `list`.
    pub fn of(list: &[Transport]) -> Self {
        Self {
            modern: list.contains(&Transport::Modern),
            streamable: list.contains(&Transport::Streamable),
            sse: list.contains(&Transport::Sse),
        }
    }

    /// Parses a comma-separated list such as `modern,streamable` (the `--transports` flag).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut named = Vec::new();
        for name in list.split(',').map(str::trim) {
            let Some(transport) = Transport::ALL.into_iter().find(|t| t.name() == name) else {
                return Err(format!(
                    "unknown transport `{name}`: the transports are modern, streamable and sse"
                ));
            };
            if named.contains(&transport) {
                return Err(format!("transport `{name}` is listed twice"));
            }
            named.push(transport);
        }
        Ok(Self::of(&named))
    }

    /// Whether `transport` is in the set.
    pub fn serves(self, transport: Transport) -> bool {
        match transport {
            Transport::Modern => self.modern,
            Transport::Streamable => self.streamable,
            Transport::Sse => self.sse,
        }
    }

    /// What both sets allow.
    pub fn and(self, other: Self) -> Self {
        Self {
            modern: self.modern && other.modern,
            streamable: self.streamable && other.streamable,
            sse: self.sse && other.sse,
        }
    }

    /// Whether the set is empty (nothing would be served).
    pub fn is_empty(self) -> bool {
        !(self.modern || self.streamable || self.sse)
    }

    /// The names in the set, comma-separated (`modern,sse`).
    pub fn names(self) -> String {
        Transport::ALL
            .into_iter()
            .filter(|t| self.serves(*t))
            .map(Transport::name)
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_list_parses_into_a_set() {
        assert_eq!(
            Transports::parse("modern,streamable,sse"),
            Ok(Transports::default())
        );
        let modern = Transports::parse("modern").unwrap();
        assert!(modern.serves(Transport::Modern) && !modern.serves(Transport::Sse));
        assert_eq!(
            Transports::parse(" sse , modern ").unwrap().names(),
            "modern,sse"
        );
        assert!(
            Transports::parse("modern,http")
                .unwrap_err()
                .contains("`http`")
        );
        assert!(Transports::parse("sse,sse").unwrap_err().contains("twice"));
        assert!(Transports::parse("").is_err());
    }

    #[test]
    fn what_is_served_is_what_both_allow() {
        let flag = Transports::parse("modern,streamable").unwrap();
        let spec = Transports::of(&[Transport::Streamable, Transport::Sse]);
        assert_eq!(flag.and(spec).names(), "streamable");
        assert!(
            Transports::parse("sse")
                .unwrap()
                .and(Transports::parse("modern").unwrap())
                .is_empty()
        );
    }
}
