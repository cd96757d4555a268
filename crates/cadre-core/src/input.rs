//! The prompts of a print-mode run from Pi-style arguments: `@file` arguments, the message
//! arguments and piped stdin.
//!
//! As in Pi, an argument starting with `@` names a file to include, wherever it stands. Text
//! files are inlined as `<file name="/abs/path">\n…\n</file>\n`; PNG, JPEG, GIF and WebP files
//! (known by their first bytes, not their names) become image blocks after the text, with an
//! empty `<file name="…"></file>` line marking their place. Empty files are skipped. The first
//! prompt is stdin, then the files, then the first message argument; every further message
//! argument is a prompt of its own, sent after the previous one is answered (`cadre -p "a" "b"`
//! runs two turns, as `pi -p "a" "b"` does).
//!
//! Differences from Pi, on purpose: piped stdin is separated from what follows by a blank line
//! (Pi glues it to the next part), and sizes are capped with an error instead of Pi's image
//! resizing (cadre does not decode images): a text file above [`MAX_TEXT_FILE_BYTES`] or an
//! image above [`MAX_IMAGE_FILE_BYTES`] fails the run before anything is sent.

use std::io::Read;
use std::path::{Path, PathBuf};

use cadre_protocol::ContentBlock;

/// The largest text file inlined: 1 MiB is already more than most context windows.
pub const MAX_TEXT_FILE_BYTES: u64 = 1024 * 1024;
/// The largest image attached: what stays under Pi's 4.5 MiB of base64 (below Anthropic's
/// 5 MB limit per image).
pub const MAX_IMAGE_FILE_BYTES: u64 = 4_718_592 / 4 * 3;

/// The prompts of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct InitialInput {
    /// The first user message: its text block, then the images of `@file` arguments. `None`
    /// when there is nothing to send.
    pub first: Option<Vec<ContentBlock>>,
    /// The further message arguments, each a prompt of its own, in order.
    pub rest: Vec<String>,
}

/// An `@file` argument that cannot be included.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error(
        "@{arg}: file not found: {} (an argument starting with @ names a file to include in the \
         prompt)",
        .path.display()
    )]
    NotFound { arg: String, path: PathBuf },
    #[error("@{arg}: {} is a directory, not a file", .path.display())]
    Directory { arg: String, path: PathBuf },
    #[error("@{arg}: cannot read {}: {source}", .path.display())]
    Unreadable {
        arg: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "@{arg}: {} is {} KiB, more than the {} KiB allowed for {kind}; let the agent read the \
         parts it needs instead",
        .path.display(),
        .size / 1024,
        .limit / 1024
    )]
    TooLarge {
        arg: String,
        path: PathBuf,
        kind: &'static str,
        size: u64,
        limit: u64,
    },
    #[error(
        "@{arg}: {} is neither UTF-8 text nor a PNG, JPEG, GIF or WebP image",
        .path.display()
    )]
    Unsupported { arg: String, path: PathBuf },
}

/// Split the positional arguments into `@file` arguments (without the `@`) and messages.
pub fn split_file_args(positional: &[String]) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    let mut messages = Vec::new();
    for arg in positional {
        match arg.strip_prefix('@') {
            Some(file) => files.push(file.to_string()),
            None => messages.push(arg.clone()),
        }
    }
    (files, messages)
}

/// Build the prompts of a run in `cwd` from the message arguments, the `@file` arguments
/// (without the `@`; a leading `~` is the home directory `home`) and piped stdin (already
/// read; blank counts as none).
pub fn initial_input(
    messages: &[String],
    files: &[String],
    stdin: Option<&str>,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<InitialInput, InputError> {
    let mut text = String::new();
    let mut images = Vec::new();
    for arg in files {
        include_file(arg, cwd, home, &mut text, &mut images)?;
    }
    let mut parts: Vec<String> = Vec::new();
    if let Some(piped) = stdin.map(str::trim).filter(|s| !s.is_empty()) {
        parts.push(piped.to_string());
    }
    // The file text and the first message are joined as Pi joins them: each file ends in a
    // newline already.
    let mut rest = messages.iter();
    let mut body = text;
    if let Some(first) = rest.next() {
        body.push_str(first);
    }
    if !body.is_empty() {
        parts.push(body);
    }
    let first = if parts.is_empty() && images.is_empty() {
        None
    } else {
        let mut blocks = vec![ContentBlock::text(parts.join("\n\n"))];
        blocks.extend(images);
        Some(blocks)
    };
    Ok(InitialInput {
        first,
        rest: rest.cloned().collect(),
    })
}

/// Add one file: its text to `text`, or its image to `images` with a marker line in `text`.
fn include_file(
    arg: &str,
    cwd: &Path,
    home: Option<&Path>,
    text: &mut String,
    images: &mut Vec<ContentBlock>,
) -> Result<(), InputError> {
    let path = resolve(arg, cwd, home);
    let unreadable = |source| InputError::Unreadable {
        arg: arg.to_string(),
        path: path.clone(),
        source,
    };
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(InputError::NotFound {
                arg: arg.to_string(),
                path,
            });
        }
        Err(e) => return Err(unreadable(e)),
    };
    if meta.is_dir() {
        return Err(InputError::Directory {
            arg: arg.to_string(),
            path,
        });
    }
    if meta.len() == 0 {
        return Ok(());
    }
    let limit = MAX_TEXT_FILE_BYTES.max(MAX_IMAGE_FILE_BYTES);
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    let size = meta.len().max(bytes.len() as u64);
    let too_large = |kind, limit| InputError::TooLarge {
        arg: arg.to_string(),
        path: path.clone(),
        kind,
        size,
        limit,
    };
    let name = path.display();
    if let Some(mime_type) = cadre_tools::image_mime(&bytes) {
        if size > MAX_IMAGE_FILE_BYTES {
            return Err(too_large("an image", MAX_IMAGE_FILE_BYTES));
        }
        images.push(ContentBlock::Image {
            data: cadre_tools::base64_encode(&bytes),
            mime_type: mime_type.to_string(),
        });
        text.push_str(&format!("<file name=\"{name}\"></file>\n"));
        return Ok(());
    }
    if size > MAX_TEXT_FILE_BYTES {
        return Err(too_large("a text file", MAX_TEXT_FILE_BYTES));
    }
    let content = String::from_utf8(bytes).map_err(|_| InputError::Unsupported {
        arg: arg.to_string(),
        path: path.clone(),
    })?;
    text.push_str(&format!("<file name=\"{name}\">\n{content}\n</file>\n"));
    Ok(())
}

/// `~` and `~/…` are the home directory; a relative path is taken from `cwd`.
fn resolve(arg: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    match (arg, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (arg, Some(home)) if arg.starts_with("~/") => home.join(&arg[2..]),
        _ => cwd.join(arg),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn text_of(blocks: &[ContentBlock]) -> &str {
        match &blocks[0] {
            ContentBlock::Text { text } => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn at_arguments_are_files_wherever_they_stand() {
        let (files, messages) = split_file_args(&strings(&["@a.md", "hi", "@b.png", "there"]));
        assert_eq!(files, strings(&["a.md", "b.png"]));
        assert_eq!(messages, strings(&["hi", "there"]));
    }

    #[test]
    fn text_files_are_wrapped_as_pi_wraps_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.md"), "alpha").unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("sub/b.txt"), "beta\n").unwrap();
        std::fs::write(tmp.path().join("empty"), "").unwrap();
        let input = initial_input(
            &strings(&["What is this?", "And then?"]),
            &strings(&["a.md", "empty", "sub/b.txt"]),
            None,
            tmp.path(),
            None,
        )
        .unwrap();
        let first = input.first.unwrap();
        let a = tmp.path().join("a.md");
        let b = tmp.path().join("sub/b.txt");
        assert_eq!(
            text_of(&first),
            format!(
                "<file name=\"{}\">\nalpha\n</file>\n<file name=\"{}\">\nbeta\n\n</file>\nWhat is this?",
                a.display(),
                b.display()
            )
        );
        assert_eq!(first.len(), 1);
        assert_eq!(input.rest, strings(&["And then?"]));
    }

    #[test]
    fn images_become_blocks_after_the_text() {
        let tmp = tempfile::tempdir().unwrap();
        // Named like text: the bytes decide.
        std::fs::write(tmp.path().join("shot.txt"), PNG).unwrap();
        std::fs::write(tmp.path().join("p.jpg"), [0xff, 0xd8, 0xff, 0xe0, 1]).unwrap();
        std::fs::write(tmp.path().join("g"), b"GIF89a...").unwrap();
        std::fs::write(tmp.path().join("w"), b"RIFF\x10\0\0\0WEBPVP8 ").unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(home.join("h.png"), PNG).unwrap();
        let files = strings(&["shot.txt", "p.jpg", "g", "w", "~/h.png"]);
        let input = initial_input(&[], &files, None, tmp.path(), Some(&home)).unwrap();
        let first = input.first.unwrap();
        let kinds: Vec<&str> = first[1..]
            .iter()
            .map(|b| match b {
                ContentBlock::Image { mime_type, .. } => mime_type.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "image/png",
                "image/jpeg",
                "image/gif",
                "image/webp",
                "image/png"
            ]
        );
        let ContentBlock::Image { data, .. } = &first[1] else {
            panic!()
        };
        assert_eq!(data, "iVBORw0KGgoAAAANSUhEUg==");
        let text = text_of(&first);
        assert!(
            text.starts_with(&format!(
                "<file name=\"{}\"></file>\n",
                tmp.path().join("shot.txt").display()
            )),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                "<file name=\"{}\"></file>\n",
                home.join("h.png").display()
            )),
            "{text}"
        );
    }

    #[test]
    fn stdin_comes_first_then_a_blank_line() {
        let tmp = tempfile::tempdir().unwrap();
        let input = initial_input(
            &strings(&["review this"]),
            &[],
            Some("  diff --git a b\n+x\n\n"),
            tmp.path(),
            None,
        )
        .unwrap();
        assert_eq!(
            text_of(&input.first.unwrap()),
            "diff --git a b\n+x\n\nreview this"
        );
        // Nothing given: nothing to send.
        let none = initial_input(&[], &[], Some(" \n"), tmp.path(), None).unwrap();
        assert_eq!(none.first, None);
        assert!(none.rest.is_empty());
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let run = |file: &str| {
            initial_input(&[], &strings(&[file]), None, tmp.path(), None)
                .unwrap_err()
                .to_string()
        };
        let err = run("missing.md");
        assert!(err.starts_with("@missing.md: file not found: "), "{err}");
        assert!(err.contains("names a file to include"), "{err}");
        std::fs::create_dir(tmp.path().join("dir")).unwrap();
        assert!(run("dir").contains("is a directory"));
        std::fs::write(tmp.path().join("bin"), [0u8, 159, 146, 150]).unwrap();
        assert!(run("bin").contains("neither UTF-8 text nor a PNG"));
        let big = vec![b'x'; MAX_TEXT_FILE_BYTES as usize + 1];
        std::fs::write(tmp.path().join("big.txt"), &big).unwrap();
        let err = run("big.txt");
        assert!(err.contains("1024 KiB allowed for a text file"), "{err}");
        let mut huge = PNG.to_vec();
        huge.resize(MAX_IMAGE_FILE_BYTES as usize + 1, 0);
        std::fs::write(tmp.path().join("huge.png"), &huge).unwrap();
        let err = run("huge.png");
        assert!(err.contains("KiB allowed for an image"), "{err}");
    }
}
