//! A `session/prompt`'s content blocks as the user message cadre sends the model.

use cadre_protocol::image::{IMAGE_TYPES, MAX_IMAGE_BASE64, is_base64, is_image_type};
use cadre_protocol::{ContentBlock, UserContent};
use serde_json::Value;

/// The user message of `blocks` (ACP content blocks, as JSON): text as text, images as images
/// (PNG, JPEG, GIF or WebP in valid base64, else the prompt is refused; a model without image
/// input gets Pi's note instead, as everywhere in cadre), resource links
/// as a line naming them, embedded text resources as the text in a `<context>` element. Audio
/// is refused: the agent does not declare it.
pub fn user_content(blocks: &[Value]) -> Result<UserContent, String> {
    let mut out = Vec::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let s = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match kind {
            "text" => out.push(ContentBlock::text(s(block, "text").unwrap_or_default())),
            "image" => {
                let (Some(data), Some(mime_type)) = (s(block, "data"), s(block, "mimeType")) else {
                    return Err("an image block needs `data` and `mimeType`".into());
                };
                image_problem(&data, &mime_type)?;
                out.push(ContentBlock::Image { data, mime_type });
            }
            "resource_link" => {
                let uri = s(block, "uri").unwrap_or_default();
                let name = s(block, "name").unwrap_or_else(|| uri.clone());
                out.push(ContentBlock::text(format!("[@{name}]({uri})")));
            }
            "resource" => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let uri = s(resource, "uri").unwrap_or_default();
                match (
                    s(resource, "text"),
                    s(resource, "blob"),
                    s(resource, "mimeType"),
                ) {
                    (Some(text), _, _) => out.push(ContentBlock::text(format!(
                        "<context uri=\"{}\">\n{text}\n</context>",
                        uri.replace('"', "%22")
                    ))),
                    (None, Some(data), Some(mime)) if image_problem(&data, &mime).is_ok() => {
                        out.push(ContentBlock::Image {
                            data,
                            mime_type: mime,
                        });
                    }
                    _ => out.push(ContentBlock::text(format!(
                        "[@{uri}] (binary content, not included)"
                    ))),
                }
            }
            "audio" => return Err("audio prompts are not supported".into()),
            other => return Err(format!("unknown content block type `{other}`")),
        }
    }
    if out.is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(UserContent::Blocks(out))
}

/// Why an image cannot go to the model, if it cannot.
fn image_problem(data: &str, mime: &str) -> Result<(), String> {
    if !is_image_type(mime) {
        let shown: String = mime.chars().take(64).collect();
        return Err(format!(
            "an image must be one of {} (got {shown:?})",
            IMAGE_TYPES.join(", ")
        ));
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Err(format!(
            "an image is at most {} MiB of base64 (got {} bytes)",
            MAX_IMAGE_BASE64 / (1024 * 1024),
            data.len()
        ));
    }
    if !is_base64(data) {
        return Err("an image's `data` must be standard, padded base64".into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_become_user_content() {
        let content = user_content(&[
            json!({"type": "text", "text": "fix it"}),
            json!({"type": "resource_link", "uri": "file:///p/a.rs", "name": "a.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn b() {}"}}),
        ])
        .unwrap();
        let text = content.to_text();
        assert!(text.contains("fix it"), "{text}");
        assert!(text.contains("[@a.rs](file:///p/a.rs)"), "{text}");
        assert!(
            text.contains("<context uri=\"file:///p/b.rs\">\nfn b() {}\n</context>"),
            "{text}"
        );
    }

    #[test]
    fn bad_blocks_are_refused() {
        assert!(user_content(&[]).is_err());
        assert!(user_content(&[json!({"type": "audio", "data": "", "mimeType": "a"})]).is_err());
        assert!(user_content(&[json!({"type": "image"})]).is_err());
        let image = |data: &str, mime: &str| {
            user_content(&[json!({"type": "image", "data": data, "mimeType": mime})])
        };
        assert!(image("iVBORw0KGgo=", "image/png").is_ok());
        assert!(image("iVBORw0KGgo=", "image/svg+xml").is_err());
        assert!(image("iVBORw0KGgo=", "text/html").is_err());
        assert!(image("!!not base64", "image/png").is_err());
        assert!(image("iVBORw0KGgo", "image/png").is_err(), "unpadded");
        assert!(image(&"A".repeat(6 * 1024 * 1024), "image/png").is_err());
        // An embedded blob that is no usable image is named, not sent.
        let text = user_content(&[json!({"type": "resource", "resource":
            {"uri": "file:///p/x.svg", "blob": "PHN2Zz4=", "mimeType": "image/svg+xml"}})])
        .unwrap()
        .to_text();
        assert!(text.contains("binary content, not included"), "{text}");
    }
}
