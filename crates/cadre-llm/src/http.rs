//! The shared HTTP client and the mapping of HTTP failures to typed errors.
//!
//! One `reqwest::Client` serves every request of the process so connections (and TLS sessions)
//! are reused across turns. TLS is rustls with the `ring` provider, installed as the process
//! default once because reqwest is built without a provider of its own; certificates are checked
//! by `rustls-platform-verifier`, which reqwest uses by default.
//!
//! The classification functions are pure so the status/body/header rules can be tested without a
//! server.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{ErrorKind, LlmError};

/// Longest error body read from a failed response; the useful message is near the start.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The process-wide HTTP client, built on first use.
pub fn shared_client() -> Result<reqwest::Client, LlmError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // Fails only when a provider is already installed, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .tcp_keepalive(Duration::from_secs(30))
                .pool_idle_timeout(Duration::from_secs(90))
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
        })
        .clone()
        .map_err(LlmError::Fatal)
}

/// How an HTTP status (with its body text) should be treated.
pub fn classify_status(status: u16, body: &str) -> ErrorKind {
    let lower = body.to_ascii_lowercase();
    match status {
        401 | 403 => ErrorKind::Auth,
        402 => ErrorKind::Quota,
        429 if is_quota_wording(&lower) => ErrorKind::Quota,
        429 => ErrorKind::Retryable,
        400 | 413 if is_context_overflow_wording(&lower) => ErrorKind::ContextOverflow,
        408 | 409 | 529 => ErrorKind::Retryable,
        500..=599 => ErrorKind::Retryable,
        _ => ErrorKind::Fatal,
    }
}

fn is_quota_wording(lower: &str) -> bool {
    ["insufficient_quota", "quota", "credit", "billing"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Phrases providers use when the prompt does not fit (OpenAI, Anthropic, vLLM, llama.cpp,
/// OpenRouter, Ollama).
pub fn is_context_overflow_wording(lower: &str) -> bool {
    [
        "context_length_exceeded",
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "exceeds the context",
        "input is too long",
        "request_too_large",
        "reduce the length",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Delay asked for by the response headers: `retry-after-ms` (more precise) wins over
/// `retry-after`, which may be seconds or an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(parse_millis) {
        return Some(ms);
    }
    get("retry-after").and_then(|v| parse_retry_after(v, now))
}

fn parse_millis(s: &str) -> Option<Duration> {
    let ms: f64 = s.trim().parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// Parse a `retry-after` value: delay seconds (fractions tolerated) or an HTTP date (a date in
/// the past means "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(v)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parse an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only HTTP date format servers
/// are allowed to send.
pub fn parse_http_date(s: &str) -> Option<SystemTime> {
    let (_weekday, rest) = s.trim().split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let h: u64 = hms.next()?.parse().ok()?;
    let m: u64 = hms.next()?.parse().ok()?;
    let sec: u64 = hms.next()?.parse().ok()?;
    if parts.next()? != "GMT" || parts.next().is_some() || hms.next().is_some() {
        return None;
    }
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || year < 1970 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The human message of an error body: `error.message` (OpenAI, Anthropic), `message`,
/// `detail`, a string `error`, or else the start of the body itself.
pub fn error_message(body: &str) -> Option<String> {
    let text = body.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        let candidates = [
            v.pointer("/error/message"),
            v.pointer("/message"),
            v.pointer("/detail"),
            v.pointer("/error"),
            v.pointer("/0/error/message"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str()
                && !s.trim().is_empty()
            {
                return Some(truncate(s.trim(), 500));
            }
        }
    }
    Some(truncate(text, 300))
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Remove a secret from a message before it leaves the crate.
pub fn redact(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(k) if k.len() >= 4 => message.replace(k, "[redacted]"),
        _ => message.to_string(),
    }
}

/// The typed error for a non-success response.
pub fn http_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    api_key: Option<&str>,
) -> LlmError {
    let message = error_message(body).unwrap_or_else(|| {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no error body")
            .to_string()
    });
    LlmError::Http {
        provider: provider.to_string(),
        status,
        message: redact(&message, api_key),
        retry_after,
        kind: classify_status(status, body),
    }
}

/// An error event inside a stream that began with a success status: typed as if the response
/// had been `status` with `body` (so retries, auth and context overflow are classified the same),
/// but said as `stream error: {shown}`.
pub(crate) fn stream_event_error(provider: &str, status: u16, body: &str, shown: &str) -> LlmError {
    let mut e = http_error(provider, status, None, body, None);
    if let LlmError::Http { message, .. } = &mut e {
        *message = format!("stream error: {shown}");
    }
    e
}

/// A transport failure (connect, reset, broken body) as a retryable connection error. The URL is
/// left out of the message: it is known to the caller and may carry query parameters.
pub fn connection_error(provider: &str, err: reqwest::Error, api_key: Option<&str>) -> LlmError {
    let builder = err.is_builder();
    // Name where cadre tried to connect (scheme, host and port only: a path or query could
    // carry a credential), so a wrong `baseUrl` is obvious from the error alone.
    let origin = err.url().map(|u| {
        let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
        format!("{}://{}{port}", u.scheme(), u.host_str().unwrap_or(""))
    });
    let mut message = redact(&error_chain(&err.without_url()), api_key);
    if let Some(origin) = origin {
        message = format!("{origin}: {message}");
    }
    if builder {
        // The request could not even be built (bad URL scheme, bad header): retrying cannot help.
        return LlmError::Fatal(format!("cannot send the request to {provider}: {message}"));
    }
    LlmError::Connection {
        provider: provider.to_string(),
        message,
    }
}

/// An error and its sources on one line (reqwest's top-level message alone is vague).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let s_msg = s.to_string();
        if !msg.contains(&s_msg) {
            msg.push_str(": ");
            msg.push_str(&s_msg);
        }
        source = s.source();
    }
    msg
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn status_classification() {
        assert_eq!(classify_status(429, ""), ErrorKind::Retryable);
        assert_eq!(
            classify_status(429, r#"{"error":{"code":"insufficient_quota"}}"#),
            ErrorKind::Quota
        );
        assert_eq!(
            classify_status(429, "You exceeded your current QUOTA"),
            ErrorKind::Quota
        );
        assert_eq!(
            classify_status(429, "Your credit balance is too low"),
            ErrorKind::Quota
        );
        assert_eq!(classify_status(402, ""), ErrorKind::Quota);
        assert_eq!(classify_status(401, ""), ErrorKind::Auth);
        assert_eq!(classify_status(403, ""), ErrorKind::Auth);
        assert_eq!(
            classify_status(400, "This model's maximum context length is 8192 tokens"),
            ErrorKind::ContextOverflow
        );
        assert_eq!(
            classify_status(
                400,
                r#"{"error":{"message":"prompt is too long: 210000 tokens"}}"#
            ),
            ErrorKind::ContextOverflow
        );
        assert_eq!(
            classify_status(
                413,
                r#"{"type":"error","error":{"type":"request_too_large"}}"#
            ),
            ErrorKind::ContextOverflow
        );
        assert_eq!(classify_status(400, "bad field"), ErrorKind::Fatal);
        assert_eq!(classify_status(413, "nope"), ErrorKind::Fatal);
        assert_eq!(classify_status(404, ""), ErrorKind::Fatal);
        assert_eq!(classify_status(422, ""), ErrorKind::Fatal);
        for s in [408, 409, 500, 502, 503, 504, 529] {
            assert_eq!(classify_status(s, ""), ErrorKind::Retryable, "{s}");
        }
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("NaN", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(951_825_600))
        );
        for bad in [
            "",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun, 06 Nov 1960 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_after_headers_prefer_millis() {
        let now = SystemTime::now();
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
        h.insert("retry-after-ms", HeaderValue::from_static("junk"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
    }

    #[test]
    fn error_messages_from_bodies() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Rate limited","type":"x"}}"#).as_deref(),
            Some("Rate limited")
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .as_deref(),
            Some("Overloaded")
        );
        assert_eq!(
            error_message(r#"{"detail":"nope"}"#).as_deref(),
            Some("nope")
        );
        assert_eq!(
            error_message(r#"{"error":"plain"}"#).as_deref(),
            Some("plain")
        );
        assert_eq!(
            error_message(r#"[{"error":{"message":"gemini style"}}]"#).as_deref(),
            Some("gemini style")
        );
        assert_eq!(
            error_message("<html>bad gateway</html>").as_deref(),
            Some("<html>bad gateway</html>")
        );
        assert_eq!(error_message("  "), None);
        let long = "é".repeat(400);
        let m = error_message(&long).unwrap();
        assert!(m.ends_with('…') && m.len() < 310);
    }

    #[test]
    fn http_error_redacts_the_key_and_falls_back_to_reason() {
        let e = http_error(
            "openai",
            401,
            None,
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-123"}}"#,
            Some("sk-secret-123"),
        );
        let shown = e.to_string();
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert_eq!(e.kind(), ErrorKind::Auth);
        let e = http_error("openai", 503, Some(Duration::from_secs(1)), "", None);
        assert!(e.to_string().contains("Service Unavailable"));
        assert_eq!(e.retry_after(), Some(Duration::from_secs(1)));
        assert!(e.is_retryable());
    }

    #[test]
    fn redact_ignores_tiny_or_missing_secrets() {
        assert_eq!(redact("abc", None), "abc");
        assert_eq!(redact("a b", Some("a")), "a b");
        assert_eq!(redact("key=abcd!", Some("abcd")), "key=[redacted]!");
    }

    #[test]
    fn client_builds_once() {
        assert!(shared_client().is_ok());
        assert!(shared_client().is_ok());
    }
}
