//! What an image must be before it is kept in a session: a type every provider takes, in
//! standard padded base64, within providers' size limit. An image that fails any of these would
//! be stored and make every later request of that session fail, so front ends (ACP prompts) and
//! tool results (MCP) check them where they arrive.

/// The image types every provider takes.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image taken, base64-encoded (providers refuse larger ones).
pub const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;

/// Whether `mime` is one of [`IMAGE_TYPES`].
pub fn is_image_type(mime: &str) -> bool {
    IMAGE_TYPES.contains(&mime)
}

/// Whether `data` is standard, padded base64 (what providers decode): no line breaks, no
/// URL-safe alphabet, a length that is a multiple of four, at most two `=` at the end.
pub fn is_base64(data: &str) -> bool {
    let bytes = data.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let body = data.trim_end_matches('=');
    bytes.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_padded_base64_passes() {
        for good in ["AAAA", "AAA=", "AA==", "ab+/Zz09"] {
            assert!(is_base64(good), "{good}");
        }
        for bad in ["", "AAA", "A===", "AA\nAA", "ab-_", "AAAA AAAA", "=AAA"] {
            assert!(!is_base64(bad), "{bad:?}");
        }
    }

    #[test]
    fn only_the_types_every_provider_takes() {
        assert!(is_image_type("image/png"));
        assert!(!is_image_type("image/svg+xml"));
        assert!(!is_image_type("IMAGE/PNG"));
    }
}
