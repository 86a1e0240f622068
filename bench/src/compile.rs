//! `mcp-bench-compile MANIFEST [--rounds N]`: parses and compiles a manifest with the runtime's
//! own compiler (`mcp_declaration::compile`, the same call `mcp-runtime serve` and the operator
//! make), `--rounds` times in this process, and prints one JSON line: the tool count, the
//! manifest's bytes, and the median and minimum wall time of parsing and of compiling, in
//! milliseconds. Under callgrind (`--rounds 1`) the instructions of the whole process, less those
//! of a one-tool manifest, are what parsing and compiling the tools take
//! (`bench/declaration-scale.sh`). Reads one file.

use mcp_declaration::{CompileOptions, compile, parse_manifest};
use std::path::PathBuf;
use std::time::Instant;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut rounds = 5_usize;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("--rounds needs a number"))?
                    .parse()?;
            }
            _ if file.is_none() => file = Some(PathBuf::from(arg)),
            _ => anyhow::bail!("usage: mcp-bench-compile MANIFEST [--rounds N]"),
        }
    }
    let file = file.ok_or_else(|| anyhow::anyhow!("usage: mcp-bench-compile MANIFEST"))?;
    anyhow::ensure!((1..=100).contains(&rounds), "--rounds is 1 to 100");
    let text = std::fs::read_to_string(&file)?;
    let base = file.parent().map(PathBuf::from).unwrap_or_default();
    let options = CompileOptions::default();
    let (mut parse_ms, mut compile_ms) = (Vec::new(), Vec::new());
    let mut tools = 0;
    for _ in 0..rounds {
        let started = Instant::now();
        let manifest = parse_manifest(&text, base.clone())?;
        let parsed = Instant::now();
        let compiled = compile(&manifest, &options)?;
        let done = Instant::now();
        tools = compiled.tools.len();
        parse_ms.push((parsed - started).as_secs_f64() * 1000.0);
        compile_ms.push((done - parsed).as_secs_f64() * 1000.0);
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let line = serde_json::json!({
        "tools": tools,
        "bytes": text.len(),
        "rounds": rounds,
        "parse_ms": median(&mut parse_ms.clone()),
        "parse_ms_min": min(&parse_ms),
        "compile_ms": median(&mut compile_ms.clone()),
        "compile_ms_min": min(&compile_ms),
    });
    println!("{line}");
    Ok(())
}
