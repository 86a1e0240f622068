//! How the rendered manifest is stored in its ConfigMap: as text, or gzip-compressed in
//! `binaryData` when the text is larger than a ConfigMap holds (a server including the sets of a
//! large API). The runtime reads either from the mounted directory. Pure.

use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;

/// Largest manifest stored in a ConfigMap: a ConfigMap holds 1 MiB in all, and its metadata and
/// key take a little of that.
pub const MAX_MANIFEST_BYTES: usize = 1_000_000;

/// Key of the manifest in the ConfigMap's `data`.
pub const MANIFEST_KEY: &str = "manifest.yaml";
/// Key of the compressed manifest in the ConfigMap's `binaryData`.
pub const COMPRESSED_MANIFEST_KEY: &str = "manifest.yaml.gz";

/// A manifest as its ConfigMap stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ManifestData {
    /// Small enough as text.
    Text(String),
    /// Too large as text: gzip, at most [`MAX_MANIFEST_BYTES`].
    Compressed(Vec<u8>),
}

/// The ConfigMap form of `yaml`; `Err` with the compressed size when even that is too large.
pub fn manifest_data(yaml: &str) -> Result<ManifestData, usize> {
    if yaml.len() <= MAX_MANIFEST_BYTES {
        return Ok(ManifestData::Text(yaml.to_owned()));
    }
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    // Writing into a Vec cannot fail.
    let compressed = encoder
        .write_all(yaml.as_bytes())
        .and_then(|()| encoder.finish())
        .unwrap_or_default();
    if compressed.is_empty() || compressed.len() > MAX_MANIFEST_BYTES {
        return Err(compressed.len());
    }
    Ok(ManifestData::Compressed(compressed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn a_manifest_too_large_as_text_is_compressed_and_reads_back() {
        let small = "kind: MCPServer\n";
        assert_eq!(manifest_data(small), Ok(ManifestData::Text(small.into())));
        let large = "- {name: get_pod, description: Read the specified Pod}\n".repeat(40_000);
        assert!(large.len() > MAX_MANIFEST_BYTES);
        let Ok(ManifestData::Compressed(bytes)) = manifest_data(&large) else {
            panic!("not compressed");
        };
        let mut text = String::new();
        GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, large);
    }

    #[test]
    fn a_manifest_too_large_even_compressed_is_refused_with_its_size() {
        // Bytes that do not compress: a hash chain rendered as hex.
        let mut text = String::new();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        while text.len() <= 3 * MAX_MANIFEST_BYTES {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(&format!("{state:016x}"));
        }
        let size = manifest_data(&text).unwrap_err();
        assert!(size > MAX_MANIFEST_BYTES, "{size}");
    }
}
