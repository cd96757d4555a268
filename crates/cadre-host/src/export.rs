//! One session as a self-contained HTML page (RPC `export_html`): no scripts, styles inline,
//! every piece of text escaped.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use cadre_protocol::{ContentBlock, Message, UserContent};

/// The most characters of one tool result shown; the rest is cut with a note.
const RESULT_CHARS: usize = 20_000;
/// The most characters of one text, thinking or user block shown.
const TEXT_CHARS: usize = 256_000;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}\
h1{font-size:1.2rem}.m{border-left:3px solid #ccc;padding:.3rem .8rem;margin:.8rem 0}\
.user{border-color:#2a6}.assistant{border-color:#36c}.toolResult{border-color:#999;background:#f6f6f6}\
.err{border-color:#c33}.role{font-size:.75rem;text-transform:uppercase;color:#666}\
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font:12px/1.4 ui-monospace,monospace}\
.thinking{color:#777;font-style:italic}";

/// Write the page for `messages` to `path`: a new file, or in place of an existing regular
/// file. Anything else at `path` (a device, a FIFO, a symlink, a directory) is refused rather
/// than replaced, and the directory must exist.
pub fn export_html(title: &str, messages: &[Message], path: &Path) -> Result<()> {
    write_page(path, &render(title, messages))
}

/// Write a page to `path` by [`export_html`]'s rules (a new or regular file, never through a
/// symlink, device or directory; the directory must exist).
pub fn write_page(path: &Path, page: &str) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => {
            anyhow::bail!(
                "{} exists and is not a regular file; choose another outputPath",
                path.display()
            );
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            if dir.is_some_and(|d| !d.is_dir()) {
                anyhow::bail!("the directory of {} does not exist", path.display());
            }
        }
        Err(e) => return Err(e).with_context(|| format!("cannot use {}", path.display())),
    }
    cadre_core::config::atomic_write(path, page.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

pub fn render(title: &str, messages: &[Message]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        escape(title),
        escape(title)
    );
    conversation(&mut out, messages, usize::MAX);
    out.push_str("</body></html>\n");
    out
}

/// The message blocks of a conversation (styled by [`STYLE`]), appended to `out`. Once `out`
/// holds `max_bytes`, the remaining messages are left out with a note, so a huge session makes
/// a bounded page.
pub fn conversation(out: &mut String, messages: &[Message], max_bytes: usize) {
    for (shown, message) in messages.iter().enumerate() {
        if out.len() >= max_bytes {
            let _ = write!(
                out,
                "<div class=\"m err\"><div class=\"role\">cut</div><pre>{} more messages not shown (page size limit)</pre></div>",
                messages.len() - shown
            );
            return;
        }
        match message {
            Message::User(u) => {
                block(
                    out,
                    "user",
                    "user",
                    &clip(&user_text(&u.content), TEXT_CHARS),
                    false,
                );
            }
            Message::Assistant(a) => {
                let mut body = String::new();
                for b in &a.content {
                    match b {
                        ContentBlock::Text { text } => {
                            let _ = write!(body, "<pre>{}</pre>", escape(&clip(text, TEXT_CHARS)));
                        }
                        ContentBlock::Thinking { thinking, .. } => {
                            let _ = write!(
                                body,
                                "<pre class=\"thinking\">{}</pre>",
                                escape(&clip(thinking, TEXT_CHARS))
                            );
                        }
                        ContentBlock::ToolCall(call) => {
                            let _ = write!(
                                body,
                                "<pre>→ {} {}</pre>",
                                escape(&call.name),
                                escape(&clip(&call.arguments.to_string(), RESULT_CHARS))
                            );
                        }
                        ContentBlock::Image { .. } => body.push_str("<pre>[image]</pre>"),
                    }
                }
                if let Some(e) = &a.error_message {
                    let _ = write!(body, "<pre>error: {}</pre>", escape(e));
                }
                let label = format!("assistant · {}", a.model);
                raw_block(out, "assistant", &label, &body, a.error_message.is_some());
            }
            Message::ToolResult(r) => {
                let text = cadre_protocol::join_text(&r.content);
                let shown = clip(&text, RESULT_CHARS);
                let label = format!("{} result", r.tool_name);
                block(out, "toolResult", &label, &shown, r.is_error);
            }
            other => {
                let value = serde_json::to_value(other).unwrap_or_default();
                let role = value["role"].as_str().unwrap_or("message").to_string();
                block(
                    out,
                    "toolResult",
                    &role,
                    &clip(&value.to_string(), RESULT_CHARS),
                    false,
                );
            }
        }
    }
}

/// The styles of [`conversation`]'s blocks.
pub const CONVERSATION_STYLE: &str = STYLE;

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text } => text.clone(),
                ContentBlock::Image { mime_type, .. } => format!("[image {mime_type}]"),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn block(out: &mut String, class: &str, label: &str, text: &str, error: bool) {
    raw_block(
        out,
        class,
        label,
        &format!("<pre>{}</pre>", escape(text)),
        error,
    );
}

fn raw_block(out: &mut String, class: &str, label: &str, body: &str, error: bool) {
    let err = if error { " err" } else { "" };
    let _ = write!(
        out,
        "<div class=\"m {class}{err}\"><div class=\"role\">{}</div>{body}</div>",
        escape(label)
    );
}

/// `text` cut to `max` characters, with a note of how many were left out.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}\n… ({} more characters)",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}

/// HTML text escaping (also for attribute-free contexts, quotes included for safety).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_and_nothing_external_is_loaded() {
        let page = render(
            "t<script>",
            &[Message::user("<script>alert(1)</script> & \"x\"")],
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;"));
        assert!(!page.contains("http"), "no external resources: {page}");
    }

    #[test]
    fn long_results_are_cut() {
        assert_eq!(clip("abcdef", 3), "abc\n… (3 more characters)");
        assert_eq!(clip("abc", 3), "abc");
    }
}
