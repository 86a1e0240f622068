//! Redaction tests: the forms the runtime sends and the echoes seen in the wild, and a property
//! test that no secret survives any encoding the generator knows.

use super::*;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn scrubs_encoded_echoes() {
    let secrets = [Secret::new("a+b/c=\"d".into())];
    let echoed = r#"{"url": "https://x/?k=a%2Bb%2Fc%3D%22d", "json": "a+b/c=\"d", "low": "a%2bb%2fc%3d%22d"}"#;
    let scrubbed = text(echoed, &secrets);
    assert!(
        !scrubbed.contains("a%2Bb") && !scrubbed.contains("a%2bb") && !scrubbed.contains("c=\\\"d"),
        "{scrubbed}"
    );
    assert_eq!(scrubbed.matches(REDACTED).count(), 3, "{scrubbed}");
}

#[test]
fn scrubs_double_encoded_case_changed_and_partial_echoes() {
    let secret = "Tok3n-Secr3t-ValUE-0042";
    let secrets = [Secret::new(secret.into())];
    let double: String = secret.bytes().map(|b| format!("%25{b:02X}")).collect();
    // `%25`, then each hex digit of the byte escaped as well.
    let each_digit: String = secret
        .bytes()
        .map(|b| {
            let digits = format!("{b:02X}");
            let escaped: String = digits.bytes().map(|d| format!("%{d:02X}")).collect();
            format!("%25{escaped}")
        })
        .collect();
    for echo in [
        double,
        each_digit,
        secret.to_ascii_lowercase(),
        secret.to_ascii_uppercase(),
        // Truncated and masked echoes: more than half of it, literally.
        secret[..14].to_owned(),
        format!("****{}", &secret[10..]),
    ] {
        let scrubbed = text(&format!("echo: {echo}!"), &secrets);
        assert!(scrubbed.contains(REDACTED), "{echo} -> {scrubbed}");
        assert!(
            !scrubbed.to_ascii_lowercase().contains("secr3t-val"),
            "{echo} -> {scrubbed}"
        );
    }
    // Short shared fragments of ordinary text stay.
    assert_eq!(text("the Tok3n was", &secrets), "the Tok3n was");
}

#[test]
fn a_partial_echo_goes_whole_not_just_its_first_half() {
    // A long token (an exchanged JWT, say) echoed from its middle on: all of it goes.
    let mut state = 12_345u32;
    let secret: String = (0..300)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            char::from(b'a' + ((state >> 16) % 26) as u8)
        })
        .collect();
    let secrets = [Secret::new(secret.clone())];
    for echo in [&secret[100..], &secret[..200], &secret[40..260]] {
        assert_eq!(
            text(&format!("<{echo}>"), &secrets),
            "<[redacted]>",
            "{}",
            echo.len()
        );
    }
}

#[test]
fn scrubs_the_forms_the_runtime_sends_and_common_echoes() {
    let secret = "s3cr et~/ü\"x";
    let secrets = [Secret::new(secret.into())];
    let form: String = form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    assert!(form.contains('+') && form.contains("%7E"), "{form}");
    let mixed_case = form.replace("%C3", "%c3");
    let json_slash = serde_json::to_string(secret).unwrap().replace('/', "\\/");
    let json_unicode: String = secret
        .encode_utf16()
        .map(|unit| format!("\\u{unit:04X}"))
        .collect();
    let html = secret.replace('"', "&quot;").replace('/', "&#47;");
    let base64 = STANDARD.encode(format!("user:{secret}"));
    for echo in [form, mixed_case, json_slash, json_unicode, html, base64] {
        let scrubbed = text(&format!("echo: {echo}!"), &secrets);
        assert!(scrubbed.contains(REDACTED), "{echo} -> {scrubbed}");
        assert!(!scrubbed.contains(&echo), "{echo} -> {scrubbed}");
    }
}

#[test]
fn leaves_ordinary_text_alone() {
    let secrets = [Secret::new("tok-123456".into())];
    let plain = "100% of {\"a\": \"b\\n\"} & more + less";
    assert_eq!(text(plain, &secrets), plain);
}

#[test]
fn scrubs_nested_strings_and_keys() {
    let secrets = [Secret::new("tok-123".into()), Secret::new("ab".into())];
    let mut v = json!({"headers": {"Authorization": "Bearer tok-123"}, "tok-123": [1, "x tok-123 y"], "ab": "ab"});
    value(&mut v, &secrets);
    assert_eq!(
        v,
        json!({"headers": {"Authorization": "Bearer [redacted]"}, "[redacted]": [1, "x [redacted] y"], "ab": "ab"})
    );
}

/// The encodings the generator knows, applied per character where an echo may mix them.
fn encode(secret: &str, how: u8, choices: &[u8]) -> String {
    let mut out = String::new();
    match how % 4 {
        // Percent/form encoding, each byte either as is (when unreserved), %XX or %xx.
        0 => {
            for (n, byte) in secret.bytes().enumerate() {
                let pick = choices.get(n).copied().unwrap_or(0) % 3;
                match (pick, byte) {
                    (_, b' ') if pick == 0 => out.push('+'),
                    (0, b) if b.is_ascii_alphanumeric() => out.push(char::from(b)),
                    (1, b) => out.push_str(&format!("%{b:02x}")),
                    (_, b) => out.push_str(&format!("%{b:02X}")),
                }
            }
        }
        // JSON text, each character either as serde_json writes it or as `\uXXXX`.
        1 => {
            for (n, c) in secret.chars().enumerate() {
                if choices.get(n).copied().unwrap_or(0) % 2 == 0 {
                    let escaped = serde_json::to_string(&c.to_string()).unwrap_or_default();
                    out.push_str(&escaped[1..escaped.len() - 1].replace('/', "\\/"));
                } else {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        // HTML character references.
        2 => {
            for (n, c) in secret.chars().enumerate() {
                match choices.get(n).copied().unwrap_or(0) % 3 {
                    0 if c.is_alphanumeric() => out.push(c),
                    1 => out.push_str(&format!("&#{};", u32::from(c))),
                    _ => out.push_str(&format!("&#x{:X};", u32::from(c))),
                }
            }
        }
        // Base64 inside a longer base64 run, at any alignment.
        _ => {
            let prefix = &choices[..choices.len().min(2)];
            let mut bytes = prefix.to_vec();
            bytes.extend_from_slice(secret.as_bytes());
            out = STANDARD.encode(bytes);
        }
    }
    out
}

proptest! {
    #[test]
    fn no_secret_survives_a_known_encoding(
        secret in "[a-zA-Z0-9 ~/+%&\"\\\\é€😀-]{6,24}",
        how in 0u8..4,
        choices in proptest::collection::vec(any::<u8>(), 0..32),
        before in "[a-z {}\":,%&+\\\\]{0,20}",
        after in "[a-z {}\":,%&+\\\\]{0,20}",
    ) {
        let secrets = [Secret::new(secret.clone())];
        let encoded = encode(&secret, how, &choices);
        let scrubbed = text(&format!("{before}{encoded}{after}"), &secrets);
        prop_assert!(!scrubbed.contains(&secret), "{} in {}", secret, scrubbed);
        prop_assert!(!scrubbed.contains(&encoded), "{} in {}", encoded, scrubbed);
        prop_assert!(scrubbed.contains(REDACTED), "{}", scrubbed);
    }

    #[test]
    fn never_panics(input in any::<String>(), secret in any::<String>()) {
        let _ = text(&input, &[Secret::new(secret)]);
    }
}

#[test]
fn the_anchors_find_every_window() {
    // Whatever the window's place, one anchor lies wholly inside it.
    for len in [9usize, 16, 17, 23, 40, 301, 800] {
        let secret: String = (0..len)
            .map(|i| char::from(b'A' + (i % 26) as u8))
            .collect();
        let secret = secret.as_bytes();
        for (_, part) in partials(secret) {
            assert!(
                may_hold_a_partial(&format!("x{part}y"), secret),
                "{len}: {part}"
            );
        }
        assert!(!may_hold_a_partial("nothing of it", secret));
    }
}

#[test]
fn text_too_short_to_hold_a_form_skips_its_search_and_no_more() {
    for len in 0..200usize {
        let secret: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
        let shortest = shortest_base64_core(len);
        assert!(
            base64_cores(&secret)
                .iter()
                .all(|core| core.len() >= shortest),
            "{len}: a core is shorter than {shortest}"
        );
    }
    // The guard leaves what is scrubbed alone: a token's base64 echo in a long text goes.
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
    let echoed = STANDARD_NO_PAD.encode(token);
    let out = text(&format!("got {echoed} back"), &[Secret::new(token.into())]);
    assert!(!out.contains(&echoed[4..echoed.len() - 4]), "{out}");
    assert_eq!(text("short", &[Secret::new(token.into())]), "short");
    // Text exactly as long as a secret, or as long as half of it, is still searched.
    assert_eq!(text(token, &[Secret::new(token.into())]), REDACTED);
    let half = &token[..token.len() / 2];
    assert_eq!(text(half, &[Secret::new(token.into())]), REDACTED);
    assert!(!may_hold_a_partial(&half[1..], token.as_bytes()));
}
