//! jq programs (by jaq) that map an upstream's JSON body to a result: compiled once at load,
//! run per response. Filters that read the environment, further inputs or print to stderr
//! (`env`, `$ENV`, `input`, `debug`, `stderr`, ...) are not available, and `halt` is an error
//! (jaq's own helper would exit the process). Each run lives on its own thread under a step,
//! stack-depth, built-bytes and output budget and stops when its call ends (see `budget`); the
//! program is rewritten so that what one step builds is weighed first (`rewrite`, `built`).
//! Pure.

mod budget;
mod built;
mod rewrite;

use budget::{Budgeted, MAX_STEPS, Stop};
use jaq_core::load::parse::Def;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use serde_json::Value;
use std::sync::atomic::AtomicBool;

type Filter = jaq_core::Filter<Budgeted>;

/// Largest output (as JSON text) a run may produce.
pub(crate) const MAX_OUTPUT_BYTES: usize = 4 << 20;
/// Deepest output a run may produce (what the JSON parser of the reply accepts).
const MAX_OUTPUT_DEPTH: usize = 128;

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

/// Definitions that replace native generators which would loop without ever reaching the
/// step meter (`range(0; 1e12)` counts in native code): the same values, one metered step each.
/// `range/1` and `range/2` are defined again too: jaq's own call the native one.
const METERED_DEFS: &str = "def range($from; $upto; $by): $from | \
    while(if $by < 0 then . > $upto else . < $upto end; . + $by); \
    def range($from; $upto): range($from; $upto; 1); def range($upto): range(0; $upto);";

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
        // Loaded once as written, for its errors (with their places in the source)...
        let arena = Arena::default();
        let program = File {
            code: source,
            path: (),
        };
        Loader::new(standard_defs().map(shorter))
            .load(&arena, program)
            .map_err(|errors| load_errors(errors, source))?;
        // ...then compiled rewritten, as the body of a definition the program calls.
        let body = jaq_core::load::parse(source, |p| p.term())
            .ok_or_else(|| "invalid jq program: modules are not available".to_owned())?;
        let main = Def {
            name: MAIN,
            args: Vec::new(),
            body: rewrite::term(body),
        };
        let defs = rewrite::defs(standard_defs().map(shorter).chain([main]));
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs())
            .filter(|(name, _, _)| !DENIED.contains(name))
            .map(|(name, arity, native)| match name {
                "tojson" => ("__tojson", arity, native),
                _ => (name, arity, native),
            })
            .chain(built::funs());
        let arena = Arena::default();
        let modules = Loader::new(defs)
            .load(
                &arena,
                File {
                    code: MAIN,
                    path: (),
                },
            )
            .map_err(|errors| load_errors(errors, MAIN))?;
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

    /// Runs the program over a JSON document; it must produce exactly one value. The run stops
    /// with an error when it exceeds its budget or when `cancel` is set (its call ended).
    pub fn run(&self, input: &[u8], cancel: &AtomicBool) -> Result<Value, String> {
        self.run_with(input, cancel, MAX_STEPS)
    }

    fn run_with(&self, input: &[u8], cancel: &AtomicBool, steps: u64) -> Result<Value, String> {
        // jaq's parser recurses without a limit: an upstream body nested deeply enough would
        // overflow the stack and abort the process. serde_json stops at 128 levels, so it vets
        // the body first.
        serde_json::from_slice::<Value>(input)
            .map_err(|err| format!("the upstream body is not JSON (or nests too deeply): {err}"))?;
        let input = jaq_json::read::parse_single(input)
            .map_err(|err| format!("the upstream body is not JSON: {err}"))?;
        let filter = &self.filter;
        let text = budget::run_metered(&filter.lut, steps, cancel, move |data| {
            let ctx = Ctx::<Budgeted>::new(data, Vars::new([]));
            let mut outputs = filter.id.run((ctx, input)).take(2).map(|output| {
                output.map_err(|exn| match exn.get_err() {
                    Ok(err) => format!("the jq program failed: {err}"),
                    Err(_) => "the jq program called halt".to_owned(),
                })
            });
            let first = match outputs.next() {
                None => return Err("the jq program produced no value".to_owned()),
                Some(result) => result?,
            };
            if outputs.next().is_some() {
                return Err(
                    "the jq program produced more than one value (collect them with `[...]`)"
                        .into(),
                );
            }
            // Printing recurses: refuse what the reply's JSON parser would refuse anyway.
            if budget::depth(&first) > MAX_OUTPUT_DEPTH {
                return Err("the jq output nests too deeply".into());
            }
            let text = first.to_string();
            if text.len() > MAX_OUTPUT_BYTES {
                return Err(format!(
                    "the jq output is larger than {} MiB",
                    MAX_OUTPUT_BYTES >> 20
                ));
            }
            Ok(text)
        })
        .map_err(|stop: Stop| stop.to_string())??;
        serde_json::from_str(&text).map_err(|err| format!("the jq output is not JSON: {err}"))
    }
}

/// The name the rewritten program is defined under.
const MAIN: &str = "__kube_mcp_main";

/// The definitions a program sees: jaq's, with the weighed `tojson` first (those after it call
/// it) and the metered `range` last (it replaces jaq's).
fn standard_defs() -> impl Iterator<Item = Def<&'static str>> {
    let parse = |defs| jaq_core::load::parse(defs, |p| p.defs()).unwrap_or_default();
    parse(built::DEFS)
        .into_iter()
        .chain(jaq_core::defs())
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .chain(parse(METERED_DEFS))
}

/// `def`, as living only as long as a program's source (to chain it with the program).
fn shorter<'s>(def: Def<&'static str>) -> Def<&'s str> {
    def
}

/// The loader's errors as one message.
fn load_errors(errors: jaq_core::load::Errors<&str, ()>, source: &str) -> String {
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
            jaq_core::load::Error::Parse(items) => messages.extend(
                items
                    .into_iter()
                    .map(|(expect, at)| describe(expect.as_str(), source, at)),
            ),
        }
    }
    format!("invalid jq program: {}", messages.join("; "))
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

    static GO: AtomicBool = AtomicBool::new(false);

    #[test]
    fn refuses_bodies_nested_too_deeply_instead_of_crashing() {
        let program = JqProgram::compile(".").unwrap();
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let err = program.run(deep.as_bytes(), &GO).unwrap_err();
        assert!(err.contains("nests too deeply"), "{err}");
        assert_eq!(program.run(b"[[1]]", &GO).unwrap(), json!([[1]]));
    }

    #[test]
    fn extracts_values() {
        let program =
            JqProgram::compile("{titles: [.slides[].title], n: (.slides | length)}").unwrap();
        let out = program
            .run(br#"{"slides": [{"title": "a"}, {"title": "b"}]}"#, &GO)
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
        assert_eq!(
            halt.run(b"1", &GO).unwrap_err(),
            "the jq program called halt"
        );
    }

    #[test]
    fn needs_exactly_one_value_of_a_json_body() {
        let program = JqProgram::compile(".[]").unwrap();
        assert!(
            program
                .run(b"[1, 2]", &GO)
                .unwrap_err()
                .contains("more than one")
        );
        assert!(program.run(b"[]", &GO).unwrap_err().contains("no value"));
        assert!(
            program
                .run(b"{\"a\": ", &GO)
                .unwrap_err()
                .contains("not JSON")
        );
    }

    #[test]
    fn runaway_programs_stop_within_their_budget() {
        // Each of these ran forever, overflowed the stack or exhausted memory before.
        for source in [
            "def f: f; f",
            "def f: [f]; f",
            "def f: 1 + f; f",
            "[limit(100000000; repeat(1))] | length",
            "reduce range(100000000) as $i (0; . + $i)",
            "last(range(1e12))",
            "[range(0; 1e12; 3)] | length",
        ] {
            let program = JqProgram::compile(source).unwrap();
            let started = std::time::Instant::now();
            let err = program.run(b"null", &GO).unwrap_err();
            assert!(
                err.contains("step budget") || err.contains("recursed too deeply"),
                "{source}: {err}"
            );
            // The error shows the budget stopped it; this only guards against a hang (a debug
            // build on a loaded machine takes seconds here).
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "{source}"
            );
        }
    }

    #[test]
    fn metered_range_counts_as_jq_does() {
        let program = JqProgram::compile("[range(3), range(1; 3), range(5; 0; -2)]").unwrap();
        assert_eq!(
            program.run(b"null", &GO).unwrap(),
            json!([0, 1, 2, 1, 2, 5, 3, 1])
        );
    }

    #[test]
    fn a_cancelled_run_stops() {
        let program = JqProgram::compile("def f: f; f").unwrap();
        let cancel = AtomicBool::new(true);
        let err = program.run_with(b"null", &cancel, u64::MAX).unwrap_err();
        assert_eq!(err, "the jq program was stopped (its call ended)");
    }

    #[test]
    fn outputs_are_bounded() {
        let program = JqProgram::compile("\"x\" * 5000000").unwrap();
        assert!(
            program
                .run(b"null", &GO)
                .unwrap_err()
                .contains("larger than")
        );
        let program = JqProgram::compile("reduce range(200) as $i (0; [.])").unwrap();
        assert!(
            program
                .run(b"null", &GO)
                .unwrap_err()
                .contains("nests too deeply")
        );
        let program = JqProgram::compile("reduce range(100) as $i (0; [.]) | length").unwrap();
        assert_eq!(program.run(b"null", &GO).unwrap(), json!(1));
    }

    #[test]
    fn values_built_in_one_step_are_weighed_first() {
        // Each of these allocated gigabytes (or aborted the process) within a few steps.
        for source in [
            "\"x\" * 1e9",
            "\"x\" * 1000000000",
            "\"x\" * 1000000000000",
            "\"x\" | until(length > 1e9; . + .) | length",
            "[1] | until(length > 1e9; . + .) | length",
            "\"x\" | until(length > 1e9; \"\\(.)\\(.)\") | length",
            "(\"x\" * 1000000) as $s | [range(1000) | $s] | tojson | length",
            "(\"x\" * 1000000) as $s | [range(1000) | $s] | tostring | length",
            "(\"x\" * 1000000) as $s | [range(1000) | $s] | \"\\(.)\" | length",
            "(\"x\" * 1000000) as $s | [range(1000) | $s] | join(\",\") | length",
            "[range(100) | \"x\" * 1000000] | length",
            "{a: \"x\"} | until(.a | length > 1e9; .a += .a) | 1",
            "(\"<\" * 4000000) as $s | [range(10) | $s | @html] | length",
            "(\"x\" * 2000000) as $s | [range(10) | $s | explode] | length",
        ] {
            let program = JqProgram::compile(source).unwrap();
            let err = program.run(b"null", &GO).unwrap_err();
            assert!(err.contains("32 MiB of values"), "{source}: {err}");
        }
        // Copies of a large upstream array (2 MB of `[0,0,...]`, a million values).
        let zeros = format!("[{}0]", "0,".repeat(1_000_000));
        let program = JqProgram::compile(". as $a | [range(40) | $a | reverse] | length").unwrap();
        let err = program.run(zeros.as_bytes(), &GO).unwrap_err();
        assert!(err.contains("32 MiB of values"), "{err}");
    }

    #[test]
    fn weighed_operators_answer_as_before() {
        let program = JqProgram::compile(
            "[(1,2) + (10,20)], [(\"a\",\"b\") * (1,2)], ({a:{b:1}} * {a:{c:2}}), \
             (.x += 1 | .x), (.s *= 2 | .s), \"n=\\(1 + 1) \\([1])\", \
             ([range(10000) | tostring] | join(\"\") | length), \
             (reduce range(20000) as $i (\"\"; . + \"ab\") | length), @json \"\\(\"q\")\", \
             ([1,2] | tojson), (null + 1), ([1] + [2]), ({a:1} + {b:2}), \
             (\"<a>\" | @html), (\"ab\" | explode), ([3,1,2] | sort)",
        )
        .unwrap();
        let out = budget_outputs(&program, br#"{"x": 1, "s": "ab"}"#);
        assert_eq!(
            out,
            vec![
                json!([11, 21, 12, 22]),
                json!(["a", "aa", "b", "bb"]),
                json!({"a": {"b": 1, "c": 2}}),
                json!(2),
                json!("abab"),
                json!("n=2 [1]"),
                json!(38890),
                json!(40000),
                json!("\"q\""),
                json!("[1,2]"),
                json!(1),
                json!([1, 2]),
                json!({"a": 1, "b": 2}),
                json!("&lt;a&gt;"),
                json!([97, 98]),
                json!([1, 2, 3]),
            ]
        );
    }

    /// Every output of `program` over `input` (the public `run` wants exactly one).
    fn budget_outputs(program: &JqProgram, input: &[u8]) -> Vec<Value> {
        let input = jaq_json::read::parse_single(input).unwrap();
        let filter = &program.filter;
        budget::run_metered(&filter.lut, MAX_STEPS, &GO, move |data| {
            let ctx = Ctx::<Budgeted>::new(data, Vars::new([]));
            filter
                .id
                .run((ctx, input))
                .map(|out| serde_json::from_str(&out.unwrap().to_string()).unwrap())
                .collect()
        })
        .unwrap()
    }
}
