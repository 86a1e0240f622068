//! `--split-by-tag`: the imported declaration cut into objects a cluster can store. The server
//! keeps everything server-level and includes, by label, one `MCPToolSet` per tag holding the
//! items of the operations whose first tag it is, with only the shared schemas those items
//! reach (so each set stands alone). A tag too big for one object is cut into parts. Pure: the
//! caller writes the files.

use super::ImportError;
use super::shared::reached;
use super::summary::one_line;
use mcp_declaration::{
    API_VERSION, Declaration, Include, LabelSelector, Resource, ResourceTemplate, TOOLSET_KIND,
    Tool, ToolSetSpec,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Largest object written, in bytes of YAML: etcd stores objects up to about 1.5 MiB, and
/// `kubectl apply` and the API server's own fields need some of that.
pub const MAX_OBJECT_BYTES: usize = 1_000_000;

/// Most tools, resources and resource templates one set holds: the CRD bounds each list (the
/// operator's `LIST_LIMITS`) so that the API server can afford its CEL rules.
const LIST_LIMITS: [usize; 3] = [256, 512, 256];

/// The label every set carries, whose value is the server's name: what `spec.include` selects.
pub const API_LABEL: &str = "api";

/// The file of the server, which no set's file may take.
pub const SERVER_FILE: &str = "server.yaml";

/// What the importer calls the set of the operations without a tag.
const UNTAGGED: &str = "untagged";

/// Longest tag part of a set's name, so that `<server>-<tag>-<part>` stays short.
const MAX_TAG_CHARS: usize = 40;

/// The tag (first tag) of each emitted item, parallel to the declaration's lists.
pub(super) type Tags = [Vec<Option<String>>; 3];

/// One `MCPToolSet` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetFile {
    /// The file name in the directory, such as `pets.yaml`.
    pub file: String,
    /// `metadata.name`.
    pub name: String,
    /// The tag whose items it holds (`None`: the operations without a tag).
    pub tag: Option<String>,
    /// Tools it holds.
    pub tools: usize,
    /// Resources and resource templates it holds.
    pub resources: usize,
    /// The file's text.
    pub yaml: String,
}

/// The items of one tag, in import order.
#[derive(Default)]
struct Group<'a> {
    tools: Vec<&'a Tool>,
    resources: Vec<&'a Resource>,
    templates: Vec<&'a ResourceTemplate>,
}

/// The sets of `declaration`'s items; `converted` holds every shared schema the import made.
pub(super) fn sets(
    server: &str,
    declaration: &Declaration,
    tags: &Tags,
    converted: &Map<String, Value>,
) -> Result<Vec<SetFile>, ImportError> {
    // Real tags in name order, then the operations without one: the importer's own name never
    // takes a real tag's.
    let mut groups: BTreeMap<(bool, &str), Group> = BTreeMap::new();
    fn key(tag: &Option<String>) -> (bool, &str) {
        match tag {
            Some(tag) => (false, tag.as_str()),
            None => (true, UNTAGGED),
        }
    }
    for (tool, tag) in declaration.tools.iter().zip(&tags[0]) {
        groups.entry(key(tag)).or_default().tools.push(tool);
    }
    for (resource, tag) in declaration.resources.iter().zip(&tags[1]) {
        groups.entry(key(tag)).or_default().resources.push(resource);
    }
    for (template, tag) in declaration.resource_templates.iter().zip(&tags[2]) {
        groups.entry(key(tag)).or_default().templates.push(template);
    }
    let mut taken: BTreeSet<String> = BTreeSet::from([file_stem(SERVER_FILE).to_owned()]);
    let mut files = Vec::new();
    for ((untagged, tag), group) in groups {
        let tag = (!untagged).then(|| tag.to_owned());
        let base = slug(tag.as_deref().unwrap_or(UNTAGGED));
        files.extend(parts(server, &base, tag, &group, converted, &mut taken)?);
    }
    Ok(files)
}

/// The set files of one tag: as few parts as keep every list within its limit and every file
/// within [`MAX_OBJECT_BYTES`], each part a run of the tag's items in import order.
fn parts(
    server: &str,
    base: &str,
    tag: Option<String>,
    group: &Group,
    converted: &Map<String, Value>,
    taken: &mut BTreeSet<String>,
) -> Result<Vec<SetFile>, ImportError> {
    let lengths = [
        group.tools.len(),
        group.resources.len(),
        group.templates.len(),
    ];
    let mut count = lengths
        .iter()
        .zip(LIST_LIMITS)
        .map(|(len, most)| len.div_ceil(most))
        .max()
        .unwrap_or(1)
        .max(1);
    let most_items = lengths.iter().copied().max().unwrap_or(0);
    loop {
        // Names are taken only once the parts are final, so a failed round takes none.
        let mut names = taken.clone();
        let mut files = Vec::new();
        for index in 0..count {
            let spec = group.part(index, count, converted);
            let part = (count > 1).then_some((index + 1, count));
            let wanted = match part {
                Some((number, _)) => format!("{base}-{number}"),
                None => base.to_owned(),
            };
            let stem = unique(&wanted, &mut names);
            let name = format!("{server}-{stem}");
            let yaml = set_yaml(&name, server, tag.as_deref(), part, &spec)?;
            files.push(SetFile {
                file: format!("{stem}.yaml"),
                name,
                tag: tag.clone(),
                tools: spec.tools.len(),
                resources: spec.resources.len() + spec.resource_templates.len(),
                yaml,
            });
        }
        match files.iter().find(|f| f.yaml.len() > MAX_OBJECT_BYTES) {
            // More parts each round, at least as many as the bytes need: they shrink evenly.
            Some(_) if count < most_items => {
                let bytes: usize = files.iter().map(|f| f.yaml.len()).sum();
                count = (count + 1)
                    .max(bytes.div_ceil(MAX_OBJECT_BYTES))
                    .min(most_items);
            }
            Some(big) => {
                return Err(ImportError::TooLarge {
                    set: big.name.clone(),
                    bytes: big.yaml.len(),
                });
            }
            None => {
                *taken = names;
                return Ok(files);
            }
        }
    }
}

impl Group<'_> {
    /// Part `index` of `count`: the same share of each list, and the schemas its tools reach.
    fn part(&self, index: usize, count: usize, converted: &Map<String, Value>) -> ToolSetSpec {
        // Even shares (sizes differ by one at most), so no part of the longest list is empty.
        fn share<T: Clone>(list: &[&T], index: usize, count: usize) -> Vec<T> {
            let at = |i: usize| i * list.len() / count;
            let items = &list[at(index)..at(index + 1)];
            items.iter().map(|item| (*item).clone()).collect()
        }
        let tools = share(&self.tools, index, count);
        let reach = Declaration {
            tools,
            ..Default::default()
        };
        let schemas = reached(&reach, converted);
        ToolSetSpec {
            schemas,
            tools: reach.tools,
            resources: share(&self.resources, index, count),
            resource_templates: share(&self.templates, index, count),
            prompts: Vec::new(),
        }
    }
}

/// `wanted`, or `wanted-2`, `wanted-3` ... whichever no other file took; then taken.
fn unique(wanted: &str, taken: &mut BTreeSet<String>) -> String {
    let mut stem = wanted.to_owned();
    let mut n = 2;
    while taken.contains(&stem) {
        stem = format!("{wanted}-{n}");
        n += 1;
    }
    taken.insert(stem.clone());
    stem
}

fn file_stem(file: &str) -> &str {
    file.strip_suffix(".yaml").unwrap_or(file)
}

/// A tag as part of a Kubernetes name and a file name: lower-case letters, digits and `-`.
fn slug(tag: &str) -> String {
    let mut out = String::new();
    for c in tag.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(c);
    }
    out.truncate(MAX_TAG_CHARS);
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "tag".into()
    } else {
        out.to_owned()
    }
}

/// One set's file: a comment saying what it holds, then the object.
fn set_yaml(
    name: &str,
    server: &str,
    tag: Option<&str>,
    part: Option<(usize, usize)>,
    spec: &ToolSetSpec,
) -> Result<String, ImportError> {
    let what = match tag {
        Some(tag) => format!("the operations tagged `{}` first", one_line(tag)),
        None => "the operations without a tag".to_owned(),
    };
    let part = part
        .map(|(i, n)| format!(", part {i} of {n}"))
        .unwrap_or_default();
    let document = json!({
        "apiVersion": API_VERSION,
        "kind": TOOLSET_KIND,
        "metadata": {"name": name, "labels": {API_LABEL: server}},
        "spec": spec,
    });
    let yaml =
        serde_yaml_ng::to_string(&document).map_err(|err| ImportError::Compile(err.to_string()))?;
    Ok(format!(
        "# Imported by mcp-runtime import openapi for MCPServer {server}: {what}{part}.\n{yaml}"
    ))
}

/// What the server includes: every set labelled with its name.
pub(super) fn include(server: &str) -> Include {
    Include {
        selector: Some(LabelSelector {
            match_labels: BTreeMap::from([(API_LABEL.to_owned(), server.to_owned())]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_name_parts_and_unique_stems_never_repeat() {
        assert_eq!(slug("Git Data / Refs"), "git-data-refs");
        assert_eq!(slug("日本"), "tag");
        assert_eq!(slug(&"a".repeat(100)).len(), MAX_TAG_CHARS);
        let mut taken = BTreeSet::from(["server".to_owned()]);
        assert_eq!(unique("server", &mut taken), "server-2");
        assert_eq!(unique("pets", &mut taken), "pets");
        assert_eq!(unique("pets", &mut taken), "pets-2");
        assert_eq!(unique("pets", &mut taken), "pets-3");
    }
}
