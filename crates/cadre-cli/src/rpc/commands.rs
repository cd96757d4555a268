//! One RPC command line → host operations → one response.

use std::path::PathBuf;
use std::time::Duration;

use cadre_core::agent::QueueMode;
use cadre_host::views::{self, model_json};
use cadre_host::{Delivery, Host, HostError};
use cadre_protocol::{ContentBlock, ThinkingLevel, UserContent};
use serde_json::{Value, json};

use super::Out;

/// `task_output`'s default wait when blocking, as the `TaskOutput` tool's.
const TASK_OUTPUT_WAIT: Duration = Duration::from_secs(30);
/// The longest `task_output` wait a client may ask for.
const TASK_OUTPUT_MAX_WAIT: Duration = Duration::from_secs(600);

pub struct Commands {
    host: Host,
    out: Out,
}

/// A command's fields, with the errors a client gets for missing or mistyped ones.
struct Fields<'a> {
    command: &'a Value,
    name: &'a str,
}

impl<'a> Fields<'a> {
    fn str(&self, key: &str) -> Result<&'a str, HostError> {
        match self.command.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(invalid(format!("{}: `{key}` must be a string", self.name))),
            None => Err(invalid(format!("{}: `{key}` is required", self.name))),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, HostError> {
        match self.command.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(invalid(format!("{}: `{key}` must be a string", self.name))),
        }
    }

    fn bool(&self, key: &str) -> Result<bool, HostError> {
        match self.command.get(key) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(invalid(format!(
                "{}: `{key}` must be true or false",
                self.name
            ))),
            None => Err(invalid(format!("{}: `{key}` is required", self.name))),
        }
    }

    /// `message` and optional `images` as user content.
    fn content(&self) -> Result<UserContent, HostError> {
        let text = self.str("message")?.to_string();
        let Some(images) = self.command.get("images").filter(|v| !v.is_null()) else {
            return Ok(UserContent::Text(text));
        };
        let Value::Array(images) = images else {
            return Err(invalid(format!("{}: `images` must be a list", self.name)));
        };
        let mut blocks = vec![ContentBlock::text(text)];
        for (i, image) in images.iter().enumerate() {
            let field = |k: &str| image.get(k).and_then(Value::as_str);
            match (field("type"), field("data"), field("mimeType")) {
                (Some("image"), Some(data), Some(mime))
                    if mime.starts_with("image/") && is_base64(data) =>
                {
                    blocks.push(ContentBlock::Image {
                        data: data.to_string(),
                        mime_type: mime.to_string(),
                    });
                }
                _ => {
                    return Err(invalid(format!(
                        "{}: images[{i}] must be {{\"type\": \"image\", \"data\": base64, \"mimeType\": \"image/…\"}}",
                        self.name
                    )));
                }
            }
        }
        Ok(UserContent::Blocks(blocks))
    }
}

impl Commands {
    pub fn new(host: Host, out: Out) -> Commands {
        Commands { host, out }
    }

    /// Parse and serve one input line. Never fails: every problem is an error response.
    pub fn handle_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let command: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                self.out.error(
                    None,
                    "parse",
                    &invalid(format!("Failed to parse command: {e}")),
                );
                return;
            }
        };
        let id = command.get("id").cloned();
        let Some(name) = command
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            self.out.error(
                id.as_ref(),
                "parse",
                &invalid(
                    "Failed to parse command: a command is a JSON object with a string `type`",
                ),
            );
            return;
        };
        // A client's answer to a dialog cadre never opens.
        if name == "extension_ui_response" {
            return;
        }
        let fields = Fields {
            command: &command,
            name: &name,
        };
        if let Err(e) = self.dispatch(&name, &fields, id.clone()) {
            self.out.error(id.as_ref(), &name, &e);
        }
    }

    /// Serve `name`: answered here, or by a spawned wait for the host. `Err` is the error
    /// response's message.
    fn dispatch(&mut self, name: &str, f: &Fields<'_>, id: Option<Value>) -> Result<(), HostError> {
        let host = &self.host;
        let out = &self.out;
        let ok = |data: Option<Value>| out.success(id.as_ref(), name, data);
        match name {
            "prompt" => {
                let delivery = match f.opt_str("streamingBehavior")? {
                    None => None,
                    Some("steer") => Some(Delivery::Steer),
                    Some("followUp") => Some(Delivery::FollowUp),
                    Some(other) => {
                        return Err(invalid(format!(
                            "prompt: streamingBehavior must be \"steer\" or \"followUp\", not {other:?}"
                        )));
                    }
                };
                host.prompt(f.content()?, delivery)?;
                ok(None);
            }
            "steer" => {
                host.steer(f.content()?)?;
                ok(None);
            }
            "follow_up" => {
                host.follow_up(f.content()?)?;
                ok(None);
            }
            "abort" => {
                host.abort();
                ok(None);
            }
            "get_state" => ok(Some(self.state_json())),
            "get_messages" => ok(Some(json!({"messages": host.messages()}))),
            "get_last_assistant_text" => ok(Some(json!({
                "text": views::last_assistant_text(&host.messages()),
            }))),
            "get_session_stats" => {
                let state = host.state();
                let mut stats = views::session_stats_json(
                    &host.messages(),
                    state.session_file.as_deref(),
                    &state.session_id,
                );
                stats["contextUsage"] = context_usage(&host.messages(), &state.model);
                ok(Some(stats));
            }
            "get_available_models" => {
                let models: Vec<Value> = self.available_models().iter().map(model_json).collect();
                ok(Some(json!({"models": models})));
            }
            "set_model" => {
                let provider = f.str("provider")?;
                let model_id = f.str("modelId")?;
                let full = format!("{provider}/{model_id}");
                if !self
                    .available_models()
                    .iter()
                    .any(|m| m.provider == provider && m.id == model_id)
                {
                    // Pi's words, with the reason when the entry exists but cannot be served.
                    let why = self
                        .host
                        .context()
                        .registry
                        .list()
                        .into_iter()
                        .find(|m| m.full_name == full)
                        .and_then(|m| m.unsupported);
                    return Err(invalid(match why {
                        Some(why) => format!("Model not found: {full} ({why})"),
                        None => format!("Model not found: {full}"),
                    }));
                }
                let wait = host.set_model(&full);
                self.answer(
                    id,
                    name,
                    async move { wait.await.map(|m| Some(model_json(&m))) },
                );
            }
            "cycle_model" => {
                let models = self.available_models();
                let current = host.state().model;
                if models.len() < 2 {
                    ok(Some(Value::Null));
                    return Ok(());
                }
                let at = models
                    .iter()
                    .position(|m| m.provider == current.provider && m.id == current.id);
                let next = &models[at.map_or(0, |i| (i + 1) % models.len())];
                let wait = host.set_model(&next.full_name());
                let host = host.clone();
                self.answer(id, name, async move {
                    let model = wait.await?;
                    Ok(Some(json!({
                        "model": model_json(&model),
                        "thinkingLevel": host.state().thinking.as_str(),
                        "isScoped": false,
                    })))
                });
            }
            "set_thinking_level" => {
                let level = f.str("level")?;
                let level = ThinkingLevel::parse(level).ok_or_else(|| {
                    invalid(format!(
                        "set_thinking_level: unknown level {level:?} (off, minimal, low, medium, high, xhigh, max)"
                    ))
                })?;
                let wait = host.set_thinking(level);
                self.answer(id, name, async move { wait.await.map(|_| None) });
            }
            "cycle_thinking_level" => {
                let model = host.state().model;
                if !model.reasoning {
                    ok(Some(Value::Null));
                    return Ok(());
                }
                let levels = supported_levels(&model);
                let current = host.state().thinking;
                let at = levels.iter().position(|l| *l == current);
                let next = levels[at.map_or(0, |i| (i + 1) % levels.len())];
                let wait = host.set_thinking(next);
                self.answer(id, name, async move {
                    let level = wait.await?;
                    Ok(Some(json!({"level": level.as_str()})))
                });
            }
            "set_steering_mode" | "set_follow_up_mode" => {
                let mode = f.str("mode")?;
                let mode = QueueMode::parse(mode).ok_or_else(|| {
                    invalid(format!(
                        "{name}: mode must be \"all\" or \"one-at-a-time\", not {mode:?}"
                    ))
                })?;
                let controller = host.controller();
                if name == "set_steering_mode" {
                    controller.set_steering_mode(mode);
                } else {
                    controller.set_follow_up_mode(mode);
                }
                ok(None);
            }
            "new_session" => {
                let parent = f.opt_str("parentSession")?.map(PathBuf::from);
                let wait = host.new_session(parent);
                self.answer(id, name, async move {
                    wait.await.map(|s| {
                        report(&s);
                        Some(json!({"cancelled": false}))
                    })
                });
            }
            "switch_session" => {
                let path = PathBuf::from(f.str("sessionPath")?);
                let wait = host.switch_session(path);
                self.answer(id, name, async move {
                    wait.await.map(|s| {
                        report(&s);
                        Some(json!({"cancelled": false}))
                    })
                });
            }
            "fork" => {
                let entry = f.str("entryId")?;
                let wait = host.fork(entry);
                self.answer(id, name, async move {
                    let switched = wait.await?;
                    report(&switched);
                    Ok(Some(json!({"text": switched.text, "cancelled": false})))
                });
            }
            "clone" => {
                let wait = host.clone_session();
                self.answer(id, name, async move {
                    wait.await.map(|s| {
                        report(&s);
                        Some(json!({"cancelled": false}))
                    })
                });
            }
            "get_fork_messages" => {
                let points = host.fork_points()?;
                let messages: Vec<Value> = points
                    .iter()
                    .filter(|p| !p.text.is_empty())
                    .map(|p| json!({"entryId": p.entry_id, "text": p.text}))
                    .collect();
                ok(Some(json!({"messages": messages})));
            }
            "set_session_name" => {
                let session_name = f.str("name")?.trim();
                if session_name.is_empty() {
                    return Err(invalid("Session name cannot be empty"));
                }
                let wait = host.set_session_name(session_name);
                let out = out.clone();
                let named = session_name.to_string();
                self.answer(id, name, async move {
                    wait.await?;
                    // As Pi: the change as an event, then the response.
                    out.line_after_events(json!({"type": "session_info_changed", "name": named}));
                    Ok(None)
                });
            }
            "compact" => {
                let instructions = f.opt_str("customInstructions")?.map(str::to_string);
                let wait = host.compact(instructions);
                self.answer(id, name, async move {
                    let result = wait.await?;
                    Ok(Some(serde_json::to_value(result).unwrap_or(Value::Null)))
                });
            }
            "set_auto_compaction" => {
                let wait = host.set_auto_compaction(f.bool("enabled")?);
                self.answer(id, name, async move { wait.await.map(|()| None) });
            }
            "bash" => {
                let wait = host.bash(f.str("command")?);
                self.answer(id, name, async move {
                    let message = wait.await?;
                    Ok(Some(cadre_host::bash::bash_result_json(&message)))
                });
            }
            "abort_bash" => {
                host.abort_bash();
                ok(None);
            }
            "set_auto_retry" => {
                host.context().retry.set_enabled(f.bool("enabled")?);
                ok(None);
            }
            "abort_retry" => {
                host.context().retry.abort_retry();
                ok(None);
            }
            "export_html" => {
                let state = host.state();
                let path = match f.opt_str("outputPath")? {
                    Some(p) => host.context().cwd.join(p),
                    None => {
                        let base = state
                            .session_file
                            .as_deref()
                            .and_then(|p| p.file_stem())
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_else(|| state.session_id.clone());
                        host.context()
                            .cwd
                            .join(format!("cadre-session-{base}.html"))
                    }
                };
                let title = state
                    .session_name
                    .clone()
                    .unwrap_or_else(|| format!("cadre session {}", state.session_id));
                cadre_host::export::export_html(&title, &host.messages(), &path)
                    .map_err(|e| HostError::Failed(format!("{e:#}")))?;
                ok(Some(json!({"path": path.to_string_lossy()})));
            }
            "get_commands" => {
                // cadre has no prompt templates or extension commands; skills belong to roles.
                ok(Some(json!({"commands": []})));
            }
            "task_list" => {
                let tasks: Vec<Value> = host.tasks().list().iter().map(views::task_json).collect();
                ok(Some(json!({"tasks": tasks})));
            }
            "task_show" => {
                let task = host.task(f.str("task")?)?;
                ok(Some(views::task_json(&task)));
            }
            "task_output" => {
                let target = f.str("task")?.to_string();
                let block = f
                    .command
                    .get("block")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let wait = match f.command.get("timeoutMs") {
                    None | Some(Value::Null) => TASK_OUTPUT_WAIT,
                    Some(v) => Duration::from_millis(v.as_u64().ok_or_else(|| {
                        invalid("task_output: `timeoutMs` must be a whole number of milliseconds")
                    })?)
                    .min(TASK_OUTPUT_MAX_WAIT),
                };
                let output = host.task_output(&target, block, wait);
                self.answer(id, name, async move {
                    let task = output.await?;
                    let mut data = views::task_json(&task);
                    data["output"] = json!(task.output);
                    Ok(Some(data))
                });
            }
            "task_stop" => {
                let stop = host.stop_task(f.str("task")?);
                self.answer(id, name, async move {
                    let task = stop.await?;
                    Ok(Some(views::task_json(&task)))
                });
            }
            "task_apply" => {
                let apply = host.apply_task(f.str("task")?);
                self.answer(id, name, async move {
                    let (task_id, report) = apply.await?;
                    Ok(Some(json!({"taskId": task_id, "report": report})))
                });
            }
            _ => return Err(invalid(format!("Unknown command: {name}"))),
        }
        Ok(())
    }

    /// Answer `name` once `wait` completes, without holding up the next input line.
    fn answer<F>(&self, id: Option<Value>, name: &str, wait: F)
    where
        F: Future<Output = Result<Option<Value>, HostError>> + Send + 'static,
    {
        let out = self.out.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            let response = match wait.await {
                Ok(data) => super::success(id.as_ref(), &name, data),
                Err(e) => super::error(id.as_ref(), &name, &e),
            };
            out.line_after_events(response);
        });
    }

    fn state_json(&self) -> Value {
        let (steering, follow_up) = self.host.controller().queue_modes();
        state_json(self.host.state(), steering, follow_up)
    }

    /// Models that can be called: credentials present, the API served.
    fn available_models(&self) -> Vec<cadre_llm::Model> {
        let registry = &self.host.context().registry;
        registry
            .list()
            .into_iter()
            .filter(|m| m.has_credentials && m.unsupported.is_none())
            .filter_map(|m| registry.resolve(&m.full_name).ok())
            .collect()
    }
}

/// `get_state`'s data: Pi's fields, from the host's state and the queue modes.
fn state_json(state: cadre_host::HostState, steering: QueueMode, follow_up: QueueMode) -> Value {
    let mut data = json!({
        "model": model_json(&state.model),
        "thinkingLevel": state.thinking.as_str(),
        "isStreaming": state.is_streaming,
        "isCompacting": state.is_compacting,
        "steeringMode": steering.as_str(),
        "followUpMode": follow_up.as_str(),
        "sessionFile": state.session_file.map(|p| p.to_string_lossy().into_owned()),
        "sessionId": state.session_id,
        "autoCompactionEnabled": state.auto_compaction,
        "messageCount": state.message_count,
        "pendingMessageCount": state.pending_message_count,
    });
    if let Some(name) = state.session_name {
        data["sessionName"] = json!(name);
    }
    // cadre's addition: the session's token and cost budget, when one is set.
    if let Some(budget) = state.budget {
        data["budget"] = json!(budget);
    }
    data
}

/// Whether `data` can be base64 (the alphabet, padding and line breaks), so a client's
/// garbage is refused here rather than by the provider.
fn is_base64(data: &str) -> bool {
    !data.is_empty()
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'))
}

/// Say on stderr what a session switch noted (lines it skipped, …).
fn report(switched: &cadre_host::Switched) {
    for warning in &switched.warnings {
        errln!("cadre: {warning}");
    }
}

/// A command the client got wrong.
fn invalid(message: impl Into<String>) -> HostError {
    HostError::InvalidInput(message.into())
}

/// The thinking levels a reasoning model takes, in cycling order (Pi's
/// `getSupportedThinkingLevels`: a level mapped to nothing is skipped; `xhigh` and `max` only
/// where the model maps them).
fn supported_levels(model: &cadre_llm::Model) -> Vec<ThinkingLevel> {
    use ThinkingLevel::*;
    [Off, Minimal, Low, Medium, High, Xhigh, Max]
        .into_iter()
        .filter(|level| match model.thinking_level_map.get(level) {
            Some(None) => false,
            Some(Some(_)) => true,
            None => !matches!(level, Xhigh | Max),
        })
        .collect()
}

/// Pi's `contextUsage`: the last assistant message's input as the context size estimate.
fn context_usage(messages: &[cadre_protocol::Message], model: &cadre_llm::Model) -> Value {
    let tokens = messages.iter().rev().find_map(|m| match m {
        cadre_protocol::Message::Assistant(a) if a.usage.input + a.usage.output > 0 => {
            Some(a.usage.input + a.usage.output + a.usage.cache_read + a.usage.cache_write)
        }
        _ => None,
    });
    let window = model.context_window;
    json!({
        "tokens": tokens,
        "contextWindow": window,
        "percent": tokens.filter(|_| window > 0).map(|t| (t as f64) * 100.0 / (window as f64)),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn state(session_name: Option<&str>) -> cadre_host::HostState {
        cadre_host::HostState {
            model: cadre_testkit::scripted::model("m1"),
            thinking: ThinkingLevel::Medium,
            is_streaming: false,
            is_compacting: false,
            session_file: Some(PathBuf::from("/home/u/.cadre/sessions/s.jsonl")),
            session_id: "0192-session".into(),
            session_name: session_name.map(str::to_string),
            auto_compaction: true,
            message_count: 4,
            pending_message_count: 1,
            steering: vec!["look at b too".into()],
            follow_up: Vec::new(),
            budget: None,
        }
    }

    /// The whole `get_state` response line, as an RPC client reads it.
    #[test]
    fn get_state_response() {
        let data = state_json(
            state(Some("auth work")),
            QueueMode::OneAtATime,
            QueueMode::All,
        );
        let response = super::super::success(Some(&json!("req-1")), "get_state", Some(data));
        insta::assert_snapshot!(serde_json::to_string_pretty(&response).unwrap());
        let unnamed = state_json(state(None), QueueMode::All, QueueMode::OneAtATime);
        assert!(unnamed.get("sessionName").is_none());
        assert!(unnamed.get("budget").is_none(), "no cap, no budget");
    }

    /// Under a cap, `get_state` carries the session's budget (cadre's addition to Pi's shape).
    #[test]
    fn get_state_with_a_budget() {
        let mut capped = state(None);
        capped.budget = Some(cadre_protocol::BudgetState {
            cap: cadre_protocol::Limits {
                max_cost_usd: Some(0.5),
                max_tokens: None,
            },
            spent: cadre_protocol::Spend {
                tokens: 41_230,
                cost_usd: 0.41,
            },
            reserved: cadre_protocol::Spend {
                tokens: 1000,
                cost_usd: 0.02,
            },
            ..cadre_protocol::BudgetState::default()
        });
        let data = state_json(capped, QueueMode::All, QueueMode::All);
        insta::assert_snapshot!(serde_json::to_string_pretty(&data["budget"]).unwrap());
    }

    #[test]
    fn error_response() {
        let response = super::super::error(
            Some(&json!(7)),
            "prompt",
            &cadre_host::HostError::InvalidInput("no model selected".into()),
        );
        insta::assert_snapshot!(serde_json::to_string(&response).unwrap());
    }
}
