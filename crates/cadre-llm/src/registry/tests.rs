//! Model registry (R2) and credential handling (S5).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cadre_protocol::ThinkingLevel;

use super::*;

fn env() -> MapEnv {
    MapEnv::new()
        .with("ANTHROPIC_API_KEY", "sk-ant-test")
        .with("OPENAI_API_KEY", "sk-openai-test")
}

fn from(json: &str, env: &MapEnv) -> ModelRegistry {
    ModelRegistry::from_json(json, ModelsFile::Cadre("/cfg/models.json".into()), env).unwrap()
}

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

const OLLAMA: &str = r#"{
  "providers": {
    "ollama": {
      "baseUrl": "http://localhost:11434/v1",
      "api": "openai-completions",
      "apiKey": "ollama",
      "compat": {
        "supportsDeveloperRole": false,
        "supportsReasoningEffort": false
      },
      "models": [
        { "id": "llama3.1:8b" },
        {
          "id": "qwen2.5-coder:7b",
          "name": "Qwen Coder",
          "reasoning": true,
          "input": ["text"],
          "contextWindow": 32000,
          "maxTokens": 8000,
          "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 },
          "compat": { "supportsDeveloperRole": true, "maxTokensField": "max_tokens" }
        }
      ]
    }
  }
}"#;

#[test]
fn builtins_resolve_with_env_keys() {
    let reg = ModelRegistry::builtin(&env());
    assert_eq!(reg.source_file(), None);
    let m = reg.resolve("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(m.api, Api::AnthropicMessages);
    assert_eq!(m.base_url, "https://api.anthropic.com");
    assert_eq!(m.api_key.as_deref(), Some("sk-ant-test"));
    assert!(m.reasoning);
    assert_eq!(m.context_window, 200_000);
    assert!(m.cost.input > 0.0 && m.cost.output > m.cost.input);

    let m = reg.resolve("openai/gpt-5").unwrap();
    assert_eq!(m.api, Api::OpenAiResponses);
    assert_eq!(m.base_url, "https://api.openai.com/v1");
    assert_eq!(m.api_key.as_deref(), Some("sk-openai-test"));

    let m = reg.resolve("openai/gpt-4.1").unwrap();
    assert!(!m.reasoning);

    for name in [
        "anthropic/claude-opus-4-1",
        "anthropic/claude-haiku-4-5",
        "openai/gpt-5-mini",
    ] {
        assert!(reg.resolve(name).is_ok(), "{name}");
    }
    let names: Vec<String> = reg.list().into_iter().map(|i| i.full_name).collect();
    assert!(names.contains(&"openrouter/openai/gpt-5".to_string()));

    // OpenAI's models go over Responses (reasoning carried between turns); OpenRouter's over
    // its Chat Completions wire.
    for (name, api) in [
        ("openai/gpt-5-codex", Api::OpenAiResponses),
        ("openai/gpt-5.3-codex", Api::OpenAiResponses),
        ("openai/gpt-5.5-pro", Api::OpenAiResponses),
        ("openai/gpt-5.5", Api::OpenAiResponses),
        ("openai/gpt-4.1", Api::OpenAiResponses),
        ("openrouter/openai/gpt-5.3-codex", Api::OpenAiCompletions),
    ] {
        let env = env().with("OPENROUTER_API_KEY", "sk-or");
        let m = ModelRegistry::builtin(&env).resolve(name).unwrap();
        assert_eq!(m.api, api, "{name}");
    }
    // Input kinds as published: o3-mini reads no images.
    let m = reg.resolve("openai/o3-mini").unwrap();
    assert_eq!(m.input, ["text"]);
    assert!(reg.resolve("openai/gpt-5.5").unwrap().accepts_images());
    // The newest of each Claude family is there, with its published figures.
    let m = reg.resolve("anthropic/claude-opus-4-7").unwrap();
    assert_eq!((m.context_window, m.max_tokens), (1_000_000, 128_000));
    assert_eq!(
        (
            m.cost.input,
            m.cost.output,
            m.cost.cache_read,
            m.cost.cache_write
        ),
        (5.0, 25.0, 0.5, 6.25)
    );
    assert!(reg.list().iter().all(|i| i.source == ModelSource::BuiltIn));
}

#[test]
fn builtin_limits_are_sane() {
    let reg = ModelRegistry::builtin(&env());
    for info in reg.list() {
        assert!(
            info.max_tokens > 0 && info.max_tokens < info.context_window,
            "{info:?}"
        );
        assert!(info.unsupported.is_none());
    }
}

#[test]
fn openrouter_ids_with_slashes_resolve_by_full_and_bare_name() {
    let env = env().with("OPENROUTER_API_KEY", "sk-or");
    let reg = ModelRegistry::builtin(&env);
    let m = reg
        .resolve("openrouter/anthropic/claude-sonnet-4.5")
        .unwrap();
    assert_eq!(m.id, "anthropic/claude-sonnet-4.5");
    assert_eq!(m.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(m.api_key.as_deref(), Some("sk-or"));
    // `anthropic/` is also a provider name, but it has no such id: fall back to the bare id.
    let m = reg.resolve("anthropic/claude-sonnet-4.5").unwrap();
    assert_eq!(m.provider, "openrouter");
}

#[test]
fn bare_id_resolves_when_unique() {
    let reg = ModelRegistry::builtin(&env());
    let m = reg.resolve("claude-haiku-4-5").unwrap();
    assert_eq!(m.full_name(), "anthropic/claude-haiku-4-5");
}

#[test]
fn display_name_resolves_when_unique() {
    let reg = from(OLLAMA, &env());
    assert_eq!(reg.resolve("Qwen Coder").unwrap().id, "qwen2.5-coder:7b");
    assert_eq!(
        reg.resolve("Claude Opus 4.1 (latest)").unwrap().id,
        "claude-opus-4-1"
    );
    assert_eq!(
        reg.resolve("Claude Opus 4.1").unwrap().id,
        "claude-opus-4-1-20250805"
    );
    assert!(reg.resolve("qwen coder").is_err());
}

#[test]
fn literal_keys_with_equals_signs_work() {
    let json = r#"{"providers":{"p":{"baseUrl":"https://p.example/v1","api":"openai-completions",
      "apiKey":"abc+def/ghi==","models":[{"id":"m"}]}}}"#;
    let reg = ModelRegistry::from_json(json, ModelsFile::None, &ProcessEnv).unwrap();
    assert_eq!(
        reg.resolve("p/m").unwrap().api_key.as_deref(),
        Some("abc+def/ghi==")
    );
}

#[test]
fn bare_id_in_two_providers_is_ambiguous() {
    let reg = from(
        r#"{"providers":{"proxy":{"baseUrl":"https://p.example/v1","api":"openai-completions",
            "apiKey":"k","models":[{"id":"gpt-5"}]}}}"#,
        &env(),
    );
    let err = reg.resolve("gpt-5").unwrap_err();
    match &err {
        RegistryError::AmbiguousModel { candidates, .. } => {
            assert_eq!(candidates, &["openai/gpt-5", "proxy/gpt-5"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("proxy/gpt-5"));
    assert_eq!(reg.resolve("proxy/gpt-5").unwrap().provider, "proxy");
}

#[test]
fn unknown_model_lists_known_models() {
    let reg = ModelRegistry::builtin(&env());
    let err = reg.resolve("anthropic/claude-9").unwrap_err();
    match &err {
        RegistryError::UnknownModel { name, known } => {
            assert_eq!(name, "anthropic/claude-9");
            assert!(known.contains(&"openai/gpt-5".to_string()));
            assert_eq!(known.len(), reg.list().len());
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("anthropic/claude-9"));
    assert!(text.contains("anthropic/claude-sonnet-4-5"));
}

#[test]
fn missing_builtin_key_names_the_env_var() {
    let reg = ModelRegistry::builtin(&MapEnv::new());
    let err = reg.resolve("openai/gpt-5").unwrap_err();
    match &err {
        RegistryError::MissingCredentials { provider, env_var } => {
            assert_eq!(provider, "openai");
            assert_eq!(env_var.as_deref(), Some("OPENAI_API_KEY"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("OPENAI_API_KEY"));
    assert!(!reg.list().iter().any(|i| i.has_credentials));
}

#[test]
fn pi_ollama_example_works_unchanged() {
    let reg = from(OLLAMA, &MapEnv::new());
    let m = reg.resolve("ollama/llama3.1:8b").unwrap();
    assert_eq!(m.api, Api::OpenAiCompletions);
    assert_eq!(m.base_url, "http://localhost:11434/v1");
    assert_eq!(m.api_key.as_deref(), Some("ollama"));
    assert_eq!(m.name, "llama3.1:8b");
    assert_eq!(m.context_window, DEFAULT_CONTEXT_WINDOW);
    assert_eq!(m.max_tokens, DEFAULT_MAX_TOKENS);
    assert!(!m.reasoning);
    assert_eq!(m.cost, ModelCost::default());
    // Provider-level compat applies to every model.
    assert_eq!(m.compat.supports_developer_role, Some(false));
    assert_eq!(m.compat.supports_reasoning_effort, Some(false));

    let q = reg.resolve("ollama/qwen2.5-coder:7b").unwrap();
    assert_eq!(q.name, "Qwen Coder");
    assert_eq!((q.context_window, q.max_tokens), (32_000, 8_000));
    assert!(q.reasoning);
    // Model-level compat overrides the provider's key by key.
    assert_eq!(q.compat.supports_developer_role, Some(true));
    assert_eq!(q.compat.supports_reasoning_effort, Some(false));
    assert_eq!(q.compat.max_tokens_field.as_deref(), Some("max_tokens"));

    let info = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "ollama/llama3.1:8b")
        .unwrap();
    assert_eq!(info.source, ModelSource::File);
    assert!(info.has_credentials);
    // The built-ins stay available next to the file's providers.
    assert!(reg.resolve("claude-sonnet-4-5").is_err()); // no ANTHROPIC_API_KEY here
    assert!(matches!(
        reg.resolve("claude-sonnet-4-5").unwrap_err(),
        RegistryError::MissingCredentials { .. }
    ));
}

#[test]
fn unknown_keys_are_ignored_everywhere() {
    let json = r#"{
      "$schema": "x", "version": 9,
      "providers": {
        "local": {
          "baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions",
          "someFutureKey": {"a": 1}, "compat": {"thinkingFormat": "qwen", "openRouterRouting": {"only": ["x"]}},
          "models": [{"id": "m", "input": ["text", "image"], "whatever": true,
                      "thinkingLevelMap": {"minimal": null, "ultra": "u"}}]
        }
      }
    }"#;
    let reg = from(json, &MapEnv::new());
    let m = reg.resolve("local/m").unwrap();
    assert_eq!(
        m.thinking_level_map.get(&ThinkingLevel::Minimal),
        Some(&None)
    );
    assert_eq!(m.thinking_level_map.len(), 1);
}

#[test]
fn loopback_provider_runs_without_a_key() {
    let reg = from(
        r#"{"providers":{"vllm":{"baseUrl":"http://127.0.0.1:8000/v1","api":"openai-completions",
            "models":[{"id":"m"}]},
          "lmstudio":{"baseUrl":"http://localhost:1234/v1","api":"openai-completions",
            "apiKey":"LMSTUDIO_KEY","models":[{"id":"m2"}]}}}"#,
        &MapEnv::new(),
    );
    assert_eq!(reg.resolve("vllm/m").unwrap().api_key, None);
    assert_eq!(reg.resolve("lmstudio/m2").unwrap().api_key, None);
    let status = reg.providers_status();
    let vllm = status.iter().find(|s| s.provider == "vllm").unwrap();
    assert_eq!(vllm.key_source, KeySource::NotRequired);
    assert!(vllm.has_credentials);
}

#[test]
fn remote_custom_provider_without_key_is_missing_credentials() {
    let reg = from(
        r#"{"providers":{"remote":{"baseUrl":"https://api.example.com/v1","api":"openai-completions",
            "models":[{"id":"m"}]},
          "hdr":{"baseUrl":"https://h.example.com/v1","api":"openai-completions",
            "headers":{"x-token":"tok-literal"},"models":[{"id":"m"}]}}}"#,
        &MapEnv::new(),
    );
    match reg.resolve("remote/m").unwrap_err() {
        RegistryError::MissingCredentials { provider, env_var } => {
            assert_eq!(provider, "remote");
            assert_eq!(env_var, None);
        }
        other => panic!("{other:?}"),
    }
    // Header authentication counts as credentials.
    let m = reg.resolve("hdr/m").unwrap();
    assert_eq!(m.api_key, None);
    assert_eq!(
        m.headers.get("x-token").map(String::as_str),
        Some("tok-literal")
    );
}

#[test]
fn api_key_literal_env_and_command() {
    let json = r#"{"providers":{
      "lit":{"baseUrl":"https://a.example/v1","api":"openai-completions","apiKey":"sk-literal-1","models":[{"id":"m"}]},
      "envp":{"baseUrl":"https://b.example/v1","api":"openai-completions","apiKey":"MY_KEY","models":[{"id":"m"}]},
      "cmd":{"baseUrl":"https://c.example/v1","api":"openai-completions","apiKey":"!printf 'from-cmd\\n'","models":[{"id":"m"}]},
      "bad":{"baseUrl":"https://d.example/v1","api":"openai-completions","apiKey":"!echo nope >&2; exit 7","models":[{"id":"m"}]},
      "unset":{"baseUrl":"https://e.example/v1","api":"openai-completions","apiKey":"UNSET_KEY","models":[{"id":"m"}]}
    }}"#;
    let env = MapEnv::new().with("MY_KEY", "from-env");
    let reg = from(json, &env);
    assert_eq!(
        reg.resolve("lit/m").unwrap().api_key.as_deref(),
        Some("sk-literal-1")
    );
    assert_eq!(
        reg.resolve("envp/m").unwrap().api_key.as_deref(),
        Some("from-env")
    );
    assert_eq!(
        reg.resolve("cmd/m").unwrap().api_key.as_deref(),
        Some("from-cmd")
    );
    let err = reg.resolve("bad/m").unwrap_err();
    match &err {
        RegistryError::CredentialCommand {
            provider,
            what,
            message,
        } => {
            assert_eq!(provider, "bad");
            assert_eq!(what, "apiKey");
            assert!(message.contains("nope"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match reg.resolve("unset/m").unwrap_err() {
        RegistryError::MissingCredentials { env_var, .. } => {
            assert_eq!(env_var.as_deref(), Some("UNSET_KEY"))
        }
        other => panic!("{other:?}"),
    }

    let status = reg.providers_status();
    let kind = |n: &str| {
        status
            .iter()
            .find(|s| s.provider == n)
            .unwrap()
            .key_source
            .clone()
    };
    assert_eq!(kind("lit"), KeySource::Literal);
    assert_eq!(kind("cmd"), KeySource::Command);
    assert_eq!(
        kind("envp"),
        KeySource::EnvVar {
            name: "MY_KEY".into(),
            set: true
        }
    );
    assert_eq!(
        kind("unset"),
        KeySource::EnvVar {
            name: "UNSET_KEY".into(),
            set: false
        }
    );
    assert_eq!(
        kind("anthropic"),
        KeySource::EnvVar {
            name: "ANTHROPIC_API_KEY".into(),
            set: false
        }
    );
    // Listing never runs commands: a failing command still counts as configured.
    let bad = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "bad/m")
        .unwrap();
    assert!(bad.has_credentials);
    let unset = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "unset/m")
        .unwrap();
    assert!(!unset.has_credentials);
}

#[test]
fn headers_resolve_like_keys_and_auth_header_adds_bearer() {
    let json = r#"{"providers":{"proxy":{
      "baseUrl":"https://proxy.example.com/v1","api":"anthropic-messages","apiKey":"PROXY_KEY",
      "authHeader": true,
      "headers":{"x-portkey-api-key":"PORTKEY_API_KEY","x-static":"plain value","x-cmd":"!echo hdr"},
      "models":[{"id":"claude-x","headers":{"x-model":"yes"}}]}}}"#;
    let env = MapEnv::new()
        .with("PROXY_KEY", "pk")
        .with("PORTKEY_API_KEY", "portkey");
    let m = from(json, &env).resolve("proxy/claude-x").unwrap();
    assert_eq!(m.api, Api::AnthropicMessages);
    let h = |k: &str| m.headers.get(k).map(String::as_str);
    assert_eq!(h("x-portkey-api-key"), Some("portkey"));
    assert_eq!(h("x-static"), Some("plain value"));
    assert_eq!(h("x-cmd"), Some("hdr"));
    assert_eq!(h("x-model"), Some("yes"));
    assert_eq!(h("Authorization"), Some("Bearer pk"));

    // An unset variable in a header is reported like a missing key.
    let env = MapEnv::new().with("PROXY_KEY", "pk");
    match from(json, &env).resolve("proxy/claude-x").unwrap_err() {
        RegistryError::MissingCredentials { env_var, .. } => {
            assert_eq!(env_var.as_deref(), Some("PORTKEY_API_KEY"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn builtin_provider_override_without_models_changes_url_headers_and_key() {
    let json = r#"{"providers":{"anthropic":{
        "baseUrl":"https://my-proxy.example.com/v1",
        "apiKey":"PROXY_ANTHROPIC",
        "headers":{"x-team":"core"}}}}"#;
    let env = MapEnv::new().with("PROXY_ANTHROPIC", "proxy-key");
    let reg = from(json, &env);
    let m = reg.resolve("anthropic/claude-opus-4-1").unwrap();
    assert_eq!(m.base_url, "https://my-proxy.example.com/v1");
    assert_eq!(m.api_key.as_deref(), Some("proxy-key"));
    assert_eq!(m.headers.get("x-team").map(String::as_str), Some("core"));
    // All built-in models remain.
    assert_eq!(
        reg.list()
            .iter()
            .filter(|i| i.provider == "anthropic")
            .count(),
        ModelRegistry::builtin(&env)
            .list()
            .iter()
            .filter(|i| i.provider == "anthropic")
            .count()
    );
    assert!(reg.ignored_providers().is_empty());
}

#[test]
fn builtin_provider_models_are_upserted_by_id() {
    let json = r#"{"providers":{"openai":{
        "models":[{"id":"gpt-5","name":"My GPT-5","contextWindow":1000,"maxTokens":100},
                  {"id":"o-custom","reasoning":true}]}}}"#;
    let reg = from(json, &env());
    let m = reg.resolve("openai/gpt-5").unwrap();
    assert_eq!(m.name, "My GPT-5");
    assert_eq!((m.context_window, m.max_tokens), (1000, 100));
    // Replaced entirely: the built-in thinking map is gone with it.
    assert!(m.thinking_level_map.is_empty());
    let c = reg.resolve("openai/o-custom").unwrap();
    assert_eq!(c.api, Api::OpenAiResponses); // inherits the built-in provider's api
    assert_eq!(c.base_url, "https://api.openai.com/v1");
    assert_eq!(c.api_key.as_deref(), Some("sk-openai-test"));
    assert!(reg.resolve("openai/gpt-4.1").is_ok());
    let gpt5 = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "openai/gpt-5")
        .unwrap();
    assert_eq!(gpt5.source, ModelSource::File);
}

#[test]
fn model_overrides_patch_builtins_and_ignore_unknown_ids() {
    let json = r#"{"providers":{"anthropic":{
        "compat":{"supportsStore":false},
        "modelOverrides":{
          "claude-sonnet-4-5":{"name":"Sonnet (proxy)","maxTokens":32000,
              "cost":{"input":2.5},"compat":{"supportsStore":true,"supportsDeveloperRole":false},
              "headers":{"x-route":"eu"}},
          "claude-does-not-exist":{"name":"ignored"}
        }}}}"#;
    let reg = from(json, &env());
    let m = reg.resolve("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(m.name, "Sonnet (proxy)");
    assert_eq!(m.max_tokens, 32_000);
    assert_eq!(m.context_window, 200_000);
    assert_eq!(m.cost.input, 2.5);
    assert_eq!(m.cost.output, 15.0); // partial cost keeps the rest
    assert_eq!(m.compat.supports_store, Some(true));
    assert_eq!(m.compat.supports_developer_role, Some(false));
    assert_eq!(m.headers.get("x-route").map(String::as_str), Some("eu"));
    let info = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "anthropic/claude-sonnet-4-5")
        .unwrap();
    assert_eq!(info.source, ModelSource::BuiltIn);
    // Provider compat reaches the other built-in models too.
    let h = reg.resolve("anthropic/claude-haiku-4-5").unwrap();
    assert_eq!(h.compat.supports_store, Some(false));
    assert!(reg.resolve("anthropic/claude-does-not-exist").is_err());
}

#[test]
fn override_then_custom_model_with_same_id_replaces_it() {
    let json = r#"{"providers":{"openai":{
        "modelOverrides":{"gpt-5":{"name":"overridden"}},
        "models":[{"id":"gpt-5","name":"custom"}]}}}"#;
    let m = from(json, &env()).resolve("openai/gpt-5").unwrap();
    assert_eq!(m.name, "custom");
}

#[test]
fn unsupported_apis_are_listed_but_refused() {
    let json = r#"{"providers":{
      "my-google":{"baseUrl":"https://generativelanguage.googleapis.com/v1beta",
        "api":"google-generative-ai","apiKey":"GEMINI_API_KEY",
        "models":[{"id":"gemma-4-31b-it","name":"Gemma 4 31B","contextWindow":262144,"reasoning":true},
                  {"id":"via-openai","api":"openai-completions"}]},
      "noapi":{"baseUrl":"https://x.example/v1","apiKey":"k","models":[{"id":"m"}]},
      "nourl":{"api":"openai-completions","apiKey":"k","models":[{"id":"m"}]}
    }}"#;
    let env = MapEnv::new().with("GEMINI_API_KEY", "g");
    let reg = from(json, &env);
    let info = reg
        .list()
        .into_iter()
        .find(|i| i.full_name == "my-google/gemma-4-31b-it")
        .unwrap();
    assert_eq!(info.api, "google-generative-ai");
    assert!(
        info.unsupported
            .as_deref()
            .unwrap()
            .contains("google-generative-ai")
    );
    let err = reg.resolve("my-google/gemma-4-31b-it").unwrap_err();
    assert!(matches!(err, RegistryError::Unsupported { .. }));
    assert!(err.to_string().contains("not supported"));
    // A model-level api overrides the provider's.
    let ok = reg.resolve("my-google/via-openai").unwrap();
    assert_eq!(ok.api, Api::OpenAiCompletions);
    assert_eq!(ok.api_key.as_deref(), Some("g"));
    assert!(
        reg.resolve("noapi/m")
            .unwrap_err()
            .to_string()
            .contains("api")
    );
    assert!(
        reg.resolve("nourl/m")
            .unwrap_err()
            .to_string()
            .contains("baseUrl")
    );
}

#[test]
fn entries_for_pi_builtins_cadre_lacks_are_ignored() {
    let json = r#"{"providers":{"groq":{"apiKey":"GROQ_KEY"},
        "google":{"modelOverrides":{"gemini-2.5-pro":{"name":"x"}}}}}"#;
    let reg = from(json, &env());
    assert_eq!(reg.ignored_providers(), ["google", "groq"]);
    assert_eq!(
        reg.list().len(),
        ModelRegistry::builtin(&env()).list().len()
    );
}

#[test]
fn thinking_level_map_null_and_values() {
    let json = r#"{"providers":{"ds":{"baseUrl":"https://ds.example/v1","api":"openai-completions",
      "apiKey":"k","models":[{"id":"deepseek-v4-pro","reasoning":true,
      "thinkingLevelMap":{"minimal":null,"low":null,"medium":null,"high":"high","xhigh":"max"}}]}}}"#;
    let m = from(json, &env()).resolve("ds/deepseek-v4-pro").unwrap();
    assert_eq!(m.thinking_level_map.get(&ThinkingLevel::Low), Some(&None));
    assert_eq!(
        m.thinking_level_map.get(&ThinkingLevel::Xhigh),
        Some(&Some("max".to_string()))
    );
    assert_eq!(m.thinking_level_map.get(&ThinkingLevel::Off), None);
}

#[test]
fn malformed_json_names_file_and_location() {
    let err = ModelRegistry::from_json(
        "{\n  \"providers\": {\n    \"x\": { \"baseUrl\": 5 }\n  }\n}",
        ModelsFile::Cadre("/home/u/.cadre/models.json".into()),
        &env(),
    )
    .unwrap_err();
    match &err {
        RegistryError::Parse {
            path, line, column, ..
        } => {
            assert_eq!(path, Path::new("/home/u/.cadre/models.json"));
            assert_eq!(*line, 3);
            assert!(*column > 0);
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(text.starts_with("/home/u/.cadre/models.json:3:"), "{text}");
    assert!(!text.contains(" at line "), "{text}");

    let err = ModelRegistry::from_json("\n  [1]", ModelsFile::Cadre("/f.json".into()), &env())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "/f.json:2:3: invalid models.json: expected a JSON object at the top level"
    );
    for bad in [
        "{",
        "[]",
        "null",
        "\"str\"",
        "{\"providers\": {\"x\": {\"models\": [{}]}}}",
        "",
    ] {
        let err =
            ModelRegistry::from_json(bad, ModelsFile::Cadre("/f.json".into()), &env()).unwrap_err();
        assert!(matches!(err, RegistryError::Parse { .. }), "{bad}: {err:?}");
        assert!(err.to_string().contains("/f.json"));
    }
}

#[test]
fn compat_with_wrong_type_is_an_error_naming_the_model() {
    let json = r#"{"providers":{"p":{"baseUrl":"http://localhost/v1","api":"openai-completions",
      "models":[{"id":"m","compat":{"supportsDeveloperRole":"no"}}]}}}"#;
    let err =
        ModelRegistry::from_json(json, ModelsFile::Cadre("/f.json".into()), &env()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RegistryError::Invalid { .. }));
    assert!(
        text.contains("/f.json") && text.contains("p/m") && text.contains("compat"),
        "{text}"
    );
}

#[test]
fn load_prefers_cadre_file_then_pi_file_then_builtins() {
    let tmp = tempfile::tempdir().unwrap();
    let cadre = tmp.path().join("cadre");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&cadre).unwrap();
    let env = MapEnv::new().with("HOME", home.to_str().unwrap());

    // Nothing anywhere: built-ins only.
    let reg = ModelRegistry::load(&cadre, &env).unwrap();
    assert_eq!(reg.models_file(), &ModelsFile::None);

    // Pi's file is used when cadre has none.
    let pi = write(&home, ".pi/agent/models.json", OLLAMA);
    let reg = ModelRegistry::load(&cadre, &env).unwrap();
    assert_eq!(reg.models_file(), &ModelsFile::Pi(pi.clone()));
    assert_eq!(reg.source_file(), Some(pi.as_path()));
    assert!(reg.resolve("ollama/llama3.1:8b").is_ok());

    // cadre's own file wins and Pi's is not merged in.
    let own = write(
        &cadre,
        "models.json",
        r#"{"providers":{"mine":{"baseUrl":"http://localhost:1/v1","api":"openai-completions","models":[{"id":"x"}]}}}"#,
    );
    let reg = ModelRegistry::load(&cadre, &env).unwrap();
    assert_eq!(reg.models_file(), &ModelsFile::Cadre(own));
    assert!(reg.resolve("mine/x").is_ok());
    assert!(reg.resolve("ollama/llama3.1:8b").is_err());

    // Pi's file is never written.
    assert_eq!(std::fs::read_to_string(&pi).unwrap(), OLLAMA);
}

#[test]
fn load_honours_pi_coding_agent_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let pi_dir = tmp.path().join("pi-custom");
    let pi = write(&pi_dir, "models.json", OLLAMA);
    write(tmp.path(), "home/.pi/agent/models.json", "{ broken");
    let env = MapEnv::new()
        .with("HOME", tmp.path().join("home").to_str().unwrap())
        .with("PI_CODING_AGENT_DIR", pi_dir.to_str().unwrap());
    let reg = ModelRegistry::load(&tmp.path().join("cadre"), &env).unwrap();
    assert_eq!(reg.source_file(), Some(pi.as_path()));
}

#[test]
fn load_reports_malformed_file_with_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "models.json", "{\"providers\": [1, 2]}");
    let err = ModelRegistry::load(tmp.path(), &MapEnv::new()).unwrap_err();
    assert!(err.to_string().contains(path.to_str().unwrap()), "{err}");
    match err {
        RegistryError::Parse { line, column, .. } => assert_eq!((line, column), (1, 14)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn load_reports_unreadable_file() {
    let tmp = tempfile::tempdir().unwrap();
    // A directory where the file should be: exists but cannot be read as text.
    std::fs::create_dir_all(tmp.path().join("models.json")).unwrap();
    let err = ModelRegistry::load(tmp.path(), &MapEnv::new()).unwrap_err();
    assert!(matches!(err, RegistryError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("models.json"));
}

#[test]
fn env_is_read_once_at_load() {
    use std::cell::RefCell;
    let calls = RefCell::new(Vec::<String>::new());
    let env = |name: &str| {
        calls.borrow_mut().push(name.to_string());
        (name == "OPENAI_API_KEY").then(|| "sk-x".to_string())
    };
    let reg = ModelRegistry::builtin(&env);
    let before = calls.borrow().len();
    assert_eq!(
        reg.resolve("openai/gpt-5").unwrap().api_key.as_deref(),
        Some("sk-x")
    );
    assert_eq!(calls.borrow().len(), before);
}

#[test]
fn secrets_never_appear_in_debug_or_errors() {
    let json = r#"{"providers":{"p":{"baseUrl":"https://p.example/v1","api":"openai-completions",
      "apiKey":"sk-super-secret","authHeader":true,"headers":{"x-key":"hdr-secret"},
      "models":[{"id":"m"}]}}}"#;
    let reg = from(json, &env());
    let m = reg.resolve("p/m").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("sk-super-secret"));
    for text in [
        format!("{m:?}"),
        format!("{reg:?}"),
        format!("{:?}", reg.list()),
        format!("{:?}", reg.providers_status()),
    ] {
        assert!(!text.contains("sk-super-secret"), "{text}");
        assert!(!text.contains("hdr-secret"), "{text}");
        assert!(!text.contains("sk-ant-test"), "{text}");
    }
    let missing = ModelRegistry::builtin(&MapEnv::new())
        .resolve("gpt-5")
        .unwrap_err();
    assert!(!format!("{missing:?} {missing}").contains("sk-"));
}

#[test]
fn loopback_detection() {
    for yes in [
        "http://localhost:11434/v1",
        "http://LOCALHOST/v1",
        "http://127.0.0.1:8080",
        "http://127.1.2.3/v1",
        "http://[::1]:8000/v1",
        "http://user:pw@localhost:1/v1",
        "https://app.localhost/v1",
        "localhost:8080",
    ] {
        assert!(is_loopback_url(yes), "{yes}");
    }
    for no in [
        "https://api.openai.com/v1",
        "http://10.0.0.1:8000",
        "http://localhost.example.com/v1",
        "http://[::2]/v1",
        "http://0.0.0.0:1/v1",
        "",
    ] {
        assert!(!is_loopback_url(no), "{no}");
    }
}

#[test]
fn registry_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ModelRegistry>();
    assert_send_sync::<RegistryError>();
}

#[test]
fn pi_agent_dir_expands_a_leading_tilde_as_pi_does() {
    let env = MapEnv::new().with("HOME", "/h");
    assert_eq!(pi_agent_dir(&env), Some(PathBuf::from("/h/.pi/agent")));
    let env = env.with("PI_CODING_AGENT_DIR", "~/pi");
    assert_eq!(pi_agent_dir(&env), Some(PathBuf::from("/h/pi")));
    assert_eq!(
        pi_models_path(&env),
        Some(PathBuf::from("/h/pi/models.json"))
    );
    let env = env.with("PI_CODING_AGENT_DIR", "~");
    assert_eq!(pi_agent_dir(&env), Some(PathBuf::from("/h")));
    let env = env.with("PI_CODING_AGENT_DIR", "/abs/~x");
    assert_eq!(pi_agent_dir(&env), Some(PathBuf::from("/abs/~x")));
    assert_eq!(pi_agent_dir(&MapEnv::new()), None);
}

/// A cadre home without files and a Pi agent dir holding `auth`, with `vars` set.
fn with_pi_auth(auth: &str, vars: &[(&str, &str)]) -> (tempfile::TempDir, ModelRegistry) {
    let tmp = tempfile::tempdir().unwrap();
    let pi = tmp.path().join("pi");
    write(&pi, "auth.json", auth);
    let mut env = MapEnv::new().with("PI_CODING_AGENT_DIR", pi.to_str().unwrap());
    for (k, v) in vars {
        env = env.with(k, v);
    }
    let reg = ModelRegistry::load(&tmp.path().join("cadre"), &env).unwrap();
    (tmp, reg)
}

#[test]
fn stored_keys_come_after_the_environment() {
    let auth = r#"{
      "anthropic": {"type": "api_key", "key": "sk-ant-from-auth-file"},
      "openai": {"type": "api_key", "key": "sk-openai-from-auth-file"},
      "openrouter": {"type": "oauth", "access": "a", "refresh": "r", "expires": 0}
    }"#;
    let (_tmp, reg) = with_pi_auth(auth, &[("OPENAI_API_KEY", "sk-openai-from-env")]);
    assert!(matches!(reg.auth_file(), AuthFile::Pi(_)));
    // No variable: the stored key.
    let m = reg.resolve("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("sk-ant-from-auth-file"));
    // The variable wins over the file.
    let m = reg.resolve("openai/gpt-5").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("sk-openai-from-env"));
    // OAuth entries are skipped, with a note.
    assert!(matches!(
        reg.resolve("openrouter/anthropic/claude-sonnet-4.5"),
        Err(RegistryError::MissingCredentials { .. })
    ));
    assert!(
        reg.auth_notes()
            .iter()
            .any(|n| n.contains("OAuth") && n.contains("openrouter")),
        "{:?}",
        reg.auth_notes()
    );
    let status = reg.providers_status();
    let anthropic = status.iter().find(|p| p.provider == "anthropic").unwrap();
    assert!(anthropic.has_credentials);
    assert!(matches!(anthropic.key_source, KeySource::Stored { .. }));
    let openai = status.iter().find(|p| p.provider == "openai").unwrap();
    assert!(matches!(
        openai.key_source,
        KeySource::EnvVar { set: true, .. }
    ));
    // Both stored keys are secrets, the one in use or not.
    let mut secrets = reg.stored_secrets();
    secrets.sort();
    assert_eq!(
        secrets,
        vec!["sk-ant-from-auth-file", "sk-openai-from-auth-file"]
    );
}

#[test]
fn stored_keys_serve_file_providers_and_name_variables() {
    let tmp = tempfile::tempdir().unwrap();
    let cadre = tmp.path().join("cadre");
    write(
        &cadre,
        "models.json",
        r#"{"providers":{"corp":{"baseUrl":"https://llm.corp.example/v1","api":"openai-completions","models":[{"id":"m"}]}}}"#,
    );
    write(
        &cadre,
        "auth.json",
        r#"{"corp":{"type":"api_key","key":"CORP_TOKEN"},"anthropic":{"type":"api_key","key":"UNSET_TOKEN"}}"#,
    );
    let env = MapEnv::new().with("CORP_TOKEN", "corp-secret-value-1");
    let reg = ModelRegistry::load(&cadre, &env).unwrap();
    assert_eq!(reg.auth_file(), &AuthFile::Cadre(cadre.join("auth.json")));
    let m = reg.resolve("corp/m").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("corp-secret-value-1"));
    // The variable it names is a credential to hide from commands, like models.json's.
    assert!(
        reg.referenced_env_names()
            .contains(&"CORP_TOKEN".to_string())
    );
    // A stored name of an unset variable is no key: the usual error, naming the usual variable.
    match reg.resolve("anthropic/claude-sonnet-4-5") {
        Err(RegistryError::MissingCredentials { env_var, .. }) => {
            assert_eq!(env_var.as_deref(), Some("ANTHROPIC_API_KEY"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_runtime_key_wins_for_its_provider_only() {
    let (_tmp, mut reg) = with_pi_auth(
        r#"{"anthropic":{"type":"api_key","key":"sk-ant-from-auth-file"}}"#,
        &[("OPENAI_API_KEY", "sk-openai-from-env")],
    );
    assert!(reg.has_provider("openai") && !reg.has_provider("nope"));
    // The provider a key is for is found before any key is there.
    assert_eq!(
        reg.provider_of("anthropic/claude-sonnet-4-5").unwrap(),
        "anthropic"
    );
    assert_eq!(reg.provider_of("gpt-5").unwrap(), "openai");
    assert!(reg.provider_of("nope/x").is_err());
    reg.set_runtime_api_key("openai", "sk-openai-from-flag".into());
    let m = reg.resolve("openai/gpt-5").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("sk-openai-from-flag"));
    let m = reg.resolve("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(m.api_key.as_deref(), Some("sk-ant-from-auth-file"));
    // A provider without any other key becomes usable.
    assert!(
        reg.resolve("openrouter/anthropic/claude-sonnet-4.5")
            .is_err()
    );
    reg.set_runtime_api_key("openrouter", "sk-or-from-flag-123".into());
    assert!(
        reg.resolve("openrouter/anthropic/claude-sonnet-4.5")
            .is_ok()
    );
    assert!(!format!("{reg:?}").contains("from-flag"));
}

#[test]
fn input_follows_pi_defaults_and_overrides() {
    let reg = from(
        r#"{"providers":{
          "ollama":{"baseUrl":"http://localhost:11434/v1","api":"openai-completions","models":[
            {"id":"plain"},{"id":"vision","input":["text","image"]}]},
          "anthropic":{"modelOverrides":{"claude-haiku-4-5":{"input":["text"]}}}
        }}"#,
        &env(),
    );
    // Pi's default for a file model is text only.
    assert!(!reg.resolve("ollama/plain").unwrap().accepts_images());
    assert!(reg.resolve("ollama/vision").unwrap().accepts_images());
    // Built-ins read images unless an override says otherwise.
    assert!(
        reg.resolve("anthropic/claude-sonnet-4-5")
            .unwrap()
            .accepts_images()
    );
    let haiku = reg.resolve("anthropic/claude-haiku-4-5").unwrap();
    assert_eq!(haiku.input, vec!["text".to_string()]);
}
