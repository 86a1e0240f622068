//! The pod's projected ServiceAccount token, the client assertion of a `serviceAccountToken`
//! client (RFC 7523 section 2.2). The kubelet rotates the file, so it is read again for each
//! token request (a cache hit reads nothing): at most [`MAX_TOKEN_FILE_BYTES`], surrounding
//! whitespace trimmed. A missing, empty or unreadable file is a [`TokenError`] naming the file,
//! never its contents. File I/O.

use super::TokenError;
use mcp_declaration::Secret;
use std::path::Path;
use tokio::io::AsyncReadExt;

/// Largest token file read (a projected token is a few KiB).
const MAX_TOKEN_FILE_BYTES: u64 = 64 << 10;

/// The token in the file at `path`.
pub(super) async fn read(path: &Path) -> Result<Secret, TokenError> {
    let failed = |problem: &'static str| TokenError::ServiceAccountToken {
        path: path.display().to_string(),
        problem,
    };
    let file = match tokio::fs::File::open(path).await {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(failed(
                "is missing: is the server running in a pod with a projected token for this audience?",
            ));
        }
        Err(_) => return Err(failed("cannot be read")),
    };
    // A regular file only (the kubelet's is a symlink to one): a FIFO would block the call.
    match file.metadata().await {
        Ok(metadata) if metadata.is_file() => {}
        _ => return Err(failed("is not a regular file")),
    }
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|_| failed("cannot be read"))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(failed("is larger than 64 KiB"));
    }
    let text = String::from_utf8(bytes).map_err(|_| failed("is not text"))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(failed("is empty"));
    }
    if token.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(failed("does not hold a token"));
    }
    Ok(Secret::new(token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_token_is_read_trimmed_and_again_after_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "eyJhbGciOi.first.sig\n").unwrap();
        assert_eq!(read(&path).await.unwrap().expose(), "eyJhbGciOi.first.sig");
        std::fs::write(&path, "eyJhbGciOi.second.sig").unwrap();
        assert_eq!(read(&path).await.unwrap().expose(), "eyJhbGciOi.second.sig");
    }

    #[tokio::test]
    async fn a_missing_empty_or_oversized_file_is_named_without_its_contents() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let text = read(&path).await.unwrap_err().to_string();
        assert!(text.contains("is missing"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
        std::fs::write(&path, " \n").unwrap();
        assert!(
            read(&path)
                .await
                .unwrap_err()
                .to_string()
                .contains("is empty")
        );
        std::fs::write(&path, "secret-part ".repeat(6000)).unwrap();
        let text = read(&path).await.unwrap_err().to_string();
        assert!(text.contains("larger than 64 KiB"), "{text}");
        assert!(!text.contains("secret-part"), "{text}");
        std::fs::write(&path, "two words").unwrap();
        let text = read(&path).await.unwrap_err().to_string();
        assert!(!text.contains("words"), "{text}");
        let text = read(dir.path()).await.unwrap_err().to_string();
        assert!(text.contains("not a regular file"), "{text}");
    }
}
