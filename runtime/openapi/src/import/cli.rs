//! Command-line flags of `mcp-runtime import openapi` and the command itself: reads the spec,
//! prints the manifest on stdout (or writes the server and its sets into the `--split-by-tag`
//! directory) and the summary on stderr. Does I/O.

use super::{Documents, ImportOptions, Imported, SERVER_FILE, import_openapi};
use clap::{Args, Subcommand};
use mcp_declaration::SecretKeyRef;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to import from.
#[derive(Subcommand)]
pub enum ImportCommand {
    /// Print an MCPServer manifest with one tool per selected operation of an OpenAPI 3.0/3.1
    /// or Swagger 2.0 description (read-only by default: GET and HEAD; see --methods). The
    /// manifest is compiled before it is printed; what cannot be imported is listed, with the
    /// reason, in comments atop it and on stderr. With --split-by-tag DIR, the manifest is
    /// written as a server and one MCPToolSet per tag, each small enough for a cluster.
    Openapi(Box<ImportArgs>),
}

/// Flags of `import openapi`.
#[derive(Args)]
pub struct ImportArgs {
    /// The spec: a YAML or JSON file (relative `$ref`s are read from its directory), or `-` for
    /// stdin. URLs are not fetched: download the spec first.
    #[arg(value_name = "SPEC")]
    spec: PathBuf,
    /// metadata.name of the MCPServer (default: from info.title).
    #[arg(long)]
    name: Option<String>,
    /// Base URL of the API (required when the spec's server URL is relative or has
    /// variables); its scheme, host and port are fixed in every tool.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Import only operations with one of these tags (repeatable, or comma-separated).
    #[arg(long = "include-tag", value_name = "TAG", value_delimiter = ',')]
    include_tags: Vec<String>,
    /// Leave out operations with one of these tags (repeatable, or comma-separated).
    #[arg(long = "exclude-tag", value_name = "TAG", value_delimiter = ',')]
    exclude_tags: Vec<String>,
    /// Import only operations whose path matches one of these globs (`*` matches anything,
    /// `/` included; repeatable, or comma-separated).
    #[arg(long = "include-path", value_name = "GLOB", value_delimiter = ',')]
    include_paths: Vec<String>,
    /// Leave out operations whose path matches one of these globs (repeatable, or
    /// comma-separated).
    #[arg(long = "exclude-path", value_name = "GLOB", value_delimiter = ',')]
    exclude_paths: Vec<String>,
    /// Import only the operations with these operationIds (repeatable, or comma-separated),
    /// whatever their method unless --methods is given.
    #[arg(
        long = "operation",
        alias = "include-operation",
        value_name = "ID",
        value_delimiter = ','
    )]
    include_operations: Vec<String>,
    /// Leave out the operations with these operationIds (repeatable, or comma-separated).
    #[arg(long = "exclude-operation", value_name = "ID", value_delimiter = ',')]
    exclude_operations: Vec<String>,
    /// Import only operations of these methods: GET, HEAD, POST, PUT, PATCH, DELETE, or `all`
    /// (comma-separated, any case; repeatable). Default: GET,HEAD (read-only), or all methods
    /// when --operation names the operations.
    #[arg(
        long,
        value_name = "METHODS",
        value_delimiter = ',',
        value_parser = super::parse_methods
    )]
    methods: Vec<&'static [&'static str]>,
    /// Most tools and resources emitted; later operations are skipped.
    #[arg(long, value_name = "N")]
    max_tools: Option<usize>,
    /// Send security scheme SCHEME's credential from key KEY of Secret NAME (repeatable):
    /// `--secret bearerAuth=github-token/token`.
    #[arg(long = "secret", value_name = "SCHEME=NAME/KEY", value_parser = parse_secret)]
    secrets: Vec<(String, SecretKeyRef)>,
    /// Parameterless GETs become resources and GETs with only path parameters resource
    /// templates, instead of tools.
    #[arg(long)]
    resources: bool,
    /// Fail if any selected operation cannot be imported.
    #[arg(long)]
    strict: bool,
    /// Write into DIR (created if missing; refused unless empty) instead of stdout:
    /// server.yaml, the MCPServer without tools and shared schemas, which includes every
    /// MCPToolSet labelled `api: <name>`, and one such set per tag (TAG.yaml, the tag in lower
    /// case with `-` for other characters; operations without a tag in untagged.yaml) holding the tools of the operations whose first tag it is and
    /// the shared schemas they use. A tag is cut into TAG-1.yaml, TAG-2.yaml ... where it has
    /// more than 256 tools or would exceed 1,000,000 bytes; an object that still would is an
    /// error, and nothing is written. Apply them all (`kubectl apply --server-side -f DIR`) or
    /// serve them locally (`mcp-runtime serve --manifest DIR`).
    #[arg(long, value_name = "DIR")]
    split_by_tag: Option<PathBuf>,
}

fn parse_secret(text: &str) -> Result<(String, SecretKeyRef), String> {
    let (scheme, reference) = text.split_once('=').ok_or("expected SCHEME=NAME/KEY")?;
    let (name, key) = reference
        .split_once('/')
        .ok_or("expected SCHEME=NAME/KEY")?;
    if scheme.is_empty() || name.is_empty() || key.is_empty() {
        return Err("expected SCHEME=NAME/KEY".into());
    }
    let reference = SecretKeyRef {
        name: name.into(),
        key: key.into(),
    };
    mcp_declaration::secret_path(std::path::Path::new("/"), &reference)?;
    Ok((scheme.into(), reference))
}

/// Runs `import`: the manifest on stdout, the summary on stderr.
pub fn run_cli(command: ImportCommand) -> ExitCode {
    let ImportCommand::Openapi(args) = command;
    let args = *args;
    let spec_text = args.spec.to_string_lossy();
    if spec_text.starts_with("http://") || spec_text.starts_with("https://") {
        eprintln!(
            "error: SPEC must be a file or `-`: URLs are not fetched (download the spec first)"
        );
        return ExitCode::FAILURE;
    }
    let options = ImportOptions {
        name: args.name,
        base_url: args.base_url,
        include_tags: args.include_tags,
        exclude_tags: args.exclude_tags,
        include_paths: args.include_paths,
        exclude_paths: args.exclude_paths,
        include_operations: args.include_operations,
        exclude_operations: args.exclude_operations,
        methods: (!args.methods.is_empty()).then(|| {
            let chosen: Vec<&'static str> = args.methods.concat();
            super::IMPORTABLE_METHODS
                .iter()
                .copied()
                .filter(|m| chosen.contains(m))
                .collect()
        }),
        max_tools: args.max_tools,
        secrets: args.secrets,
        resources: args.resources,
        strict: args.strict,
        split_by_tag: args.split_by_tag.is_some(),
    };
    // Refused before the import, which can take a while on a large spec.
    if let Some(dir) = &args.split_by_tag
        && let Err(err) = usable_dir(dir)
    {
        eprintln!("error: --split-by-tag {}: {err}", dir.display());
        return ExitCode::FAILURE;
    }
    let imported = Documents::read(&args.spec).and_then(|docs| import_openapi(&docs, &options));
    match (imported, &args.split_by_tag) {
        (Ok(imported), Some(dir)) => match write_split(dir, &imported) {
            Ok(()) => {
                eprintln!("{}", imported.summary.line());
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: --split-by-tag {}: {err}", dir.display());
                ExitCode::FAILURE
            }
        },
        (Ok(imported), None) => {
            eprintln!("{}", imported.summary.line());
            let mut stdout = std::io::stdout().lock();
            if let Err(err) = stdout
                .write_all(imported.yaml.as_bytes())
                .and_then(|()| stdout.flush())
            {
                eprintln!("error: cannot write the manifest: {err}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        (Err(err), _) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `dir` may be written: missing, or an empty directory (files of an earlier import
/// are not overwritten: a set that import had and this one lacks would stay behind).
fn usable_dir(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err("is not empty: remove it or name another directory".into()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err.to_string()),
    }
}

/// Writes the server and its sets into `dir`, listing each file on stderr. Everything was
/// computed and checked before the first file is written.
fn write_split(dir: &Path, imported: &Imported) -> Result<(), String> {
    usable_dir(dir)?;
    std::fs::create_dir_all(dir).map_err(|err| err.to_string())?;
    let what = format!("MCPServer including {} sets", imported.sets.len());
    let server = (SERVER_FILE, &imported.yaml, what);
    let sets = imported.sets.iter().map(|set| {
        let what = format!("MCPToolSet {}, {} tools", set.name, set.tools);
        (set.file.as_str(), &set.yaml, what)
    });
    for (file, yaml, what) in std::iter::once(server).chain(sets) {
        let path = dir.join(file);
        std::fs::write(&path, yaml).map_err(|err| format!("cannot write {file}: {err}"))?;
        eprintln!("{}: {what}, {} bytes", path.display(), yaml.len());
    }
    Ok(())
}
