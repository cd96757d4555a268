//! Scoped probes (SPEC S4, D2): a task launched with `scope` reads only inside those paths, and
//! within a read budget of [`PROBE_DIR_BYTES`] per directory and [`PROBE_FILE_LINES`] per file.
//!
//! Checked at dispatch, before the tool runs: `read`, `grep`, `find` and `ls` with a path
//! outside every scope path are refused (a symlink inside the scope that points outside is
//! outside: paths are compared after resolving links). A `read` is measured before it runs —
//! the lines its `offset`/`limit` would return that were not read before — and refused when
//! it would pass a budget, with what was covered so far, so the child can narrow the read or
//! stop and report. Only `read` spends the budget; `grep`/`find`/`ls` output is already capped
//! by the tools.
//!
//! The check reads a call's arguments with the tools' own rules (`Args`, `ReadArgs`), from the
//! normalised object the tool then runs with: a path the check did not see cannot reach the
//! tool, and arguments the tool would refuse are refused here, before anything is measured.
//! Not covered: a scoped probe's `bash` (a read-only probe's bash runs in the
//! kernel sandbox, which limits writes, not reads).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cadre_tools::args::Args;
use cadre_tools::read::ReadArgs;
use serde_json::Value;

use crate::handoff::contract::{PROBE_DIR_BYTES, PROBE_FILE_LINES};
use crate::handoff::refusal::RefusalReason;

/// The tools whose path argument must stay inside the scope.
const SCOPED_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// What a scoped probe has read so far.
#[derive(Debug, Default)]
pub(crate) struct ProbeScope {
    cwd: PathBuf,
    /// The scope paths, resolved (links followed where they exist).
    roots: Vec<PathBuf>,
    /// Per file: which lines were read.
    lines: HashMap<PathBuf, Vec<bool>>,
    /// Per directory: bytes of the lines read from its files.
    dir_bytes: HashMap<PathBuf, usize>,
}

impl ProbeScope {
    /// `None` when the task has no scope.
    pub(crate) fn new(cwd: &Path, scope: &[String]) -> Option<ProbeScope> {
        let roots: Vec<PathBuf> = scope
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| real(&cadre_tools::paths::resolve(s, cwd)))
            .collect();
        if roots.is_empty() {
            return None;
        }
        Some(ProbeScope {
            cwd: cwd.to_path_buf(),
            roots,
            ..ProbeScope::default()
        })
    }

    /// Check one call, given the arguments its tool will run with; `Err` is the refusal the
    /// child gets.
    pub(crate) fn check(&mut self, tool: &str, args: &Value) -> Result<(), ScopeRefusal> {
        if !SCOPED_TOOLS.contains(&tool) {
            return Ok(());
        }
        let invalid = |e: cadre_tools::args::ArgError| ScopeRefusal {
            reason: RefusalReason::InvalidArguments,
            message: format!("Invalid arguments for {tool}: {e}"),
        };
        let args = Args::parse(args.clone()).map_err(invalid)?;
        let (raw, window) = if tool == "read" {
            let read = ReadArgs::from_args(&args).map_err(invalid)?;
            let window = read.window();
            (read.path, Some(window))
        } else {
            (args.path_or_cwd().map_err(invalid)?, None)
        };
        let target = real(&cadre_tools::paths::resolve(&raw, &self.cwd));
        if !self.roots.iter().any(|r| target.starts_with(r)) {
            return Err(ScopeRefusal::outside(format!(
                "refused: `{raw}` is outside this probe's scope ({}). A scoped probe reads only \
                 inside its scope paths; report what you found instead of widening the search.",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        match window {
            Some(window) => self
                .check_read(&target, window)
                .map_err(|message| ScopeRefusal {
                    reason: RefusalReason::ReadBudget,
                    message,
                }),
            None => Ok(()),
        }
    }

    /// Spend the read budget of one `read` call of lines `start..end` (0-based, `None` = to
    /// the end), or refuse it.
    fn check_read(&mut self, file: &Path, window: (usize, Option<usize>)) -> Result<(), String> {
        // Only a regular file is measured. Anything else (a directory, a FIFO or a device, whose
        // open or read can block or never end) is left to the tool, which refuses it; so is an
        // unreadable file. Nothing is read from them.
        if !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
        let Ok(bytes) = std::fs::read(file) else {
            return Ok(());
        };
        let sizes: Vec<usize> = bytes
            .split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::len)
            .collect();
        let n = sizes.len();
        let (start, end) = window;
        let end = end.map_or(n, |e| e.min(n));
        if start >= end {
            return Ok(());
        }
        let covered = self
            .lines
            .entry(file.to_path_buf())
            .or_insert_with(|| vec![false; n]);
        if covered.len() != n {
            covered.resize(n, false);
        }
        let fresh: Vec<usize> = (start..end).filter(|i| !covered[*i]).collect();
        let already = covered.iter().filter(|c| **c).count();
        if already + fresh.len() > PROBE_FILE_LINES {
            return Err(format!(
                "refused: read budget of a scoped probe is {PROBE_FILE_LINES} lines per file. \
                 {}: covered so far: {}; this read asks for {} more (lines {}-{} of {n}). Read at \
                 most {} new lines with offset/limit, or stop and report what you found.",
                file.display(),
                ranges(covered),
                fresh.len(),
                start + 1,
                end,
                PROBE_FILE_LINES.saturating_sub(already)
            ));
        }
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let spent = self.dir_bytes.get(&dir).copied().unwrap_or(0);
        let more: usize = fresh.iter().map(|i| sizes[*i]).sum();
        if spent + more > PROBE_DIR_BYTES {
            let mut here: Vec<(&PathBuf, &Vec<bool>)> = self
                .lines
                .iter()
                .filter(|(f, c)| f.parent() == Some(&dir) && c.iter().any(|x| *x))
                .collect();
            here.sort();
            let mut read_here = String::new();
            for (f, c) in here {
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                let _ = write!(read_here, " {name} ({});", ranges(c));
            }
            return Err(format!(
                "refused: read budget of a scoped probe is {PROBE_DIR_BYTES} bytes per \
                 directory. {}: {spent} bytes read so far;{} this read would add {more}. Read less \
                 (offset/limit), or stop and report what you found.",
                dir.display(),
                read_here
            ));
        }
        for i in fresh {
            covered[i] = true;
        }
        *self.dir_bytes.entry(dir).or_insert(0) += more;
        Ok(())
    }
}

/// A refused call: why (for the receipt) and what the child is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeRefusal {
    pub reason: RefusalReason,
    pub message: String,
}

impl ScopeRefusal {
    fn outside(message: String) -> ScopeRefusal {
        ScopeRefusal {
            reason: RefusalReason::OutsideScope,
            message,
        }
    }
}

/// Read lines as ranges: `1-40, 100-120` (`none` when empty).
fn ranges(covered: &[bool]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < covered.len() {
        if covered[i] {
            let from = i;
            while i < covered.len() && covered[i] {
                i += 1;
            }
            out.push(if i - from == 1 {
                format!("line {}", from + 1)
            } else {
                format!("lines {}-{}", from + 1, i)
            });
        } else {
            i += 1;
        }
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

/// The path with links resolved: the longest existing ancestor canonicalised, the rest
/// appended (a path that does not exist yet cannot escape through a link that does not exist).
fn real(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("in/sub")).unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        let body: String = (1..=400).map(|i| format!("line {i}\n")).collect();
        std::fs::write(root.join("in/big.txt"), &body).unwrap();
        std::fs::write(root.join("in/small.txt"), "a\nb\n").unwrap();
        std::fs::write(root.join("out/secret.txt"), "s\n").unwrap();
        (dir, root)
    }

    #[test]
    fn no_scope_is_no_probe() {
        assert!(ProbeScope::new(Path::new("/"), &[]).is_none());
        assert!(ProbeScope::new(Path::new("/"), &["  ".into()]).is_none());
    }

    #[test]
    fn paths_outside_the_scope_are_refused_for_every_reading_tool() {
        let (_d, root) = setup();
        let mut s = ProbeScope::new(&root, &["in".into()]).unwrap();
        for tool in SCOPED_TOOLS {
            assert!(
                s.check(tool, &json!({"path": "in/small.txt"})).is_ok(),
                "{tool}"
            );
            assert!(s.check(tool, &json!({"path": "in/sub"})).is_ok(), "{tool}");
            for bad in ["out/secret.txt", "in/../out", "/etc/passwd", ".", "in2"] {
                let e = s.check(tool, &json!({"path": bad})).unwrap_err();
                assert_eq!(e.reason, RefusalReason::OutsideScope);
                assert!(
                    e.message.contains("outside this probe's scope"),
                    "{tool} {bad}: {e:?}"
                );
            }
        }
        // No path means the cwd, outside a narrower scope.
        assert!(s.check("grep", &json!({"pattern": "x"})).is_err());
        // Other tools are not this check's business.
        assert!(
            s.check("bash", &json!({"command": "cat out/secret.txt"}))
                .is_ok()
        );
    }

    #[test]
    fn a_link_inside_the_scope_to_outside_is_outside() {
        let (_d, root) = setup();
        std::os::unix::fs::symlink(root.join("out"), root.join("in/link")).unwrap();
        let mut s = ProbeScope::new(&root, &["in".into()]).unwrap();
        assert!(
            s.check("read", &json!({"path": "in/link/secret.txt"}))
                .is_err()
        );
        assert!(s.check("ls", &json!({"path": "in/link"})).is_err());
    }

    #[test]
    fn a_file_gets_300_lines_and_the_refusal_says_what_was_covered() {
        let (_d, root) = setup();
        let mut s = ProbeScope::new(&root, &["in".into()]).unwrap();
        // Whole file (400 lines) at once: refused.
        let e = s.check("read", &json!({"path": "in/big.txt"})).unwrap_err();
        assert_eq!(e.reason, RefusalReason::ReadBudget);
        let e = e.message;
        assert!(e.contains("300 lines per file"), "{e}");
        assert!(e.contains("covered so far: none"), "{e}");
        s.check("read", &json!({"path": "in/big.txt", "limit": 200}))
            .unwrap();
        // Re-reading covered lines costs nothing.
        s.check(
            "read",
            &json!({"path": "in/big.txt", "offset": 1, "limit": 50}),
        )
        .unwrap();
        s.check(
            "read",
            &json!({"path": "in/big.txt", "offset": 151, "limit": 150}),
        )
        .unwrap();
        let e = s
            .check(
                "read",
                &json!({"path": "in/big.txt", "offset": 301, "limit": 10}),
            )
            .unwrap_err()
            .message;
        assert!(e.contains("lines 1-300"), "{e}");
        assert!(e.contains("at most 0 new lines"), "{e}");
        // Past the end reads nothing and is not refused.
        s.check("read", &json!({"path": "in/big.txt", "offset": 900}))
            .unwrap();
    }

    #[test]
    fn a_directory_gets_50000_bytes() {
        let (_d, root) = setup();
        let line = format!("{}\n", "x".repeat(999));
        for f in ["a", "b"] {
            std::fs::write(root.join(format!("in/sub/{f}.txt")), line.repeat(30)).unwrap();
        }
        let mut s = ProbeScope::new(&root, &["in/sub".into()]).unwrap();
        s.check("read", &json!({"path": "in/sub/a.txt"})).unwrap();
        s.check("read", &json!({"path": "in/sub/b.txt", "limit": 20}))
            .unwrap();
        let e = s
            .check("read", &json!({"path": "in/sub/b.txt", "offset": 21}))
            .unwrap_err()
            .message;
        assert!(e.contains("50000 bytes per directory"), "{e}");
        assert!(e.contains("50000 bytes read so far"), "{e}");
        assert!(e.contains("a.txt (lines 1-30)"), "{e}");
        assert!(e.contains("b.txt (lines 1-20)"), "{e}");
    }

    /// The check reads every argument as the tools do, so no spelling of a call makes the
    /// two disagree.
    #[test]
    fn the_check_reads_arguments_as_the_tools_do() {
        let (_d, root) = setup();
        let mut s = ProbeScope::new(&root, &["in".into()]).unwrap();
        // A JSON-encoded object is the object the tool reads, whatever the path's spelling.
        for tool in SCOPED_TOOLS {
            let e = s
                .check(tool, &json!("{\"path\": \"/etc/passwd\"}"))
                .unwrap_err();
            assert_eq!(e.reason, RefusalReason::OutsideScope, "{tool}: {e:?}");
            assert!(
                s.check(tool, &json!("{\"path\": \"in\"}")).is_ok(),
                "{tool}"
            );
        }
        // A path that is not a string is refused, not read as the cwd (which the tool would
        // not use either).
        for path in [json!(["/etc"]), json!(7), json!({"p": "/etc"})] {
            for tool in SCOPED_TOOLS {
                let e = s.check(tool, &json!({ "path": path })).unwrap_err();
                assert_eq!(e.reason, RefusalReason::InvalidArguments, "{tool} {path}");
                assert!(
                    e.message
                        .starts_with(&format!("Invalid arguments for {tool}: "))
                );
            }
        }
        // A null path is an absent one for both: the cwd, outside the scope.
        let e = s.check("ls", &json!({"path": null})).unwrap_err();
        assert_eq!(e.reason, RefusalReason::OutsideScope);
        // A key named twice is ambiguous: refused rather than guessed.
        let e = s
            .check(
                "read",
                &json!(r#"{"path": "in/small.txt", "path": "/etc/passwd"}"#),
            )
            .unwrap_err();
        assert_eq!(e.reason, RefusalReason::InvalidArguments, "{e:?}");
        // Arguments that are not an object at all.
        for bad in [json!("{\"path\": "), json!([1]), json!(true)] {
            let e = s.check("grep", &bad).unwrap_err();
            assert_eq!(e.reason, RefusalReason::InvalidArguments, "{bad}");
        }
    }

    #[test]
    fn offsets_and_limits_are_read_as_the_read_tool_reads_them() {
        let (_d, root) = setup();
        let mut s = ProbeScope::new(&root, &["in".into()]).unwrap();
        s.check("read", &json!({"path": "in/big.txt", "limit": 300}))
            .unwrap();
        // As strings they are the same numbers: lines 301-310 are new and past the budget
        // (read as absent, they were lines 1-10, already covered).
        let e = s
            .check(
                "read",
                &json!({"path": "in/big.txt", "offset": "301", "limit": "10"}),
            )
            .unwrap_err();
        assert_eq!(e.reason, RefusalReason::ReadBudget);
        assert!(e.message.contains("lines 301-310"), "{}", e.message);
        // The same through a JSON-encoded object.
        let e = s
            .check(
                "read",
                &json!("{\"path\": \"in/big.txt\", \"offset\": 301, \"limit\": \"10\"}"),
            )
            .unwrap_err();
        assert_eq!(e.reason, RefusalReason::ReadBudget);
        // Values the tool refuses are refused here too, before anything is measured.
        for (offset, limit) in [
            (json!(1.5), json!(1)),
            (json!(-1), json!(1)),
            (json!("x"), json!(1)),
            (json!(1), json!(0)),
            (json!(1), json!("all")),
            (json!(1), json!(-5)),
        ] {
            let e = s
                .check(
                    "read",
                    &json!({"path": "in/big.txt", "offset": offset, "limit": limit}),
                )
                .unwrap_err();
            assert_eq!(
                e.reason,
                RefusalReason::InvalidArguments,
                "{offset} {limit}"
            );
        }
        // Offset 0 reads from line 1, as the tool does.
        s.check(
            "read",
            &json!({"path": "in/big.txt", "offset": 0, "limit": 300}),
        )
        .unwrap();
    }

    #[test]
    fn ranges_read_as_written() {
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[true, true, false, true]), "lines 1-2, line 4");
    }
}
