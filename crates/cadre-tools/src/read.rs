//! `read{path, offset?, limit?}`: a text file's lines, or an image as an image block.
//!
//! Text is streamed line by line, so a huge file costs one pass and at most one result's worth
//! of memory. Output follows Pi: plain text, and when something is left out a closing hint that
//! names the next `offset`.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use cadre_protocol::{ContentBlock, ToolSpec};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{ArgError, Args};
use crate::fsutil::{SNIFF_BYTES, base64_encode, image_mime, looks_binary};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, HeadCollector, Limits, TruncatedBy, format_size,
};
use crate::{blocking, paths};

/// Larger images are refused rather than sent: providers reject them anyway.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

/// What a `read` call asks for. Public so that a check made before the call runs (a scoped
/// probe's read budget) reads the arguments exactly as the tool does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadArgs {
    pub path: String,
    /// The first line, 1-based (0 reads as 1).
    pub offset: Option<u64>,
    /// At most this many lines (at least 1).
    pub limit: Option<usize>,
}

impl ReadArgs {
    pub fn from_args(args: &Args) -> Result<ReadArgs, ArgError> {
        Ok(ReadArgs {
            path: args.required_str("path")?,
            offset: args.optional_u64("offset")?,
            limit: match args.get("limit") {
                None => None,
                Some(_) => Some(args.limit("limit", 0)?),
            },
        })
    }

    /// The lines asked for, as 0-based `start..end` (`None` = to the end of the file).
    pub fn window(&self) -> (usize, Option<usize>) {
        line_window(self.offset, self.limit)
    }
}

fn line_window(offset: Option<u64>, limit: Option<usize>) -> (usize, Option<usize>) {
    let start = usize::try_from(offset.unwrap_or(1).max(1) - 1).unwrap_or(usize::MAX);
    (start, limit.map(|l| start.saturating_add(l)))
}

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: format!(
                "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). \
                 Images are sent as attachments. For text files, output is truncated to \
                 {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). Use offset/limit for \
                 large files. When you need the full file, continue with offset until complete.",
                DEFAULT_MAX_BYTES / 1024
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                    "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                    "limit": {"type": "number", "description": "Maximum number of lines to read"}
                },
                "required": ["path"]
            }),
        }
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = Args::parse(args).and_then(|a| ReadArgs::from_args(&a));
            let ReadArgs {
                path: raw,
                offset,
                limit,
            } = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("read"),
            };
            let abs = paths::resolve(&raw, &ctx.cwd);
            if crate::hidden::is_hidden(&abs) {
                return ToolOutput::error(crate::hidden::refusal(&raw));
            }
            let cancel = ctx.cancel.clone();
            blocking(move || read_file(&raw, &abs, offset, limit, &cancel)).await
        })
    }
}

fn read_file(
    raw: &str,
    abs: &Path,
    offset: Option<u64>,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> ToolOutput {
    let meta = match fs::metadata(abs) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("File not found: {raw}"));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {raw}: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{raw} is a directory, not a file. Use ls to list its contents."
        ));
    }
    // A FIFO or device could block forever or never end.
    if !meta.is_file() {
        return ToolOutput::error(format!("Cannot read {raw}: it is not a regular file"));
    }
    let mut file = match File::open(abs) {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("Cannot read {raw}: {e}")),
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    if let Err(e) = (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head) {
        return ToolOutput::error(format!("Cannot read {raw}: {e}"));
    }
    if let Some(mime) = image_mime(&head) {
        return read_image(raw, file, head, meta.len(), mime);
    }
    if looks_binary(&head) {
        return ToolOutput::error(format!(
            "Cannot read {raw}: it is a binary file ({}). read shows text files and images \
             (png, jpg, gif, webp); use bash (for example `file` or `xxd | head`) to inspect it.",
            format_size(meta.len())
        ));
    }
    let reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(head).chain(file));
    match read_text(reader, offset, limit, cancel) {
        Ok(text) => render_text(raw, offset, limit, text),
        Err(ReadError::Aborted) => ToolOutput::error("Operation aborted"),
        Err(ReadError::Io(e)) => ToolOutput::error(format!("Cannot read {raw}: {e}")),
    }
}

fn read_image(raw: &str, mut file: File, mut bytes: Vec<u8>, size: u64, mime: &str) -> ToolOutput {
    if size > MAX_IMAGE_BYTES {
        return ToolOutput::error(format!(
            "Image {raw} is {}, larger than the {} limit for images. Shrink it first \
             (for example with bash and ImageMagick's `convert -resize`).",
            format_size(size),
            format_size(MAX_IMAGE_BYTES)
        ));
    }
    if let Err(e) = file.read_to_end(&mut bytes) {
        return ToolOutput::error(format!("Cannot read {raw}: {e}"));
    }
    ToolOutput {
        content: vec![
            ContentBlock::text(format!("Read image file [{mime}]")),
            ContentBlock::Image {
                data: base64_encode(&bytes),
                mime_type: mime.to_string(),
            },
        ],
        details: None,
        is_error: false,
    }
}

enum ReadError {
    Aborted,
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// What one pass over the file found.
struct TextRead {
    collected: crate::truncate::Truncation,
    /// Lines in the whole file.
    total_lines: usize,
    /// Size of the first selected line (for the "line too long" hint).
    first_line_bytes: usize,
}

fn read_text<R: BufRead>(
    mut reader: R,
    offset: Option<u64>,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> Result<TextRead, ReadError> {
    let (start, end) = line_window(offset, limit);
    let mut collector = HeadCollector::new(Limits::default());
    let mut line = Vec::new();
    let mut index = 0usize;
    let (mut selected_lines, mut selected_bytes) = (0usize, 0usize);
    let mut first_line_bytes = 0usize;
    loop {
        // Once the window is done, only the line count is left: count newlines per buffer.
        let window_done = collector.is_stopped() || end.is_some_and(|e| index >= e);
        if window_done {
            index += count_remaining_lines(&mut reader, cancel)?;
            break;
        }
        // One byte more than a result can hold: a longer line is refused by the collector
        // either way, and a minified multi-megabyte line never sits in memory whole.
        let Some(full_len) = read_line_capped(&mut reader, &mut line, DEFAULT_MAX_BYTES + 1)?
        else {
            break;
        };
        if index.is_multiple_of(4096) && cancel.is_cancelled() {
            return Err(ReadError::Aborted);
        }
        let current = index;
        index += 1;
        if current < start {
            continue;
        }
        let body_len = if line.len() == full_len && line.ends_with(b"\r") {
            line.pop();
            full_len - 1
        } else {
            full_len
        };
        if selected_lines == 0 {
            first_line_bytes = body_len;
        }
        selected_lines += 1;
        selected_bytes += body_len + usize::from(selected_lines > 1);
        collector.push(&String::from_utf8_lossy(&line));
    }
    Ok(TextRead {
        collected: collector.finish(selected_lines, selected_bytes),
        total_lines: index,
        first_line_bytes,
    })
}

/// Lines left in `reader`, by the same rule as `truncate::count_lines`.
fn count_remaining_lines<R: BufRead>(
    reader: &mut R,
    cancel: &CancellationToken,
) -> Result<usize, ReadError> {
    let mut lines = 0usize;
    let mut dangling = false;
    loop {
        if cancel.is_cancelled() {
            return Err(ReadError::Aborted);
        }
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        lines += chunk.iter().filter(|&&b| b == b'\n').count();
        dangling = chunk.last() != Some(&b'\n');
        let n = chunk.len();
        reader.consume(n);
    }
    Ok(lines + usize::from(dangling))
}

/// Read one line (without its `\n`) into `buf`, keeping at most `cap` bytes of it. Returns the
/// line's full length, or `None` at the end of the input.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<usize>> {
    buf.clear();
    let mut len = 0usize;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(len));
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let piece = &chunk[..newline.unwrap_or(chunk.len())];
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&piece[..piece.len().min(room)]);
        len += piece.len();
        match newline {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(Some(len));
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
            }
        }
    }
}

fn render_text(raw: &str, offset: Option<u64>, limit: Option<usize>, read: TextRead) -> ToolOutput {
    let TextRead {
        collected,
        total_lines,
        first_line_bytes,
    } = read;
    let start = usize::try_from(offset.unwrap_or(1).max(1) - 1).unwrap_or(usize::MAX);
    let first_shown = start + 1;
    if start > 0 && start >= total_lines {
        return ToolOutput::error(format!(
            "Offset {} is beyond end of file ({total_lines} lines total)",
            offset.unwrap_or(0)
        ));
    }
    if total_lines == 0 {
        return ToolOutput::ok("(empty file)");
    }
    let details = || json!({ "truncation": collected });
    if collected.first_line_exceeds_limit {
        let text = format!(
            "[Line {first_shown} is {}, exceeds {} limit. Use bash: sed -n '{first_shown}p' {raw} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(first_line_bytes as u64),
            format_size(DEFAULT_MAX_BYTES as u64)
        );
        return ToolOutput::ok(text).with_details(details());
    }
    if collected.truncated {
        let last_shown = start + collected.output_lines;
        let next = last_shown + 1;
        let why = match collected.truncated_by {
            Some(TruncatedBy::Bytes) => {
                format!(" ({} limit)", format_size(DEFAULT_MAX_BYTES as u64))
            }
            _ => String::new(),
        };
        let text = format!(
            "{}\n\n[Showing lines {first_shown}-{last_shown} of {total_lines}{why}. Use offset={next} to continue.]",
            collected.content
        );
        return ToolOutput::ok(text).with_details(details());
    }
    let shown_end = start + collected.output_lines;
    if limit.is_some() && shown_end < total_lines {
        let remaining = total_lines - shown_end;
        let text = format!(
            "{}\n\n[{remaining} more lines in file. Use offset={} to continue.]",
            collected.content,
            shown_end + 1
        );
        return ToolOutput::ok(text);
    }
    ToolOutput::ok(collected.content)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn read_arguments_and_their_line_window() {
        let parse = |v: Value| Args::parse(v).and_then(|a| ReadArgs::from_args(&a));
        let a = parse(json!({"path": "f", "offset": "301", "limit": "5"})).unwrap();
        assert_eq!((a.offset, a.limit), (Some(301), Some(5)));
        assert_eq!(a.window(), (300, Some(305)));
        assert_eq!(parse(json!({"path": "f"})).unwrap().window(), (0, None));
        assert_eq!(
            parse(json!({"path": "f", "offset": 0})).unwrap().window(),
            (0, None)
        );
        for bad in [
            json!({"path": 3}),
            json!({"offset": 1}),
            json!({"path": "f", "offset": 1.5}),
            json!({"path": "f", "offset": -1}),
            json!({"path": "f", "limit": 0}),
            json!({"path": "f", "limit": "all"}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn capped_lines() {
        let mut r = BufReader::with_capacity(4, io::Cursor::new(b"abcdefgh\nxy\n\nz".to_vec()));
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), Some(8));
        assert_eq!(buf, b"abc");
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), Some(2));
        assert_eq!(buf, b"xy");
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), Some(0));
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), Some(1));
        assert_eq!(buf, b"z");
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), None);
    }

    #[test]
    fn remaining_line_count() {
        let cancel = CancellationToken::new();
        for (input, expected) in [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("\n\n", 2)] {
            let mut r = BufReader::with_capacity(2, io::Cursor::new(input.as_bytes().to_vec()));
            assert_eq!(
                count_remaining_lines(&mut r, &cancel).ok(),
                Some(expected),
                "{input:?}"
            );
        }
    }
}
