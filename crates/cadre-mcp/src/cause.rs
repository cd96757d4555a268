//! Short causes for rmcp's errors. rmcp's own texts quote whole URLs (with the query a token
//! can be in), debug dumps of messages and the HTTP client's chain of causes; what cadre shows
//! is one short phrase of its own, with at most a bounded, one-line server message.

use std::error::Error;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::shown::server_text;

/// Why initializing failed.
pub fn init_cause(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", transport_cause(error))
        }
        ClientInitializeError::ConnectionClosed(_) => "the connection closed".into(),
        ClientInitializeError::JsonRpcError(data) => {
            format!("it refused to initialize: {}", server_text(&data.message))
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
            "it supports no protocol version cadre does".into()
        }
        _ => "it did not answer the initialize request as MCP requires".into(),
    }
}

/// Why a request (listing tools, a call) failed.
pub fn service_cause(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => server_text(&data.message),
        ServiceError::TransportSend(error) => transport_cause(error),
        ServiceError::TransportClosed => "the connection closed".into(),
        ServiceError::UnexpectedResponse => "it answered with the wrong kind of result".into(),
        ServiceError::Timeout { .. } => "the request timed out".into(),
        ServiceError::Cancelled { .. } => "the request was cancelled".into(),
        _ => "the request failed".into(),
    }
}

/// The cause of a transport error: what the HTTP client says without its URL, an I/O error's
/// kind, or the first phrase of the transport's own message.
pub fn transport_cause(error: &(dyn Error + 'static)) -> String {
    let mut next: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(http) = e.downcast_ref::<reqwest::Error>() {
            return http_cause(http);
        }
        // rmcp wraps the HTTP client's error without naming it as the source.
        if let Some(StreamableHttpError::Client(http)) =
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return http_cause(http);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return format!("I/O error ({})", io.kind());
        }
        next = e.source();
    }
    // rmcp's transport errors read `<fixed phrase>: <details>`; the details can quote the URL.
    let text = error.source().unwrap_or(error).to_string();
    let phrase = text.split(": ").next().unwrap_or("");
    if phrase.is_empty() || phrase.contains("://") {
        "the transport failed".into()
    } else {
        server_text(phrase)
    }
}

fn http_cause(e: &reqwest::Error) -> String {
    if let Some(status) = e.status() {
        format!("it answered HTTP {}", status.as_u16())
    } else if e.is_timeout() {
        "the HTTP request timed out".into()
    } else if e.is_connect() {
        "cannot connect to it".into()
    } else if e.is_redirect() {
        "it answered with a redirect, which is not followed".into()
    } else if e.is_body() || e.is_decode() {
        "its HTTP answer could not be read".into()
    } else {
        "the HTTP request failed".into()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapped(&'static str, Option<std::io::Error>);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl Error for Wrapped {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_ref().map(|e| e as _)
        }
    }

    #[test]
    fn causes_are_short_and_quote_no_url() {
        let e = Wrapped(
            "Client error: error sending request for url (https://h/?k=secret)",
            None,
        );
        assert_eq!(transport_cause(&e), "Client error");
        let e = Wrapped("https://h/?k=secret: failed", None);
        assert_eq!(transport_cause(&e), "the transport failed");
        let e = Wrapped(
            "x",
            Some(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
        );
        assert_eq!(transport_cause(&e), "I/O error (broken pipe)");
        assert_eq!(
            service_cause(&ServiceError::TransportClosed),
            "the connection closed"
        );
    }
}
