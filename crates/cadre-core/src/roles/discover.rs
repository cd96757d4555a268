//! The layered roster of roles (SPEC T2, T3, T4).
//!
//! Sources, lowest precedence first (a later source replaces the **whole** same-name definition
//! of an earlier one, and every replacement is reported):
//!
//! 1. built-in roles;
//! 2. user: `~/.claude/agents` (Claude Code keys), `~/.pi/agent/agents`, `CADRE_HOME/agents` —
//!    cadre's own directory is the highest of the three;
//! 3. project, only when the project is trusted: each directory from the project root (git root)
//!    down to the working directory, nearest last so **nearest wins**; within one directory
//!    `.claude/agents` < `.pi/agents` < `.cadre/agents`. Distance decides before kind: a
//!    `.claude/agents` file in the working directory beats a `.cadre/agents` file at the root.
//!
//! Each source directory is read recursively (Claude Code collections sort their agents into
//! subfolders); every file of the tree belongs to the one source, so two files anywhere in it
//! claiming one name block that name. `.claude` directories are read in the Claude Code dialect,
//! `.pi` ones in the Pi dialect, cadre's own in the cadre dialect (see `parse.rs`).
//!
//! Names are matched through [`canonical_key`]: case-insensitive, built-in aliases resolved.
//!
//! Fail closed: a malformed file blocks its name from its source upward — it does not fall back
//! to a lower definition, though a valid file in a higher source may still replace it. Two files
//! of one source claiming one name block that name too (neither is preferred). A source
//! directory that exists but cannot be listed blocks every name defined below it, since the
//! overrides it was meant to apply are unknown. A missing directory is normal.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::builtin::{aliases, builtin_roles, canonical_key};
use super::parse::{Dialect, Finding, MAX_FILE_BYTES, Parsed, Problem, RoleDef, parse_role_file};
use cadre_llm::registry::{ProcessEnv, home_dir};

use crate::config::{CadreHome, TrustStore, project_root};

/// Where a definition comes from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Builtin,
    User,
    Project,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Builtin => "built-in",
            Layer::User => "user",
            Layer::Project => "project",
        })
    }
}

/// One definition's place: its layer and file (`None` for a built-in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub layer: Layer,
    pub file: Option<PathBuf>,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{} ({})", file.display(), self.layer),
            None => write!(f, "{}", self.layer),
        }
    }
}

/// A role as the roster resolved it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRole {
    pub def: RoleDef,
    pub layer: Layer,
    /// `None` for a built-in.
    pub file: Option<PathBuf>,
    /// The lower definitions this one replaced, lowest first.
    pub overrides: Vec<Origin>,
}

impl ResolvedRole {
    pub fn origin(&self) -> Origin {
        Origin {
            layer: self.layer,
            file: self.file.clone(),
        }
    }
}

/// A name no definition may answer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedName {
    pub name: String,
    pub layer: Layer,
    /// The malformed file, or the unreadable directory.
    pub file: PathBuf,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// A definition replaced a lower one.
    Override,
    /// A file could not be used.
    Malformed,
    /// A directory exists but cannot be listed.
    UnreadableDir,
    /// Project definitions were skipped because the project is not trusted.
    Untrusted,
    /// Worth knowing; nothing was refused.
    Note,
}

/// Something discovery reports (for `cadre doctor` and start-up warnings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub file: Option<PathBuf>,
    /// The 1-based line of `file` the problem is on, when one line is at fault.
    pub line: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    /// Whether this diagnostic means something was refused (`cadre doctor` exits non-zero).
    pub fn is_error(&self) -> bool {
        matches!(
            self.kind,
            DiagnosticKind::Malformed | DiagnosticKind::UnreadableDir
        )
    }
}

/// Why a name cannot be launched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleLookupError {
    #[error("unknown agent type `{name}`; known: {}", known.join(", "))]
    Unknown { name: String, known: Vec<String> },
    #[error("agent type `{name}` is unavailable: {reason} ({})", file.display())]
    Blocked {
        name: String,
        reason: String,
        file: PathBuf,
    },
}

/// Whether project definitions may load (T4), decided by the caller from the trust store and
/// `--trust`; children pass on their parent's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectTrust {
    Trusted,
    Untrusted { reason: String },
}

impl ProjectTrust {
    /// Trusted when `flag` (`--trust`) is set or the store covers `project_root`.
    pub fn from_store(store: &TrustStore, project_root: &Path, flag: bool) -> ProjectTrust {
        if flag || store.is_trusted(project_root) {
            ProjectTrust::Trusted
        } else {
            ProjectTrust::Untrusted {
                reason: format!(
                    "project {} is not trusted (run `cadre trust {}` or pass --trust); its agents, skills and settings are ignored",
                    project_root.display(),
                    project_root.display()
                ),
            }
        }
    }

    pub fn is_trusted(&self) -> bool {
        matches!(self, ProjectTrust::Trusted)
    }
}

/// What discovery needs to know.
#[derive(Debug, Clone)]
pub struct DiscoverOptions {
    pub cadre_home: CadreHome,
    /// The user's home directory, for `~/.pi` and `~/.claude`; `None` skips them.
    pub home_dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub trust: ProjectTrust,
}

impl DiscoverOptions {
    /// Options with the user's home directory taken from the process environment (`HOME`).
    pub fn new(cadre_home: CadreHome, cwd: impl Into<PathBuf>, trust: ProjectTrust) -> Self {
        DiscoverOptions {
            cadre_home,
            home_dir: home_dir(&ProcessEnv),
            cwd: cwd.into(),
            trust,
        }
    }
}

/// One directory of role files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    pub layer: Layer,
    pub dir: PathBuf,
    pub dialect: Dialect,
}

/// The agent directories, lowest precedence first. Project directories are listed whatever the
/// trust; [`discover`] skips them when untrusted.
pub fn agent_dirs(opts: &DiscoverOptions) -> Vec<AgentDir> {
    let mut dirs = Vec::new();
    let mut push = |layer, dir: PathBuf, dialect| {
        dirs.push(AgentDir {
            layer,
            dir,
            dialect,
        })
    };
    if let Some(home) = &opts.home_dir {
        push(
            Layer::User,
            home.join(".claude/agents"),
            Dialect::ClaudeCode,
        );
        push(Layer::User, home.join(".pi/agent/agents"), Dialect::Pi);
    }
    push(Layer::User, opts.cadre_home.agents_dir(), Dialect::Cadre);
    for dir in project_dirs(&opts.cwd) {
        push(
            Layer::Project,
            dir.join(".claude/agents"),
            Dialect::ClaudeCode,
        );
        push(Layer::Project, dir.join(".pi/agents"), Dialect::Pi);
        push(Layer::Project, dir.join(".cadre/agents"), Dialect::Cadre);
    }
    dirs
}

/// The project root, then each directory down to `cwd` (nearest last).
pub(crate) fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let root = project_root(cwd);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The resolved roles, what is blocked, and what was reported on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Roster {
    /// Available roles, built-ins first in their order, then others as found.
    pub roles: Vec<ResolvedRole>,
    pub blocked: Vec<BlockedName>,
    pub diagnostics: Vec<Diagnostic>,
    pub trusted: bool,
    pub untrusted_reason: Option<String>,
}

impl Roster {
    /// The built-in roles alone, as when no directory holds a role file.
    pub fn builtins() -> Roster {
        let mut state = State::default();
        state.add_builtins();
        let (roles, blocked) = state.finish();
        Roster {
            roles,
            blocked,
            diagnostics: Vec::new(),
            trusted: false,
            untrusted_reason: None,
        }
    }

    /// Look a role up by name or alias, any case.
    pub fn get(&self, name: &str) -> Result<&ResolvedRole, RoleLookupError> {
        let key = canonical_key(name);
        if let Some(role) = self
            .roles
            .iter()
            .find(|r| canonical_key(&r.def.name) == key)
        {
            return Ok(role);
        }
        if let Some(b) = self.blocked.iter().find(|b| canonical_key(&b.name) == key) {
            return Err(RoleLookupError::Blocked {
                name: b.name.clone(),
                reason: b.reason.clone(),
                file: b.file.clone(),
            });
        }
        Err(RoleLookupError::Unknown {
            name: name.to_string(),
            known: self.names().into_iter().map(str::to_string).collect(),
        })
    }

    /// The available role names, in roster order.
    pub fn names(&self) -> Vec<&str> {
        self.roles.iter().map(|r| r.def.name.as_str()).collect()
    }

    /// The short roster for tool descriptions: one line per role with its description, tools,
    /// read-only flag and locked model, then the unavailable names.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for role in &self.roles {
            let def = &role.def;
            out.push_str("- ");
            out.push_str(&def.name);
            let aka = aliases(&def.name);
            if !aka.is_empty() {
                out.push_str(&format!(" (also: {})", aka.join(", ")));
            }
            out.push_str(": ");
            out.push_str(&one_line(&def.description));
            let mut facts = vec![format!("tools: {}", def.tools.display())];
            if def.readonly {
                facts.push("read-only".to_string());
            }
            if let Some(model) = &def.model {
                facts.push(format!("model: {model}"));
            }
            out.push_str(&format!(" [{}]\n", facts.join("; ")));
        }
        for b in &self.blocked {
            out.push_str(&format!(
                "- {}: unavailable ({})\n",
                b.name,
                one_line(&b.reason)
            ));
        }
        out
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Build the roster from the built-ins and every readable source.
pub fn discover(opts: &DiscoverOptions) -> Roster {
    let mut state = State::default();
    state.add_builtins();
    let trusted = opts.trust.is_trusted();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    let project_boundary = project_root(&opts.cwd).canonicalize().ok();
    for source in agent_dirs(opts) {
        // A project directory that is also a user one (working in $HOME) is read once, as user.
        let canonical = source.dir.canonicalize().ok();
        if canonical.as_ref().is_some_and(|c| seen_dirs.contains(c)) {
            continue;
        }
        if source.layer == Layer::Project && !trusted {
            if source.dir.exists() {
                state.diagnostics.push(Diagnostic {
                    kind: DiagnosticKind::Untrusted,
                    file: Some(source.dir.clone()),
                    line: None,
                    message: format!(
                        "{} ignored: the project is not trusted",
                        source.dir.display()
                    ),
                });
            }
            continue;
        }
        if let Some(c) = canonical {
            seen_dirs.push(c);
        }
        let boundary = match source.layer {
            Layer::Project => project_boundary.as_deref(),
            Layer::Builtin | Layer::User => None,
        };
        state.load_dir(&source, boundary);
    }
    let (roles, blocked) = state.finish();
    Roster {
        roles,
        blocked,
        diagnostics: state.diagnostics,
        trusted,
        untrusted_reason: match &opts.trust {
            ProjectTrust::Trusted => None,
            ProjectTrust::Untrusted { reason } => Some(reason.clone()),
        },
    }
}

#[derive(Debug)]
enum Entry {
    Role(Box<ResolvedRole>),
    Blocked(BlockedName),
}

impl Entry {
    fn origin(&self) -> Origin {
        match self {
            Entry::Role(r) => r.origin(),
            Entry::Blocked(b) => Origin {
                layer: b.layer,
                file: Some(b.file.clone()),
            },
        }
    }

    fn overrides(&self) -> Vec<Origin> {
        match self {
            Entry::Role(r) => r.overrides.clone(),
            Entry::Blocked(_) => Vec::new(),
        }
    }
}

#[derive(Default)]
struct State {
    /// Keys in first-seen order, so built-ins keep their order.
    order: Vec<String>,
    entries: HashMap<String, Entry>,
    diagnostics: Vec<Diagnostic>,
}

/// What one file of a source yields.
enum FileResult {
    Role(Box<RoleDef>, Vec<Finding>),
    /// `name`: what the file answers to (its stem, or a Claude Code file's declared name).
    Malformed {
        name: String,
        problems: Vec<Problem>,
        notes: Vec<Finding>,
    },
}

impl FileResult {
    fn name(&self) -> &str {
        match self {
            FileResult::Role(def, _) => &def.name,
            FileResult::Malformed { name, .. } => name,
        }
    }
}

/// How deep below a source directory role files are looked for.
const MAX_DIR_DEPTH: usize = 8;
/// Most `.md` files read from one source directory, so a huge tree cannot stall start-up.
const MAX_FILES_PER_SOURCE: usize = 10_000;
/// Most directories walked below one source directory, for the same reason.
const MAX_DIRS_PER_SOURCE: usize = 2_000;

/// The `.md` files under `dir`, recursively, sorted; or the directory that cannot be listed.
/// Subdirectories whose name starts with `.` are not entered, and a directory reached twice
/// (through a symbolic link) is read once.
fn md_files(
    dir: &Path,
    boundary: Option<&Path>,
) -> Result<(Vec<PathBuf>, Vec<String>), (PathBuf, String)> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((current, depth)) = stack.pop() {
        if let Ok(canonical) = current.canonicalize() {
            // A project's link out of the project (`agents/r -> /`) is not followed: the
            // repository would choose what cadre reads and how long it takes.
            if depth > 0 && boundary.is_some_and(|b| !canonical.starts_with(b)) {
                notes.push(format!(
                    "{} leads outside the project; not read",
                    current.display()
                ));
                continue;
            }
            if !seen.insert(canonical) {
                continue;
            }
        }
        if seen.len() > MAX_DIRS_PER_SOURCE {
            notes.push(format!(
                "more than {MAX_DIRS_PER_SOURCE} directories under {}; the rest are not read",
                dir.display()
            ));
            break;
        }
        let listing = match std::fs::read_dir(&current) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => {
                return Ok((Vec::new(), notes));
            }
            Err(e) => return Err((current, e.to_string())),
        };
        for item in listing {
            let item = item.map_err(|e| (current.clone(), e.to_string()))?;
            let path = item.path();
            let is_md = path.extension().is_some_and(|e| e == "md");
            // The listing's own file type costs no call; only a link is followed to its target.
            let kind = match item.file_type() {
                Ok(t) if !t.is_symlink() => Ok((t.is_dir(), t.is_file())),
                _ => std::fs::metadata(&path).map(|m| (m.is_dir(), m.is_file())),
            };
            let (is_dir, is_file) = match kind {
                Ok(kind) => kind,
                // A dangling `x.md` link was meant to be a role file: reading it fails, which
                // blocks its name rather than letting a lower definition through.
                Err(_) if is_md => {
                    files.push(path);
                    continue;
                }
                Err(_) => continue,
            };
            if is_dir {
                let hidden = item.file_name().to_string_lossy().starts_with('.');
                if hidden {
                    continue;
                }
                if depth + 1 > MAX_DIR_DEPTH {
                    notes.push(format!(
                        "{} is more than {MAX_DIR_DEPTH} levels deep; not read",
                        path.display()
                    ));
                    continue;
                }
                stack.push((path, depth + 1));
            } else if is_file && is_md {
                if files.len() >= MAX_FILES_PER_SOURCE {
                    notes.push(format!(
                        "more than {MAX_FILES_PER_SOURCE} role files under {}; the rest are not read",
                        dir.display()
                    ));
                    stack.clear();
                    break;
                }
                files.push(path);
            }
        }
    }
    files.sort();
    Ok((files, notes))
}

impl State {
    fn add_builtins(&mut self) {
        for def in builtin_roles() {
            self.place(
                canonical_key(&def.name),
                Entry::Role(Box::new(ResolvedRole {
                    def,
                    layer: Layer::Builtin,
                    file: None,
                    overrides: Vec::new(),
                })),
            );
        }
    }

    /// Put `entry` under `key`, replacing (and reporting) what a lower source put there.
    fn place(&mut self, key: String, mut entry: Entry) {
        let Some(prev) = self.entries.remove(&key) else {
            self.order.push(key.clone());
            self.entries.insert(key, entry);
            return;
        };
        let prev_origin = prev.origin();
        let mut chain = prev.overrides();
        chain.push(prev_origin.clone());
        let message = match (&mut entry, &prev) {
            (Entry::Role(new), Entry::Role(_)) => {
                new.overrides = chain;
                format!(
                    "agent type `{}` from {} overrides {}",
                    new.def.name,
                    new.origin(),
                    prev_origin
                )
            }
            (Entry::Role(new), Entry::Blocked(old)) => {
                new.overrides = chain;
                format!(
                    "agent type `{}` from {} replaces the unavailable definition at {}",
                    new.def.name,
                    new.origin(),
                    old.file.display()
                )
            }
            (Entry::Blocked(b), Entry::Role(_)) => format!(
                "agent type `{}` from {} is hidden by the unusable {} ({}); it does not fall back",
                b.name,
                prev_origin,
                b.file.display(),
                b.layer
            ),
            (Entry::Blocked(_), Entry::Blocked(_)) => {
                // Already unavailable below; the new reason is reported as malformed anyway.
                self.entries.insert(key, entry);
                return;
            }
        };
        self.diagnostics.push(Diagnostic {
            kind: DiagnosticKind::Override,
            file: entry.origin().file,
            line: None,
            message,
        });
        self.entries.insert(key, entry);
    }

    fn load_dir(&mut self, source: &AgentDir, boundary: Option<&Path>) {
        let files = match md_files(&source.dir, boundary) {
            Ok((files, notes)) => {
                for message in notes {
                    self.diagnostics.push(Diagnostic {
                        kind: DiagnosticKind::Note,
                        file: Some(source.dir.clone()),
                        line: None,
                        message,
                    });
                }
                files
            }
            Err((dir, error)) => {
                self.block_all_below(source, &dir, &error);
                return;
            }
        };

        // Group by name first: two files of one source claiming a name block it.
        // In first-seen order, with an index so a source of many files is not quadratic.
        let mut by_key: Vec<(String, Vec<(PathBuf, FileResult)>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for path in files {
            let Some(result) = self.load_file(&path, source.dialect) else {
                continue;
            };
            let key = canonical_key(result.name());
            match index.get(&key) {
                Some(&i) => {
                    if let Some((_, claims)) = by_key.get_mut(i) {
                        claims.push((path, result));
                    }
                }
                None => {
                    index.insert(key.clone(), by_key.len());
                    by_key.push((key, vec![(path, result)]));
                }
            }
        }

        for (key, mut claims) in by_key {
            if claims.len() > 1 {
                let list: Vec<String> = claims
                    .iter()
                    .map(|(p, _)| p.display().to_string())
                    .collect();
                let reason = format!(
                    "defined by more than one file in {}: {}",
                    source.dir.display(),
                    list.join(", ")
                );
                let (file, first) = claims.swap_remove(0);
                self.malformed(key, first.name().to_string(), source.layer, file, reason);
                continue;
            }
            let Some((path, result)) = claims.pop() else {
                continue;
            };
            match result {
                FileResult::Role(def, notes) => {
                    self.notes(&path, notes);
                    self.place(
                        key,
                        Entry::Role(Box::new(ResolvedRole {
                            def: *def,
                            layer: source.layer,
                            file: Some(path),
                            overrides: Vec::new(),
                        })),
                    );
                }
                FileResult::Malformed {
                    name,
                    problems,
                    notes,
                } => {
                    self.notes(&path, notes);
                    self.malformed_file(key, name, source.layer, path, problems);
                }
            }
        }
    }

    fn notes(&mut self, path: &Path, notes: Vec<Finding>) {
        for note in notes {
            self.diagnostics.push(Diagnostic {
                kind: DiagnosticKind::Note,
                file: Some(path.to_path_buf()),
                line: note.line,
                message: note.message,
            });
        }
    }

    /// A malformed file: one diagnostic per problem, and its name blocked for all of them.
    fn malformed_file(
        &mut self,
        key: String,
        name: String,
        layer: Layer,
        file: PathBuf,
        problems: Vec<Problem>,
    ) {
        let mut reasons = Vec::with_capacity(problems.len());
        for p in problems {
            let reason = p.error.to_string();
            let at = match p.line {
                Some(line) => format!("{}:{line}", file.display()),
                None => file.display().to_string(),
            };
            self.diagnostics.push(Diagnostic {
                kind: DiagnosticKind::Malformed,
                file: Some(file.clone()),
                line: p.line,
                message: format!("{at}: {reason}"),
            });
            reasons.push(match p.line {
                Some(line) => format!("line {line}: {reason}"),
                None => reason,
            });
        }
        self.place(
            key,
            Entry::Blocked(BlockedName {
                name,
                layer,
                file,
                reason: reasons.join("; "),
            }),
        );
    }

    /// Read and parse one file. `None`: not an agent file (the note says why).
    fn load_file(&mut self, path: &Path, dialect: Dialect) -> Option<FileResult> {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = match read_limited(path) {
            Ok(text) => text,
            Err(reason) => {
                return Some(FileResult::Malformed {
                    name: stem,
                    problems: vec![Problem {
                        line: None,
                        error: super::parse::RoleError::Unreadable(reason),
                    }],
                    notes: Vec::new(),
                });
            }
        };
        match parse_role_file(&text, &stem, dialect) {
            Parsed::Role { def, notes } => Some(FileResult::Role(def, notes)),
            Parsed::Malformed {
                name,
                problems,
                notes,
            } => Some(FileResult::Malformed {
                name,
                problems,
                notes,
            }),
            Parsed::Skipped { reason } => {
                self.diagnostics.push(Diagnostic {
                    kind: DiagnosticKind::Note,
                    file: Some(path.to_path_buf()),
                    line: None,
                    message: format!("{}: {reason}", path.display()),
                });
                None
            }
        }
    }

    fn malformed(
        &mut self,
        key: String,
        name: String,
        layer: Layer,
        file: PathBuf,
        reason: String,
    ) {
        self.diagnostics.push(Diagnostic {
            kind: DiagnosticKind::Malformed,
            file: Some(file.clone()),
            line: None,
            message: format!("{}: {reason}", file.display()),
        });
        self.place(
            key,
            Entry::Blocked(BlockedName {
                name,
                layer,
                file,
                reason,
            }),
        );
    }

    /// An unreadable source: nothing below it may be used.
    fn block_all_below(&mut self, source: &AgentDir, dir: &Path, error: &str) {
        let reason = format!(
            "{} exists but cannot be read ({error}); every lower-precedence definition is blocked",
            dir.display()
        );
        self.diagnostics.push(Diagnostic {
            kind: DiagnosticKind::UnreadableDir,
            file: Some(dir.to_path_buf()),
            line: None,
            message: reason.clone(),
        });
        for key in &self.order {
            if let Some(Entry::Role(role)) = self.entries.get(key) {
                let blocked = BlockedName {
                    name: role.def.name.clone(),
                    layer: source.layer,
                    file: dir.to_path_buf(),
                    reason: reason.clone(),
                };
                self.entries.insert(key.clone(), Entry::Blocked(blocked));
            }
        }
    }

    fn finish(&mut self) -> (Vec<ResolvedRole>, Vec<BlockedName>) {
        let mut roles = Vec::new();
        let mut blocked = Vec::new();
        for key in &self.order {
            match self.entries.remove(key) {
                Some(Entry::Role(r)) => roles.push(*r),
                Some(Entry::Blocked(b)) => blocked.push(b),
                None => {}
            }
        }
        (roles, blocked)
    }
}

/// The file's text, refusing (without reading it all) one over the size limit.
fn read_limited(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    // Sized from the file's length (capped), so a role file is read in one or two calls rather
    // than in doubling chunks; the `take` below still bounds a file that grows meanwhile.
    let hint = file
        .metadata()
        .map_or(0, |m| m.len())
        .min(MAX_FILE_BYTES as u64 + 1);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0) + 1);
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(format!(
            "the file is larger than the {MAX_FILE_BYTES}-byte limit"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
