//! Which session file a run uses: the session directory (`--session-dir` and its fallbacks) and
//! the file `--session <path|id>` names, by Pi's rules.
//!
//! `--session` takes a path when the argument looks like one (it contains `/` or `\`, or ends
//! in `.jsonl`) or names an existing file; otherwise it is a prefix of a session id, matched
//! against the headers of the session directory's files first, then against every project's
//! sessions under `CADRE_HOME/sessions`. Unlike Pi, which takes the newest of several matches,
//! a prefix that matches more than one session is an error listing them: continuing the wrong
//! conversation is worse than typing two more characters. An id that matches nothing is an
//! error too; no file is ever created under a name that was meant as an id.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::paths::session_dir_for_cwd;

/// The variable that sets where sessions are stored when `--session-dir` is not given (Pi's
/// `PI_CODING_AGENT_SESSION_DIR`).
pub const SESSION_DIR_VAR: &str = "CADRE_SESSION_DIR";

/// Longest header line read when matching ids; a real header is a few hundred bytes.
const HEADER_LIMIT: u64 = 64 * 1024;

/// Most candidates named in an ambiguity error.
const CANDIDATES_SHOWN: usize = 10;

/// Where the session directory of a run may come from, strongest first.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionDirSources<'a> {
    /// `--session-dir`, as given (the shell has expanded `~` already).
    pub flag: Option<&'a Path>,
    /// [`SESSION_DIR_VAR`].
    pub env: Option<&'a str>,
    /// The settings' `sessionDir`.
    pub settings: Option<&'a str>,
    /// The user's home directory, for a leading `~` in the variable or the setting.
    pub user_home: Option<&'a Path>,
}

/// The directory the sessions of a run in `cwd` are stored in and looked up from (new files,
/// `--continue`, id prefixes): `--session-dir`, else [`SESSION_DIR_VAR`], else the settings'
/// `sessionDir`, each used as the directory itself, as in Pi; else
/// `CADRE_HOME/sessions/--<cwd>--`. A relative directory is taken from `cwd`; blank values
/// count as unset.
pub fn session_dir(sources: &SessionDirSources<'_>, cadre_home: &Path, cwd: &Path) -> PathBuf {
    let chosen = sources
        .flag
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .or_else(|| {
            [sources.env, sources.settings]
                .into_iter()
                .flatten()
                .map(str::trim)
                .find(|s| !s.is_empty())
                .map(|s| expand_tilde(s, sources.user_home))
        });
    match chosen {
        Some(dir) => cwd.join(dir),
        None => session_dir_for_cwd(cadre_home, cwd),
    }
}

/// `~` and `~/…` are the home directory, as Pi expands them; anything else is kept.
fn expand_tilde(raw: &str, home: Option<&Path>) -> PathBuf {
    match (raw, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (raw, Some(home)) if raw.starts_with("~/") => home.join(&raw[2..]),
        _ => PathBuf::from(raw),
    }
}

/// The session file `--session` names. A path argument is kept as given (a relative one is
/// relative to the run's `cwd`), so messages name the file as the user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionArg {
    /// A file with content: continue it (loading refuses one that is not a session).
    Existing(PathBuf),
    /// A path with no file, or an empty file (made with `mktemp`): start a new session there.
    New(PathBuf),
}

/// A session an id prefix matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCandidate {
    pub id: String,
    pub path: PathBuf,
    /// The working directory recorded in its header.
    pub cwd: String,
}

/// Why `--session` names no usable file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionArgError {
    #[error("--session needs a session file or the start of a session id")]
    Empty,
    #[error(
        "no session found matching '{arg}' (looked in {} and every project's sessions); pass a \
         path containing `/` or ending in `.jsonl` to start a new session file",
        .dir.display()
    )]
    NotFound { arg: String, dir: PathBuf },
    #[error(
        "session id '{arg}' is ambiguous, it starts {} sessions: {}; give more of the id",
        .candidates.len(),
        candidate_list(.candidates)
    )]
    Ambiguous {
        arg: String,
        candidates: Vec<SessionCandidate>,
    },
    #[error(
        "session '{arg}' belongs to another project ({}): run cadre there, or pass its file to \
         continue it here: --session {}",
        .candidate.cwd,
        .candidate.path.display()
    )]
    OtherProject {
        arg: String,
        candidate: SessionCandidate,
    },
}

fn candidate_list(candidates: &[SessionCandidate]) -> String {
    let mut shown: Vec<String> = candidates
        .iter()
        .take(CANDIDATES_SHOWN)
        .map(|c| format!("{} ({})", c.id, c.path.display()))
        .collect();
    if candidates.len() > CANDIDATES_SHOWN {
        shown.push(format!("and {} more", candidates.len() - CANDIDATES_SHOWN));
    }
    shown.join(", ")
}

/// Resolve `--session <arg>` for a run in `cwd`, whose sessions are in `session_dir` (see
/// [`session_dir`]); `all_sessions` is `CADRE_HOME/sessions`, whose project directories are
/// searched when the run's own has no match.
pub fn resolve_session_arg(
    arg: &str,
    cwd: &Path,
    session_dir: &Path,
    all_sessions: &Path,
) -> Result<SessionArg, SessionArgError> {
    if arg.trim().is_empty() {
        return Err(SessionArgError::Empty);
    }
    let as_path = cwd.join(arg);
    if looks_like_path(arg) || as_path.is_file() {
        let empty = std::fs::metadata(&as_path).is_ok_and(|m| m.is_file() && m.len() == 0);
        let given = PathBuf::from(arg);
        return Ok(if as_path.exists() && !empty {
            SessionArg::Existing(given)
        } else {
            SessionArg::New(given)
        });
    }
    let local = matching_sessions(&[session_dir.to_path_buf()], arg);
    if let Some(found) = one_match(arg, local)? {
        return Ok(SessionArg::Existing(found.path));
    }
    let dirs: Vec<PathBuf> = subdirectories(all_sessions)
        .into_iter()
        .filter(|d| !same_dir(d, session_dir))
        .collect();
    match one_match(arg, matching_sessions(&dirs, arg))? {
        Some(found) if Path::new(&found.cwd) == cwd => Ok(SessionArg::Existing(found.path)),
        Some(found) => Err(SessionArgError::OtherProject {
            arg: arg.to_string(),
            candidate: found,
        }),
        None => Err(SessionArgError::NotFound {
            arg: arg.to_string(),
            dir: session_dir.to_path_buf(),
        }),
    }
}

/// Pi's test for a path: a separator, or the session file extension.
fn looks_like_path(arg: &str) -> bool {
    arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl")
}

/// The only match, the exact id among several, or the ambiguity error.
fn one_match(
    arg: &str,
    mut found: Vec<SessionCandidate>,
) -> Result<Option<SessionCandidate>, SessionArgError> {
    if let Some(exact) = found.iter().position(|c| c.id == arg) {
        return Ok(Some(found.swap_remove(exact)));
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => {
            found.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.path.cmp(&b.path)));
            Err(SessionArgError::Ambiguous {
                arg: arg.to_string(),
                candidates: found,
            })
        }
    }
}

/// The sessions of `dirs` whose header id starts with `prefix`.
/// The session file in `dir` whose header carries exactly `id` (an ACP `session/load`: an
/// editor hands back ids cadre gave it). Unlike `--session`, no prefix, no other directory and
/// no file named by the argument: only this directory's regular `.jsonl` files are opened, so
/// a repository's files are never read or written as sessions. cadre names files
/// `<time>_<id>.jsonl`, so those are read first.
pub fn find_session_by_id(dir: &Path, id: &str) -> Option<PathBuf> {
    let mut candidates = session_files(dir);
    let suffix = format!("_{id}.jsonl");
    candidates.sort_by_key(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(&suffix))
    });
    candidates
        .into_iter()
        .find(|p| read_header(p).is_some_and(|c| c.id == id))
}

/// The sessions of `dir`, newest first (by modification time), at most `limit`: the
/// interactive mode's `/resume` list. Only regular `.jsonl` files whose first line is a
/// session header are listed; the headers of at most `limit * 4` newest files are read, so a
/// directory of thousands of sessions costs a bounded amount.
pub fn recent_sessions(dir: &Path, limit: usize) -> Vec<(SessionCandidate, SystemTime)> {
    let mut files: Vec<(PathBuf, SystemTime)> = session_files(dir)
        .into_iter()
        .filter_map(|p| {
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((p, modified))
        })
        .collect();
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    files
        .into_iter()
        .take(limit.saturating_mul(4))
        .filter_map(|(p, modified)| Some((read_header(&p)?, modified)))
        .take(limit)
        .collect()
}

fn matching_sessions(dirs: &[PathBuf], prefix: &str) -> Vec<SessionCandidate> {
    dirs.iter()
        .flat_map(|dir| session_files(dir))
        .filter_map(|path| read_header(&path))
        .filter(|c| c.id.starts_with(prefix))
        .collect()
}

/// The `.jsonl` files of `dir`; none when it cannot be read.
fn session_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect()
}

fn subdirectories(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The id and cwd of a session file's header line; `None` for anything that is not a session.
fn read_header(path: &Path) -> Option<SessionCandidate> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(HEADER_LIMIT))
        .read_until(b'\n', &mut line)
        .ok()?;
    let header: serde_json::Value = serde_json::from_slice(&line).ok()?;
    if header.get("type")?.as_str()? != "session" {
        return None;
    }
    Some(SessionCandidate {
        id: header.get("id")?.as_str()?.to_string(),
        path: path.to_path_buf(),
        cwd: header
            .get("cwd")
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_string(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    struct Home {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        cwd: PathBuf,
        sessions: PathBuf,
    }

    fn home() -> Home {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let cwd = root.join("project");
        std::fs::create_dir_all(&cwd).unwrap();
        Home {
            sessions: root.join("cadre/sessions"),
            root,
            cwd,
            _tmp: tmp,
        }
    }

    fn session(dir: &Path, id: &str, cwd: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("2024-12-03T14-00-00-000Z_{id}.jsonl"));
        let header = serde_json::json!({"type":"session","version":3,"id":id,
            "timestamp":"2024-12-03T14:00:00.000Z","cwd":cwd});
        std::fs::write(&path, format!("{header}\n")).unwrap();
        path
    }

    #[test]
    fn session_dir_follows_pis_precedence() {
        let home = Path::new("/h/.cadre");
        let cwd = Path::new("/work/p");
        let user = Path::new("/u");
        let none = SessionDirSources::default();
        assert_eq!(
            session_dir(&none, home, cwd),
            PathBuf::from("/h/.cadre/sessions/--work-p--")
        );
        let settings = SessionDirSources {
            settings: Some("~/s"),
            user_home: Some(user),
            ..none
        };
        assert_eq!(session_dir(&settings, home, cwd), PathBuf::from("/u/s"));
        let env = SessionDirSources {
            env: Some("rel/dir"),
            ..settings
        };
        assert_eq!(
            session_dir(&env, home, cwd),
            PathBuf::from("/work/p/rel/dir")
        );
        let flag = SessionDirSources {
            flag: Some(Path::new("/flag")),
            ..env
        };
        assert_eq!(session_dir(&flag, home, cwd), PathBuf::from("/flag"));
        // Blank values are unset; `~` alone is the home directory.
        let blank = SessionDirSources {
            flag: Some(Path::new("")),
            env: Some("  "),
            settings: Some("~"),
            user_home: Some(user),
        };
        assert_eq!(session_dir(&blank, home, cwd), PathBuf::from("/u"));
    }

    #[test]
    fn paths_are_used_as_they_are() {
        let h = home();
        let dir = h.sessions.join("x");
        // Missing or empty: a new session there; with content: that file.
        assert_eq!(
            resolve_session_arg("new.jsonl", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::New("new.jsonl".into()))
        );
        assert_eq!(
            resolve_session_arg("sub/s", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::New("sub/s".into()))
        );
        let empty = h.root.join("empty");
        std::fs::write(&empty, "").unwrap();
        let arg = empty.to_str().unwrap();
        assert_eq!(
            resolve_session_arg(arg, &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::New(empty.clone()))
        );
        std::fs::write(&empty, "x").unwrap();
        assert_eq!(
            resolve_session_arg(arg, &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::Existing(empty))
        );
        // A bare name is a path when such a file exists.
        std::fs::write(h.cwd.join("mysession"), "{}").unwrap();
        assert_eq!(
            resolve_session_arg("mysession", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::Existing("mysession".into()))
        );
    }

    #[test]
    fn id_prefixes_match_the_session_directory_first() {
        let h = home();
        let dir = session_dir_for_cwd(&h.root.join("cadre"), &h.cwd);
        let a = session(&dir, "0193aaaa-1111", &h.cwd);
        let b = session(&dir, "0193aabb-2222", &h.cwd);
        std::fs::write(dir.join("junk.jsonl"), "not json\n").unwrap();
        assert_eq!(
            resolve_session_arg("0193aaaa", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::Existing(a.clone()))
        );
        assert_eq!(
            resolve_session_arg("0193aabb-2222", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::Existing(b.clone()))
        );
        match resolve_session_arg("0193aa", &h.cwd, &dir, &h.sessions) {
            Err(e @ SessionArgError::Ambiguous { .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("0193aaaa-1111") && text.contains("0193aabb-2222"),
                    "{text}"
                );
                assert!(text.contains("starts 2 sessions"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        // An exact id wins over longer ids it is a prefix of.
        let exact = session(&dir, "0193aa", &h.cwd);
        assert_eq!(
            resolve_session_arg("0193aa", &h.cwd, &dir, &h.sessions),
            Ok(SessionArg::Existing(exact))
        );
    }

    #[test]
    fn unknown_ids_are_errors_and_create_nothing() {
        let h = home();
        let dir = session_dir_for_cwd(&h.root.join("cadre"), &h.cwd);
        session(&dir, "0193aaaa", &h.cwd);
        let err = resolve_session_arg("ffff", &h.cwd, &dir, &h.sessions).unwrap_err();
        assert!(matches!(err, SessionArgError::NotFound { .. }));
        assert!(
            err.to_string().contains("no session found matching 'ffff'"),
            "{err}"
        );
        assert!(!h.cwd.join("ffff").exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert_eq!(
            resolve_session_arg(" ", &h.cwd, &dir, &h.sessions),
            Err(SessionArgError::Empty)
        );
    }

    #[test]
    fn other_projects_are_searched_and_named() {
        let h = home();
        let here = session_dir_for_cwd(&h.root.join("cadre"), &h.cwd);
        std::fs::create_dir_all(&here).unwrap();
        let elsewhere = h.root.join("other");
        let theirs = session(
            &session_dir_for_cwd(&h.root.join("cadre"), &elsewhere),
            "beef-1",
            &elsewhere,
        );
        match resolve_session_arg("beef", &h.cwd, &here, &h.sessions) {
            Err(e @ SessionArgError::OtherProject { .. }) => {
                let text = e.to_string();
                assert!(text.contains(elsewhere.to_str().unwrap()), "{text}");
                assert!(text.contains(theirs.to_str().unwrap()), "{text}");
            }
            other => panic!("{other:?}"),
        }
        // With --session-dir elsewhere, this project's own sessions are found there too.
        let mine = session(&here, "cafe-2", &h.cwd);
        let custom = h.root.join("custom");
        std::fs::create_dir_all(&custom).unwrap();
        assert_eq!(
            resolve_session_arg("cafe", &h.cwd, &custom, &h.sessions),
            Ok(SessionArg::Existing(mine))
        );
    }

    #[test]
    fn by_id_only_the_whole_id_of_a_regular_session_file_is_found() {
        let header = |id: &str| {
            format!("{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"cwd\":\"/p\"}}\n")
        };
        let find = find_session_by_id;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("t_abc-123.jsonl"), header("abc-123")).unwrap();
        std::fs::write(d.join("other.jsonl"), header("zzz")).unwrap();
        std::fs::write(d.join("notes.jsonl"), "not a session\n").unwrap();
        assert_eq!(find(d, "abc-123"), Some(d.join("t_abc-123.jsonl")));
        assert_eq!(find(d, "zzz"), Some(d.join("other.jsonl")));
        assert_eq!(find(d, "abc"), None, "a prefix is not an id");
        assert_eq!(find(d, "notes"), None);
        std::os::unix::fs::symlink(d.join("t_abc-123.jsonl"), d.join("t_lnk.jsonl")).unwrap();
        std::fs::remove_file(d.join("t_abc-123.jsonl")).unwrap();
        std::fs::write(d.join("target.jsonl.txt"), header("lnk")).unwrap();
        std::os::unix::fs::symlink(d.join("target.jsonl.txt"), d.join("x_lnk.jsonl")).unwrap();
        assert_eq!(find(d, "lnk"), None, "links are not followed");
        assert_eq!(find(&d.join("missing"), "abc-123"), None);
    }
}
