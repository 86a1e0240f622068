//! The lexical index `search_tools` ranks tools with (discovery's search mode): BM25 over the
//! tokens of each tool's name, title and description, built once at compile time. No model and
//! no embeddings: the same declaration and query always give the same ranking, ties broken by
//! declaration order. Pure.

use serde_json::Value;
use std::collections::HashMap;

/// BM25's term-frequency saturation and length normalization, at their customary values.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// How much one occurrence counts in each field: a word of the name says more about what the
/// tool does than a word somewhere in a long description.
const NAME_WEIGHT: f64 = 3.0;
const TITLE_WEIGHT: f64 = 2.0;
const DESCRIPTION_WEIGHT: f64 = 1.0;

/// Tokens indexed per tool (name first, then title, then description): imported descriptions
/// can run to pages, and past this the tail barely moves a BM25 score but costs memory.
pub const MAX_TOOL_TOKENS: usize = 512;
/// Longest token kept, in bytes: longer runs are identifiers or encoded data, not words anyone
/// searches for.
const MAX_TOKEN_BYTES: usize = 64;
/// Query tokens used (the first ones): a query is a few keywords, and each token costs a
/// posting-list walk.
pub const MAX_QUERY_TOKENS: usize = 16;

/// The index: for each token, the tools it occurs in with its weighted frequency.
#[derive(Debug, Default)]
pub struct SearchIndex {
    postings: HashMap<Box<str>, Vec<(u32, f64)>>,
    /// Each tool's weighted length.
    lengths: Vec<f64>,
    average_length: f64,
}

impl SearchIndex {
    /// Indexes tools by their `tools/list` descriptors, in declaration order (the title is
    /// `title`, else `annotations.title`).
    pub fn build<'a>(descriptors: impl Iterator<Item = &'a Value>) -> Self {
        let mut index = Self::default();
        for (doc, descriptor) in descriptors.enumerate() {
            let text = |pointer: &str| descriptor.pointer(pointer).and_then(Value::as_str);
            let title = text("/title").or_else(|| text("/annotations/title"));
            let fields = [
                (text("/name"), NAME_WEIGHT),
                (title, TITLE_WEIGHT),
                (text("/description"), DESCRIPTION_WEIGHT),
            ];
            let mut counts: HashMap<String, f64> = HashMap::new();
            let mut length = 0.0;
            let weighted = fields.iter().flat_map(|(text, weight)| {
                tokens(text.unwrap_or_default()).map(move |token| (token, *weight))
            });
            for (token, weight) in weighted.take(MAX_TOOL_TOKENS) {
                *counts.entry(token).or_default() += weight;
                length += weight;
            }
            // Declarations hold far fewer than 2^32 tools (the API server's object limit).
            let doc = u32::try_from(doc).unwrap_or(u32::MAX);
            for (token, count) in counts {
                index
                    .postings
                    .entry(token.into_boxed_str())
                    .or_default()
                    .push((doc, count));
            }
            index.lengths.push(length);
        }
        let total: f64 = index.lengths.iter().sum();
        index.average_length = if index.lengths.is_empty() {
            0.0
        } else {
            total / index.lengths.len() as f64
        };
        index
    }

    /// Every tool matching at least one token of `query`, best first: `(tool index, score)`.
    /// Equal scores keep declaration order.
    pub fn search(&self, query: &str) -> Vec<(usize, f64)> {
        let mut terms: Vec<String> = Vec::new();
        for token in tokens(query) {
            if terms.len() == MAX_QUERY_TOKENS {
                break;
            }
            if !terms.contains(&token) {
                terms.push(token);
            }
        }
        let documents = self.lengths.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        // Terms in query order and postings in declaration order: every sum is added in the
        // same order on every run, so the scores (and the ranking) are bit-for-bit the same.
        for term in &terms {
            let Some(postings) = self.postings.get(term.as_str()) else {
                continue;
            };
            let frequency = postings.len() as f64;
            let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln();
            for &(doc, tf) in postings {
                let length = self.lengths[doc as usize];
                let norm = 1.0 - B + B * length / self.average_length.max(f64::MIN_POSITIVE);
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores
            .into_iter()
            .map(|(doc, score)| (doc as usize, score))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// The tokens of `text`: runs of letters and digits, split again where snake, kebab or camel
/// case joins words (`listCoreV1NamespacedPod` -> list, core, v1, namespaced, pod), lowercased,
/// common English words left out and suffixes stripped ([`stem`]).
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(camel_words)
        .filter(|word| !word.is_empty() && word.len() <= MAX_TOKEN_BYTES)
        .map(str::to_lowercase)
        .filter(|word| !STOP_WORDS.contains(&word.as_str()))
        .map(stem)
}

/// Words that say nothing about what a tool does: a query in words (`list pods in a namespace`)
/// would otherwise match every description that has them.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it",
    "its", "my", "of", "on", "or", "that", "the", "this", "to", "with",
];

/// Splits one alphanumeric run at case changes: before an upper-case letter that follows a
/// lower-case letter or a digit, and before the last capital of an acronym followed by a word
/// (`HTTPServer` -> HTTP, Server).
fn camel_words(run: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase()
            && ((prev.is_lowercase() || prev.is_numeric()) || (prev.is_uppercase() && next_lower));
        if boundary {
            words.push(&run[start..at]);
            start = at;
        }
    }
    words.push(&run[start..]);
    words
}

/// `word` with a light English suffix stripped, so that forms of one word meet: `pods` and
/// `pod`, `namespaced` and `namespaces` and `namespace`, `policies` and `policy`. A stem keeps at
/// least three letters, and `ss` stays (`address`, `class`). Not a full stemmer: what it conflates
/// wrongly only adds a weak match, and it stays predictable.
fn stem(word: String) -> String {
    if word.len() > 4
        && let Some(base) = word.strip_suffix("ies")
    {
        return format!("{base}y");
    }
    for suffix in ["ed", "es", "s", "e"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.len() >= 3
            && !(suffix == "s" && base.ends_with('s'))
        {
            return base.to_owned();
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(tools: &[Value]) -> SearchIndex {
        SearchIndex::build(tools.iter())
    }

    fn names(index: &SearchIndex, tools: &[Value], query: &str) -> Vec<String> {
        index
            .search(query)
            .into_iter()
            .map(|(i, _)| tools[i]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn splits_snake_kebab_and_camel_case_and_meets_word_forms() {
        let all: Vec<String> =
            tokens("listCoreV1NamespacedPod get_HTTPServer-status x.y").collect();
        let expected = [
            "list", "cor", "v1", "namespac", "pod", "get", "http", "server", "statu", "x", "y",
        ];
        assert_eq!(all, expected);
        let one = |text: &str| tokens(text).collect::<Vec<_>>();
        assert_eq!(one("Pods"), ["pod"]);
        assert_eq!(one("namespace namespaces namespaced"), ["namespac"; 3]);
        assert_eq!(one("policies policy"), ["policy"; 2]);
        assert_eq!(
            one("address addresses class"),
            ["address", "address", "class"]
        );
        assert_eq!(
            one("list the pods in a namespace"),
            ["list", "pod", "namespac"]
        );
    }

    #[test]
    fn ranks_the_name_above_a_mention_in_a_description() {
        let tools = [
            json!({"name": "get_node", "description": "Reads a node. Not for pods."}),
            json!({"name": "list_pods", "description": "Lists the pods of a namespace."}),
            json!({"name": "delete_pod", "title": "Delete pod"}),
            json!({"name": "get_weather", "description": "Forecast for a city."}),
        ];
        let idx = index(&tools);
        assert_eq!(
            names(&idx, &tools, "list pods"),
            ["list_pods", "delete_pod", "get_node"]
        );
        assert_eq!(names(&idx, &tools, "weather"), ["get_weather"]);
        assert!(idx.search("kubernetes").is_empty());
        assert!(idx.search("").is_empty());
        assert!(idx.search("  --  ").is_empty());
    }

    #[test]
    fn equal_scores_keep_declaration_order_on_every_run() {
        let tools: Vec<Value> = (0..50)
            .map(|i| json!({"name": format!("tool_{i:02}"), "description": "same words"}))
            .collect();
        let idx = index(&tools);
        let ranked = idx.search("same words");
        let order: Vec<usize> = ranked.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, (0..50).collect::<Vec<_>>());
        for _ in 0..5 {
            assert_eq!(index(&tools).search("same words"), ranked);
        }
    }

    #[test]
    fn bounds_what_one_tool_and_one_query_may_cost() {
        let long = "word ".repeat(10_000) + "needle";
        let blob = "x".repeat(MAX_TOKEN_BYTES + 1);
        let tools = [
            json!({"name": "long", "description": long}),
            json!({"name": "blob", "description": blob}),
        ];
        let idx = index(&tools);
        assert!(
            idx.search("needle").is_empty(),
            "tokens past the bound are not indexed"
        );
        assert!(
            idx.search(&blob).is_empty(),
            "overlong tokens are not indexed"
        );
        assert_eq!(idx.lengths[0], MAX_TOOL_TOKENS as f64 - 1.0 + NAME_WEIGHT);
        let query = (0..MAX_QUERY_TOKENS)
            .map(|i| format!("q{i} "))
            .collect::<String>()
            + "long";
        assert!(
            idx.search(&query).is_empty(),
            "query tokens past the bound are ignored"
        );
    }
}
