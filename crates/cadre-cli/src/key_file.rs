//! `--api-key-file PATH`: the key of `--api-key`, read from a file instead of the command
//! line. A process's arguments are in `/proc/<pid>/cmdline`, which other processes can read
//! from the moment it starts; cadre overwrites `--api-key` there once it has parsed its
//! arguments (`argv.rs`), but not before, so a key given as an argument can be read in that
//! window (and is in the shell's history). A file the user alone can read is not shown anywhere.
//!
//! The file must be a regular file (a FIFO would block, a device be read without end) of at
//! most [`MAX_KEY_FILE_BYTES`], holding one line: the key, without its trailing newline.

use std::io::Read;
use std::path::Path;

use anyhow::{Result, bail};

use crate::args::{Cli, Command, Secret};

/// The largest key file read.
pub const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// Read the `--api-key-file` of the command line into its `--api-key` (which the two flags
/// share: clap refuses both at once). The path stays, so messages name the flag given.
pub fn resolve(cli: &mut Cli) -> Result<()> {
    let (key, file) = match &mut cli.command {
        Some(Command::Mcp(args)) => (&mut args.serve.api_key, &args.serve.api_key_file),
        Some(Command::Acp(args)) => (&mut args.serve.api_key, &args.serve.api_key_file),
        _ => (&mut cli.run.api_key, &cli.run.api_key_file),
    };
    if let Some(path) = file {
        *key = Some(read_key_file(path)?);
    }
    Ok(())
}

/// The key in `path`: its one line without the line end.
pub fn read_key_file(path: &Path) -> Result<Secret> {
    let shown = path.display();
    // Not blocking on a FIFO's open and not taking a terminal: what was opened is checked
    // before anything is read.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
    };
    let file = match file {
        Ok(f) => f,
        Err(e) => bail!("cannot read --api-key-file {shown}: {e}"),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => bail!("cannot read --api-key-file {shown}: {e}"),
    };
    if !meta.is_file() {
        bail!("--api-key-file {shown} is not a regular file");
    }
    let mut bytes = Vec::new();
    if let Err(e) = file.take(MAX_KEY_FILE_BYTES + 1).read_to_end(&mut bytes) {
        bail!("cannot read --api-key-file {shown}: {e}");
    }
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        bail!(
            "--api-key-file {shown} is over {} KiB: a key file holds the key alone",
            MAX_KEY_FILE_BYTES / 1024
        );
    }
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("--api-key-file {shown} is not text");
    };
    let key = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(&text);
    if key.trim().is_empty() {
        bail!("--api-key-file {shown} is empty");
    }
    if key.contains(['\n', '\r']) {
        bail!("--api-key-file {shown} holds more than one line: a key file holds the key alone");
    }
    Ok(Secret::new(key.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_files_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        for (content, key) in [
            ("sk-one\n", "sk-one"),
            ("sk-two", "sk-two"),
            ("sk-three\r\n", "sk-three"),
        ] {
            std::fs::write(&path, content).unwrap();
            assert_eq!(read_key_file(&path).unwrap().expose(), key);
        }
    }

    #[test]
    fn unusable_files_are_named_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let err = |path: &Path| read_key_file(path).unwrap_err().to_string();
        let missing = dir.path().join("missing");
        assert!(
            err(&missing).contains("cannot read --api-key-file"),
            "{}",
            err(&missing)
        );
        let empty = dir.path().join("empty");
        for content in ["", "\n", "  \n"] {
            std::fs::write(&empty, content).unwrap();
            assert!(err(&empty).ends_with("is empty"), "{}", err(&empty));
        }
        let lines = dir.path().join("lines");
        std::fs::write(&lines, "KEY=sk-1\nOTHER=2\n").unwrap();
        assert!(
            err(&lines).contains("more than one line"),
            "{}",
            err(&lines)
        );
        let big = dir.path().join("big");
        std::fs::write(&big, "k".repeat(MAX_KEY_FILE_BYTES as usize + 1)).unwrap();
        assert!(err(&big).contains("over 64 KiB"), "{}", err(&big));
        assert!(err(dir.path()).contains("not a regular file"));
        // Neither a device read without end nor a FIFO nobody writes to holds the run.
        assert!(err(Path::new("/dev/zero")).contains("not a regular file"));
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(err(&fifo).contains("not a regular file"), "{}", err(&fifo));
    }
}
