//! An MCP `tools/call` result as a cadre tool result.
//!
//! Text stays text; images of the types providers take (PNG, JPEG, GIF, WebP, as valid
//! base64) stay images (the model layer replaces them for text-only models), others become a
//! note; audio, resource links and embedded resources become text that says what they are;
//! `structuredContent` is the text when there is no content. The text is cut to the limits of
//! every other tool's output, and `isError` is the result's error flag.

use cadre_protocol::ContentBlock;
use cadre_protocol::image::{MAX_IMAGE_BASE64, is_base64, is_image_type};
use cadre_tools::ToolOutput;
use cadre_tools::truncate::{Limits, format_size, head_on_char_boundary, truncate_head};
use serde_json::{Value, json};

/// The most images kept from one result.
pub const MAX_IMAGES: usize = 8;

/// Map a `CallToolResult` (as JSON) from server `server`'s tool `tool`.
pub fn map_result(server: &str, tool: &str, result: &Value) -> ToolOutput {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut text = String::new();
    let mut images = Vec::new();
    let mut push = |line: &str| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(line);
    };
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in content {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let str_of = |key: &str| block.get(key).and_then(Value::as_str);
        match kind {
            "text" => push(str_of("text").unwrap_or("")),
            "image" => {
                let data = str_of("data").unwrap_or("");
                let mime = str_of("mimeType").unwrap_or("");
                if data.len() > MAX_IMAGE_BASE64 {
                    push(&format!(
                        "[image {mime} left out: {} is over the {} limit]",
                        format_size(data.len() as u64),
                        format_size(MAX_IMAGE_BASE64 as u64)
                    ));
                } else if images.len() >= MAX_IMAGES {
                    push(&format!(
                        "[image {mime} left out: more than {MAX_IMAGES} images]"
                    ));
                } else if !is_image_type(mime) {
                    push(&format!(
                        "[image with unusable type {:?} left out]",
                        crate::shown::server_text(mime)
                    ));
                } else if !is_base64(data) {
                    push(&format!(
                        "[image {mime} left out: its data is not valid base64]"
                    ));
                } else {
                    images.push(ContentBlock::Image {
                        data: data.to_string(),
                        mime_type: mime.to_string(),
                    });
                }
            }
            "audio" => push(&format!(
                "[audio {} not shown]",
                str_of("mimeType").unwrap_or("")
            )),
            "resource_link" => {
                let uri = str_of("uri").unwrap_or("");
                let mut line = format!("[resource link: {uri}");
                if let Some(name) = str_of("name") {
                    line.push_str(&format!(" ({name})"));
                }
                if let Some(description) = str_of("description") {
                    line.push_str(&format!(" — {description}"));
                }
                line.push(']');
                push(&line);
            }
            "resource" => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => push(&format!("[resource {uri}]\n{body}")),
                    None => push(&format!("[binary resource {uri} not shown]")),
                }
            }
            other => push(&format!("[content of unknown type {other:?} not shown]")),
        }
    }
    if content.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        push(&serde_json::to_string(structured).unwrap_or_default());
    }
    if text.is_empty() && images.is_empty() {
        text = if is_error {
            format!("MCP tool {tool} of server {server} failed without a message")
        } else {
            "(no output)".to_string()
        };
    }
    let (text, truncation) = cut(&text);
    let mut blocks = Vec::new();
    if !text.is_empty() {
        blocks.push(ContentBlock::text(text));
    }
    blocks.extend(images);
    let mut details = json!({ "server": server, "tool": tool });
    if let Some(truncation) = truncation {
        details["truncation"] = truncation;
    }
    ToolOutput {
        content: blocks,
        details: Some(details),
        is_error,
    }
}

/// `text` within the default limits, with a note saying what was cut.
fn cut(text: &str) -> (String, Option<Value>) {
    let limits = Limits::default();
    let t = truncate_head(text, limits);
    if !t.truncated {
        return (t.content, None);
    }
    let details = serde_json::to_value(&t).ok();
    let (kept, shown) = if t.first_line_exceeds_limit {
        let head = head_on_char_boundary(text, limits.max_bytes);
        (
            head.to_string(),
            format!("the first {}", format_size(head.len() as u64)),
        )
    } else {
        (
            t.content.clone(),
            format!("lines 1-{} of {}", t.output_lines, t.total_lines),
        )
    };
    let note = format!(
        "\n\n[Output truncated: showing {shown} ({} of {}).]",
        format_size(kept.len() as u64),
        format_size(t.total_bytes as u64)
    );
    (kept + &note, details)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn texts(out: &ToolOutput) -> String {
        out.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn content_kinds_map() {
        let out = map_result(
            "s",
            "t",
            &json!({"content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "image", "data": "aGk=", "mimeType": "text/html"},
                {"type": "image", "data": "aGk=", "mimeType": "image/svg+xml"},
                {"type": "image", "data": "not base64!", "mimeType": "image/jpeg"},
                {"type": "image", "data": "aGk", "mimeType": "image/gif"},
                {"type": "image", "data": "", "mimeType": "image/webp"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "description": "the a"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "bee"}},
                {"type": "resource", "resource": {"uri": "file:///c", "blob": "AA=="}},
                {"type": "hologram"}
            ]}),
        );
        assert!(!out.is_error);
        let text = texts(&out);
        for want in [
            "hello",
            "[image with unusable type \"text/html\" left out]",
            "[image with unusable type \"image/svg+xml\" left out]",
            "[image image/jpeg left out: its data is not valid base64]",
            "[image image/gif left out: its data is not valid base64]",
            "[image image/webp left out: its data is not valid base64]",
            "[audio audio/wav not shown]",
            "[resource link: file:///a (a) — the a]",
            "[resource file:///b]\nbee",
            "[binary resource file:///c not shown]",
            "unknown type \"hologram\"",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
        let images: Vec<_> = out
            .content
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image { .. }))
            .collect();
        assert_eq!(images.len(), 1);
        assert_eq!(out.details.as_ref().unwrap()["server"], "s");
    }

    #[test]
    fn errors_structured_content_and_empty_results() {
        let out = map_result(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
        );
        assert!(out.is_error);
        assert_eq!(texts(&out), "bad");
        let out = map_result(
            "s",
            "t",
            &json!({"content": [], "structuredContent": {"n": 1}}),
        );
        assert_eq!(texts(&out), r#"{"n":1}"#);
        // Content wins over structuredContent (servers send both, the text for the model).
        let out = map_result(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "one"}], "structuredContent": {"n": 1}}),
        );
        assert_eq!(texts(&out), "one");
        assert_eq!(texts(&map_result("s", "t", &json!({}))), "(no output)");
        let out = map_result("s", "t", &json!({"isError": true}));
        assert!(texts(&out).contains("failed without a message"));
    }

    #[test]
    fn long_output_is_cut_like_other_tools() {
        let long = "line\n".repeat(5000);
        let out = map_result(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": long}]}),
        );
        let text = texts(&out);
        assert!(
            text.contains("[Output truncated: showing lines 1-2000 of 5000"),
            "{}",
            &text[text.len() - 200..]
        );
        assert!(out.details.unwrap()["truncation"]["truncated"] == true);
        let one_line = "x".repeat(200_000);
        let text = texts(&map_result(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": one_line}]}),
        ));
        assert!(text.len() < 60 * 1024, "{}", text.len());
        assert!(
            text.contains("[Output truncated: showing the first 50.0KB"),
            "{}",
            &text[text.len() - 100..]
        );
        let big = "A".repeat(MAX_IMAGE_BASE64 + 1);
        let out = map_result(
            "s",
            "t",
            &json!({"content": [{"type": "image", "data": big, "mimeType": "image/png"}]}),
        );
        assert!(texts(&out).contains("over the"), "{}", texts(&out));
        assert_eq!(out.content.len(), 1);
    }
}
