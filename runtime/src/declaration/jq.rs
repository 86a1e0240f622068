//! jq programs (by jaq) that map an upstream's JSON body to a result: compiled once at load,
//! run per response. Filters that read the environment, further inputs or print to stderr
//! (`env`, `$ENV`, `input`, `debug`, `stderr`, ...) are not available, and `halt` is an error
//! (jaq's own helper would exit the process). Pure.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::Value;

type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// Native filters left out: they see the process environment, read further inputs or write to
/// stderr.
const DENIED: &[&str] = &[
    "env",
    "input",
    "inputs",
    "debug",
    "stderr",
    "input_filename",
    "$__loc__",
];

/// A compiled jq program.
pub struct JqProgram {
    filter: Filter,
}

impl std::fmt::Debug for JqProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JqProgram")
    }
}

impl JqProgram {
    /// Compiles `source`; the error says what is wrong, and where.
    pub fn compile(source: &str) -> Result<Self, String> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs())
            .filter(|(name, _, _)| !DENIED.contains(name));
        let loader = Loader::new(defs);
        let arena = Arena::default();
        let program = File {
            code: source,
            path: (),
        };
        let modules = loader.load(&arena, program).map_err(|errors| {
            let mut messages = Vec::new();
            for (_, error) in errors {
                match error {
                    jaq_core::load::Error::Io(items) => {
                        messages.extend(items.into_iter().map(|(_, message)| message));
                    }
                    jaq_core::load::Error::Lex(items) => messages.extend(
                        items
                            .into_iter()
                            .map(|(expect, at)| describe(expect.as_str(), source, at)),
                    ),
                    jaq_core::load::Error::Parse(items) => {
                        messages.extend(
                            items
                                .into_iter()
                                .map(|(expect, at)| describe(expect.as_str(), source, at)),
                        );
                    }
                }
            }
            format!("invalid jq program: {}", messages.join("; "))
        })?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errors| {
                let names: Vec<String> = errors
                    .into_iter()
                    .flat_map(|(_, undefined)| undefined)
                    .map(|(name, kind)| format!("undefined {} `{name}`", kind.as_str()))
                    .collect();
                format!("invalid jq program: {}", names.join("; "))
            })?;
        Ok(Self { filter })
    }

    /// Runs the program over a JSON document; it must produce exactly one value.
    pub fn run(&self, input: &[u8]) -> Result<Value, String> {
        // jaq's parser recurses without a limit: an upstream body nested deeply enough would
        // overflow the stack and abort the process. serde_json stops at 128 levels, so it vets
        // the body first.
        serde_json::from_slice::<Value>(input)
            .map_err(|err| format!("the upstream body is not JSON (or nests too deeply): {err}"))?;
        let input = jaq_json::read::parse_single(input)
            .map_err(|err| format!("the upstream body is not JSON: {err}"))?;
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        let mut outputs = self.filter.id.run((ctx, input)).take(2).map(|output| {
            output.map_err(|exn| match exn.get_err() {
                Ok(err) => format!("the jq program failed: {err}"),
                Err(_) => "the jq program called halt".to_owned(),
            })
        });
        let first = match outputs.next() {
            None => return Err("the jq program produced no value".into()),
            Some(result) => result?,
        };
        if outputs.next().is_some() {
            return Err(
                "the jq program produced more than one value (collect them with `[...]`)".into(),
            );
        }
        serde_json::from_str(&first.to_string())
            .map_err(|err| format!("the jq output is not JSON: {err}"))
    }
}

/// "expected X" with the offending text, shortened.
fn describe(expected: &str, source: &str, at: &str) -> String {
    let found: String = at.chars().take(20).collect();
    let offset = (at.as_ptr() as usize).saturating_sub(source.as_ptr() as usize);
    if found.is_empty() {
        format!("expected {expected} at the end")
    } else {
        format!("expected {expected} at offset {offset} (`{found}`)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_bodies_nested_too_deeply_instead_of_crashing() {
        let program = JqProgram::compile(".").unwrap();
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let err = program.run(deep.as_bytes()).unwrap_err();
        assert!(err.contains("nests too deeply"), "{err}");
        assert_eq!(program.run(b"[[1]]").unwrap(), json!([[1]]));
    }

    #[test]
    fn extracts_values() {
        let program =
            JqProgram::compile("{titles: [.slides[].title], n: (.slides | length)}").unwrap();
        let out = program
            .run(br#"{"slides": [{"title": "a"}, {"title": "b"}]}"#)
            .unwrap();
        assert_eq!(out, json!({"titles": ["a", "b"], "n": 2}));
    }

    #[test]
    fn reports_syntax_errors_and_unknown_filters() {
        let err = JqProgram::compile(".items | map(").unwrap_err();
        assert!(err.starts_with("invalid jq program: expected"), "{err}");
        let err = JqProgram::compile(".items | frobnicate").unwrap_err();
        assert!(err.contains("undefined filter `frobnicate`"), "{err}");
    }

    #[test]
    fn the_environment_is_out_of_reach() {
        assert!(JqProgram::compile("env").is_err());
        assert!(JqProgram::compile("$ENV").is_err());
        let halt = JqProgram::compile("halt").unwrap();
        assert_eq!(halt.run(b"1").unwrap_err(), "the jq program called halt");
    }

    #[test]
    fn needs_exactly_one_value_of_a_json_body() {
        let program = JqProgram::compile(".[]").unwrap();
        assert!(
            program
                .run(b"[1, 2]")
                .unwrap_err()
                .contains("more than one")
        );
        assert!(program.run(b"[]").unwrap_err().contains("no value"));
        assert!(program.run(b"{\"a\": ").unwrap_err().contains("not JSON"));
    }
}
