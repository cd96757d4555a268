//! What a model name in a role file, a call or the settings means before the registry resolves
//! it: Claude Code's family aliases (`sonnet`, `opus`, `haiku`, `opusplan`, `sonnet[1m]`), the
//! `subagents.modelAliases` table, and Claude ids the registry does not list
//! (`claude-3-opus-20240229`) taken to the newest model of their family.
//!
//! Pure over a listing of the registry ([`CatalogModel`]), so `cadre agents`, `cadre doctor` and
//! a launch give the same answer. A portable role file names a family, not a provider: when its
//! model cannot be had the launch runs on the parent's model with a diagnostic ([`settle`]), while
//! a model named by the call or by the settings is a choice someone made here and stays strict.

use std::cmp::Ordering;

use serde_json::Value;

use super::resolve::ModelSource;

/// One model of the registry, as alias resolution sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogModel {
    pub provider: String,
    pub id: String,
    /// The display name (the registry resolves it too).
    pub name: String,
    pub context_window: u64,
    /// Credentials are configured (commands are not run to find out) and the API is supported.
    pub usable: bool,
}

impl CatalogModel {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    fn names(&self, name: &str) -> bool {
        self.id == name || self.name == name || self.full_name() == name
    }
}

/// The listing of a registry (no credential command runs).
pub fn catalog_of(registry: &cadre_llm::ModelRegistry) -> Vec<CatalogModel> {
    registry
        .list()
        .into_iter()
        .map(|m| CatalogModel {
            usable: m.has_credentials && m.unsupported.is_none(),
            provider: m.provider,
            id: m.id,
            name: m.name,
            context_window: m.context_window,
        })
        .collect()
}

/// `subagents.modelAliases`: `(alias, target)` in file order; aliases match in any case.
pub type ModelAliases = Vec<(String, String)>;

/// Read `subagents.modelAliases` strictly: an object of non-empty strings (`null` = unset).
/// The error is `(key path below subagents, message)`.
pub fn parse_model_aliases(value: Option<&Value>) -> Result<ModelAliases, (String, String)> {
    const KEY: &str = "modelAliases";
    let map = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err((
                KEY.into(),
                "expected an object of alias → model (`{\"opus\": \"anthropic/claude-opus-4-5\"}`)"
                    .into(),
            ));
        }
    };
    let mut out: ModelAliases = Vec::new();
    for (alias, target) in map {
        let path = format!("{KEY}.{alias}");
        if alias.trim().is_empty() {
            return Err((KEY.into(), "an alias must not be empty".into()));
        }
        let target = match target {
            Value::Null => continue,
            Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
            Value::String(_) => {
                return Err((
                    path,
                    "must not be empty (omit it or use null for none)".into(),
                ));
            }
            _ => return Err((path, "expected a model name (provider/id or id)".into())),
        };
        if let Some((other, _)) = out.iter().find(|(a, _)| a.eq_ignore_ascii_case(alias)) {
            return Err((
                path,
                format!("`{other}` and `{alias}` name the same alias (aliases match in any case)"),
            ));
        }
        out.push((alias.trim().to_string(), target));
    }
    Ok(out)
}

/// The Claude model families the default aliases name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Sonnet,
    Opus,
    Haiku,
}

impl Family {
    fn as_str(self) -> &'static str {
        match self {
            Family::Sonnet => "sonnet",
            Family::Opus => "opus",
            Family::Haiku => "haiku",
        }
    }

    fn parse(s: &str) -> Option<Family> {
        match s {
            "sonnet" => Some(Family::Sonnet),
            "opus" => Some(Family::Opus),
            "haiku" => Some(Family::Haiku),
            _ => None,
        }
    }
}

/// A Claude model id read apart: `claude-3-5-haiku-20241022`, `claude-sonnet-4-5`,
/// `anthropic/claude-opus-4.1`, `claude-sonnet-4-5@20250929`, `anthropic.claude-…-v1:0`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClaudeId {
    family: Family,
    major: u32,
    minor: u32,
    /// `YYYYMMDD` of a dated snapshot; `None` for the undated alias of the same model.
    date: Option<u32>,
    /// Some other word (`fast`, `thinking`): a variant the family aliases never pick.
    variant: bool,
}

fn parse_claude_id(id: &str) -> Option<ClaudeId> {
    let at = id.find("claude-")?;
    let tail = &id[at + "claude-".len()..];
    // Bedrock's `:0` revision and OpenRouter's `:thinking` are not part of the model.
    let (tail, suffix) = match tail.split_once(':') {
        Some((t, s)) => (t, Some(s)),
        None => (tail, None),
    };
    let mut family = None;
    let mut version: Vec<u32> = Vec::new();
    let mut date = None;
    let mut variant = suffix.is_some_and(|s| !s.chars().all(|c| c.is_ascii_digit()));
    for token in tail.split(['-', '@']) {
        if let Some(f) = Family::parse(token) {
            if family.is_some() {
                return None;
            }
            family = Some(f);
        } else if token.len() == 8 && token.chars().all(|c| c.is_ascii_digit()) {
            date = token.parse().ok();
        } else if !token.is_empty()
            && token.split('.').all(|part| {
                !part.is_empty() && part.len() <= 2 && part.chars().all(|c| c.is_ascii_digit())
            })
        {
            // Only the first two numbers are the version; another is a revision.
            for part in token.split('.') {
                if version.len() < 2 {
                    version.push(part.parse().ok()?);
                }
            }
        } else if token == "latest"
            || (token.starts_with('v') && token[1..].chars().all(|c| c.is_ascii_digit()))
        {
            // `-latest` and Bedrock's `-v1` name the model itself.
        } else {
            variant = true;
        }
    }
    Some(ClaudeId {
        family: family?,
        major: *version.first()?,
        minor: version.get(1).copied().unwrap_or(0),
        date,
        variant,
    })
}

/// Newer first: version, then the undated alias over a snapshot, then the later snapshot.
fn newer(a: &ClaudeId, b: &ClaudeId) -> Ordering {
    (b.major, b.minor)
        .cmp(&(a.major, a.minor))
        .then_with(|| match (a.date, b.date) {
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (x, y) => y.cmp(&x),
        })
}

/// The newest usable model of `family`: on the parent's provider when it serves one, else on
/// `anthropic`, else on the first other provider that does.
pub fn newest_of_family<'c>(
    family: Family,
    parent_provider: Option<&str>,
    catalog: &'c [CatalogModel],
) -> Option<&'c CatalogModel> {
    let of_family: Vec<(&CatalogModel, ClaudeId)> = catalog
        .iter()
        .filter(|m| m.usable)
        .filter_map(|m| parse_claude_id(&m.id).map(|c| (m, c)))
        .filter(|(_, c)| c.family == family)
        .collect();
    let mut providers: Vec<&str> = Vec::new();
    providers.extend(parent_provider);
    providers.push("anthropic");
    for (m, _) in &of_family {
        providers.push(&m.provider);
    }
    for provider in providers {
        let mut here: Vec<&(&CatalogModel, ClaudeId)> = of_family
            .iter()
            .filter(|(m, _)| m.provider == provider)
            .collect();
        // A variant only when the provider has nothing else of the family.
        if here.iter().any(|(_, c)| !c.variant) {
            here.retain(|(_, c)| !c.variant);
        }
        here.sort_by(|(_, a), (_, b)| newer(a, b));
        if let Some((m, _)) = here.first() {
            return Some(m);
        }
    }
    None
}

/// How a name was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expansion {
    /// Resolve the name as written.
    AsWritten,
    /// An alias (the settings table or a default one) → `target`.
    Alias {
        target: String,
        note: Option<String>,
    },
    /// A Claude id no usable provider has → the newest model of its family.
    Family { target: String, note: String },
    /// An alias that no provider with credentials can serve.
    Unavailable { reason: String },
}

/// What [`expand`] needs besides the name.
#[derive(Debug, Clone, Copy)]
pub struct ExpandContext<'a> {
    /// The role is read-only (`opusplan` plans on opus, executes on sonnet).
    pub readonly: bool,
    pub parent_provider: Option<&'a str>,
    pub aliases: &'a [(String, String)],
    pub catalog: &'a [CatalogModel],
}

/// The default alias `name` is, if any: its family and whether it asks for the 1M context.
fn default_alias(name: &str, readonly: bool) -> Option<(Family, bool)> {
    let lower = name.to_ascii_lowercase();
    let (base, wide) = match lower.strip_suffix("[1m]") {
        Some(base) => (base, true),
        None => (lower.as_str(), false),
    };
    match base {
        "opusplan" if !wide => Some((
            if readonly {
                Family::Opus
            } else {
                Family::Sonnet
            },
            false,
        )),
        other => Family::parse(other).map(|f| (f, wide)),
    }
}

/// Read `name`: the settings table first, then the default aliases, then Claude ids no usable
/// provider lists.
pub fn expand(name: &str, cx: &ExpandContext<'_>) -> Expansion {
    let name = name.trim();
    if let Some((alias, target)) = cx
        .aliases
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(name))
    {
        // A table entry may point at a default alias (`"opus": "sonnet"`): one step further.
        if !cx
            .aliases
            .iter()
            .any(|(a, _)| a.eq_ignore_ascii_case(target))
            && default_alias(target, cx.readonly).is_some()
        {
            return match expand_default(target, cx) {
                Expansion::Alias { target: t, note } => Expansion::Alias {
                    note: Some(match note {
                        Some(n) => format!("modelAliases.{alias} → {n}"),
                        None => format!("modelAliases.{alias} → `{target}` → `{t}`"),
                    }),
                    target: t,
                },
                other => other,
            };
        }
        return Expansion::Alias {
            target: target.clone(),
            note: None,
        };
    }
    if default_alias(name, cx.readonly).is_some() {
        return expand_default(name, cx);
    }
    expand_family(name, cx)
}

fn expand_default(name: &str, cx: &ExpandContext<'_>) -> Expansion {
    let Some((family, wide)) = default_alias(name, cx.readonly) else {
        return Expansion::AsWritten;
    };
    let Some(m) = newest_of_family(family, cx.parent_provider, cx.catalog) else {
        return Expansion::Unavailable {
            reason: format!(
                "no provider with credentials serves a Claude {} model",
                family.as_str()
            ),
        };
    };
    let target = m.full_name();
    let mut notes = Vec::new();
    if name.eq_ignore_ascii_case("opusplan") {
        notes.push(format!(
            "opusplan runs {} roles on {}",
            if cx.readonly { "read-only" } else { "writing" },
            family.as_str()
        ));
    }
    if wide {
        notes.push(if m.context_window >= 1_000_000 {
            "it has a 1M-token context window".to_string()
        } else {
            format!(
                "it has a {}K-token context window; the 1M context is not available through \
                 cadre",
                m.context_window / 1000
            )
        });
    }
    Expansion::Alias {
        target,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

fn expand_family(name: &str, cx: &ExpandContext<'_>) -> Expansion {
    let Some(id) = parse_claude_id(name) else {
        return Expansion::AsWritten;
    };
    // Known and usable somewhere: the registry resolves it as written.
    if cx.catalog.iter().any(|m| m.usable && m.names(name)) {
        return Expansion::AsWritten;
    }
    match newest_of_family(id.family, cx.parent_provider, cx.catalog) {
        Some(m) => {
            let known = cx.catalog.iter().any(|c| c.names(name));
            Expansion::Family {
                target: m.full_name(),
                note: format!(
                    "`{name}` is {}; using the newest Claude {} model, `{}`",
                    if known {
                        "on no provider with credentials"
                    } else {
                        "not a known model"
                    },
                    id.family.as_str(),
                    m.full_name()
                ),
            }
        }
        // Listed without credentials: the registry's own error says which are missing.
        None if cx.catalog.iter().any(|c| c.names(name)) => Expansion::AsWritten,
        None => Expansion::Unavailable {
            reason: format!(
                "not a known model, and no provider with credentials serves a Claude {} model",
                id.family.as_str()
            ),
        },
    }
}

/// The name the registry is asked for when `name` is a fallback model: its alias or family
/// target, else `name` itself.
pub fn expanded_name(name: &str, cx: &ExpandContext<'_>) -> String {
    match expand(name, cx) {
        Expansion::Alias { target, .. } | Expansion::Family { target, .. } => target,
        Expansion::AsWritten | Expansion::Unavailable { .. } => name.to_string(),
    }
}

/// Which model a launch resolves, before the registry is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPlan {
    /// Where the name came from (see `resolve_model`).
    pub source: ModelSource,
    /// The name as that source wrote it; `None` when the child runs on the parent's model.
    pub written: Option<String>,
    pub expansion: Expansion,
    /// A role file's model: when it cannot be had the child runs on the parent's model.
    pub lenient: bool,
}

impl ModelPlan {
    /// Plan the model `resolve_model` picked from `source`.
    pub fn new(source: ModelSource, model: &str, cx: &ExpandContext<'_>) -> ModelPlan {
        match source {
            ModelSource::Parent | ModelSource::Fork => ModelPlan {
                source,
                written: None,
                expansion: Expansion::AsWritten,
                lenient: false,
            },
            _ => ModelPlan {
                source,
                written: Some(model.to_string()),
                expansion: expand(model, cx),
                lenient: source == ModelSource::Frontmatter,
            },
        }
    }

    /// The name the registry is asked for; `None` = the parent's model.
    pub fn target(&self) -> Option<&str> {
        match &self.expansion {
            Expansion::AsWritten => self.written.as_deref(),
            Expansion::Alias { target, .. } | Expansion::Family { target, .. } => Some(target),
            Expansion::Unavailable { .. } => None,
        }
    }

    /// What the expansion says, for the task's diagnostics.
    pub fn note(&self) -> Option<String> {
        let written = self.written.as_deref().unwrap_or_default();
        match &self.expansion {
            Expansion::AsWritten => None,
            Expansion::Alias { target, note } => Some(match note {
                Some(n) => format!("model `{written}` is `{target}` ({n})"),
                None => format!("model `{written}` is `{target}`"),
            }),
            Expansion::Family { note, .. } => Some(note.clone()),
            Expansion::Unavailable { .. } => None,
        }
    }

    /// The source as `cadre agents --json` names it.
    pub fn source_name(&self) -> &'static str {
        match (self.source, &self.expansion) {
            (ModelSource::Frontmatter, Expansion::Alias { .. }) => "alias",
            (ModelSource::Frontmatter, Expansion::Family { .. }) => "family",
            (ModelSource::Frontmatter, _) => "frontmatter",
            (ModelSource::AgentOverride, _) => "agentOverride",
            (ModelSource::SettingsDefault, _) => "settingsDefault",
            (ModelSource::Call, _) => "call",
            (ModelSource::Parent | ModelSource::Fork, _) => "parent",
        }
    }
}

/// The outcome of resolving a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled<T> {
    /// The planned model (or its fallback: `fallback_note` says why).
    Model {
        model: T,
        name: String,
        fallback_note: Option<String>,
    },
    /// The parent's model: planned so (`note: None`), or a role file's model that cannot be had.
    Parent { note: Option<String> },
    /// A strict source's model and its fallback cannot be had.
    Failed {
        name: String,
        error: String,
        fallback: Option<(String, String)>,
    },
}

/// Resolve `plan` with `resolve` (the registry, or a check that runs no command), then the
/// fallback model, then — for a role file's model — the parent's model.
pub fn settle<T>(
    plan: &ModelPlan,
    fallback: Option<&str>,
    mut resolve: impl FnMut(&str) -> Result<T, String>,
) -> Settled<T> {
    let written = plan.written.as_deref().unwrap_or_default();
    let (name, error) = match (&plan.expansion, plan.target()) {
        (_, Some(name)) => match resolve(name) {
            Ok(model) => {
                return Settled::Model {
                    model,
                    name: name.to_string(),
                    fallback_note: None,
                };
            }
            Err(e) => (name.to_string(), e),
        },
        (Expansion::Unavailable { reason }, None) => (written.to_string(), reason.clone()),
        (_, None) => return Settled::Parent { note: None },
    };
    let mut fallback_error = None;
    if let Some(fb) = fallback {
        match resolve(fb) {
            Ok(model) => {
                return Settled::Model {
                    model,
                    name: fb.to_string(),
                    fallback_note: Some(format!(
                        "model `{name}` unavailable ({error}); using fallback `{fb}`"
                    )),
                };
            }
            Err(e) => fallback_error = Some((fb.to_string(), e)),
        }
    }
    if plan.lenient {
        let shown = if name == written {
            format!("`{name}`")
        } else {
            format!("`{written}` (`{name}`)")
        };
        let mut note = format!(
            "the role's model {shown} cannot be used ({error}); running on the parent's model"
        );
        if let Some((fb, e)) = &fallback_error {
            note.push_str(&format!(" (fallback `{fb}`: {e})"));
        }
        return Settled::Parent { note: Some(note) };
    }
    Settled::Failed {
        name,
        error,
        fallback: fallback_error,
    }
}

#[cfg(test)]
#[path = "model_alias_tests.rs"]
mod tests;
