//! The bearer token of `cadre mcp --http`: loopback is reachable by every local user, so
//! every request must carry `Authorization: Bearer <token>`.
//!
//! The token is 32 random bytes from the OS, new at every start (or `CADRE_MCP_HTTP_TOKEN`
//! when set), printed once on stderr and written to `<CADRE_HOME>/mcp-http/<port>.token`
//! (mode 0600, removed when the server stops), where a client's configuration can read it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Sets the token instead of a random one (a client configured once).
pub const TOKEN_VAR: &str = "CADRE_MCP_HTTP_TOKEN";

/// The shortest token accepted from [`TOKEN_VAR`].
const MIN_TOKEN_CHARS: usize = 32;

pub struct Token {
    value: String,
    /// Whether it came from the environment (then it is not printed).
    from_env: bool,
}

impl Token {
    /// [`TOKEN_VAR`] when set, else a new random token.
    pub fn new() -> Result<Token> {
        if let Ok(value) = std::env::var(TOKEN_VAR) {
            check_token(&value)?;
            return Ok(Token {
                value,
                from_env: true,
            });
        }
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .context("cannot read random bytes for the HTTP token")?;
        let value = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Token {
            value,
            from_env: false,
        })
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    pub fn is_from_env(&self) -> bool {
        self.from_env
    }

    /// Whether an `Authorization` header value carries this token (compared in constant
    /// time, so the answer's timing tells nothing about how much of a guess was right).
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(header) = authorization else {
            return false;
        };
        let Some(given) = bearer(header) else {
            return false;
        };
        constant_time_eq(given, self.value.as_bytes())
    }
}

/// The credentials of a `Bearer` authorization (the scheme is case-insensitive).
fn bearer(header: &[u8]) -> Option<&[u8]> {
    let scheme = header.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let rest = header.get(7..)?;
    let start = rest.iter().position(|b| *b != b' ')?;
    let end = rest.iter().rposition(|b| *b != b' ')? + 1;
    rest.get(start..end)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn check_token(value: &str) -> Result<()> {
    if value.chars().count() < MIN_TOKEN_CHARS || !value.chars().all(|c| c.is_ascii_graphic()) {
        bail!(
            "{TOKEN_VAR} must be at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces"
        );
    }
    Ok(())
}

/// Where the token of the server on `port` is written.
pub fn token_path(cadre_home: &Path, port: u16) -> PathBuf {
    cadre_home.join("mcp-http").join(format!("{port}.token"))
}

/// Write the token, readable by its owner only.
pub fn write_token(path: &Path, token: &str) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Written aside and renamed: a reader sees no file or the whole token, and a file left
    // by an earlier server is replaced, never reused with its permissions.
    let aside = path.with_extension("token.new");
    let _ = std::fs::remove_file(&aside);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&aside)
        .with_context(|| format!("cannot write {}", aside.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict {}", aside.display()))?;
    file.write_all(token.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .with_context(|| format!("cannot write {}", aside.display()))?;
    std::fs::rename(&aside, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn token(value: &str) -> Token {
        Token {
            value: value.into(),
            from_env: false,
        }
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let t = token("abc123");
        assert!(t.admits(Some(b"Bearer abc123")));
        assert!(t.admits(Some(b"bearer  abc123 ")));
        assert!(!t.admits(None));
        assert!(!t.admits(Some(b"Bearer abc124")));
        assert!(!t.admits(Some(b"Bearer abc1234")));
        assert!(!t.admits(Some(b"Basic abc123")));
        assert!(!t.admits(Some(b"Bearer ")));
        assert!(!t.admits(Some(b"abc123")));
    }

    #[test]
    fn a_random_token_is_long_and_new_each_time() {
        // A token set in the environment is not random.
        if std::env::var(TOKEN_VAR).is_ok() {
            return;
        }
        let (a, b) = (Token::new().unwrap(), Token::new().unwrap());
        assert_eq!(a.value().len(), 64);
        assert_ne!(a.value(), b.value());
    }

    #[test]
    fn the_token_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = token_path(dir.path(), 8765);
        write_token(&path, "t0k").unwrap();
        write_token(&path, "t0k2").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "t0k2\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(check_token("short").is_err());
        assert!(check_token(&"x".repeat(32)).is_ok());
        assert!(check_token(&format!("{} y", "x".repeat(32))).is_err());
    }
}
