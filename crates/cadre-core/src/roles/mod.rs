//! Agent types (roles) for subagents (SPEC T1–T8).
//!
//! - [`parse`]: one role file → a validated [`RoleDef`], fail-closed (T1, T2), in cadre's own
//!   key set, the Pi packages' or Claude Code's (T9); `keys` and `tool_entries` hold the key
//!   sets and the tool-entry spellings of those dialects.
//! - [`builtin`]: the built-in roles and their aliases (T5).
//! - [`discover`]: the layered roster — built-in → user → trusted project — with overrides,
//!   blocked names and diagnostics (T2, T3, T4).
//! - [`skills`]: finding and loading the `SKILL.md` files a role preloads (T8).
//! - [`resolve`]: which model, thinking level and fallback model a child gets, and why (T6, T7).
//! - [`model_alias`]: what a model name means before the registry resolves it (family aliases,
//!   `subagents.modelAliases`, Claude ids by family) and the fallback to the parent's model.

pub mod builtin;
pub mod discover;
mod keys;
pub mod model_alias;
pub mod parse;
pub mod resolve;
pub mod skills;
mod tool_entries;

pub use builtin::{DEFAULT_ROLE, FORK_ROLE, builtin_roles, canonical_key};
pub use discover::{
    AgentDir, BlockedName, Diagnostic, DiagnosticKind, DiscoverOptions, Layer, Origin,
    ProjectTrust, ResolvedRole, RoleLookupError, Roster, agent_dirs, discover,
};
pub use model_alias::{
    CatalogModel, ExpandContext, Expansion, ModelAliases, ModelPlan, Settled, catalog_of,
    expanded_name, parse_model_aliases, settle,
};
pub use parse::{
    ContextMode, Dialect, Finding, Isolation, Parsed, Problem, RoleDef, RoleError, ShellPolicy,
    ToolList, parse_role, parse_role_file,
};
pub use resolve::{
    AgentOverride, FallbackSource, ModelSource, ResolveError, ResolveInputs, ResolvedModel,
    SubagentModelConfig, ThinkingSource, resolve_model,
};
pub use skills::{Skill, SkillError, SkillSearch, load_skills};
