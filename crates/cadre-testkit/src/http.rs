//! Just enough HTTP/1.1: read requests, write a response head, chunked body pieces.
//!
//! Connections are persistent like a real provider's: after a complete response the next
//! request is read from the same connection (bytes a client sent ahead are carried over). A
//! response that ends the connection says `connection: close`; one that keeps it says nothing,
//! which HTTP/1.1 reads as keep-alive.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Request heads larger than this are rejected; real clients send a few hundred bytes.
const MAX_HEAD: usize = 64 * 1024;
/// Bodies larger than this are rejected (a generous bound for long conversations).
const MAX_BODY: usize = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("connection closed before a complete request")]
    Closed,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("request too large")]
    TooLarge,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// Lower-cased names, values trimmed.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// An HTTP/1.0 request, whose connection closes unless it asks otherwise.
    pub http10: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the client lets the connection live on after the response: HTTP/1.1 unless it
    /// says `connection: close`; HTTP/1.0 only if it asks for `keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let has = |token: &str| {
            self.header("connection")
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        };
        if self.http10 {
            has("keep-alive")
        } else {
            !has("close")
        }
    }
}

/// Reads one request: head up to the blank line, then a `content-length` or chunked body.
/// Answers `expect: 100-continue` (curl sends it for large bodies) before reading the body.
/// `carry` holds bytes already read from the connection and is left holding whatever follows
/// this request (the start of a pipelined next one).
pub(crate) async fn read_request<S: AsyncRead + AsyncWrite + Unpin>(
    reader: &mut S,
    carry: &mut Vec<u8>,
) -> Result<Request, HttpError> {
    let mut buf = std::mem::take(carry);
    let head_end = loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at;
        }
        if buf.len() > MAX_HEAD {
            return Err(HttpError::TooLarge);
        }
        if read_more(reader, &mut buf).await? == 0 {
            return Err(HttpError::Closed);
        }
    };
    let head = std::str::from_utf8(&buf[..head_end])
        .map_err(|_| HttpError::Malformed("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().ok_or(HttpError::Malformed("empty head"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::Malformed("bad request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed("unsupported HTTP version"));
    }
    let path = target.split('?').next().unwrap_or(target).to_string();
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or(HttpError::Malformed("header without colon"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut request = Request {
        method: method.to_string(),
        path,
        headers,
        body: Vec::new(),
        http10: version == "HTTP/1.0",
    };
    let mut rest = buf.split_off(head_end + 4);
    if request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        reader.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        reader.flush().await?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    request.body = if chunked {
        read_chunked(reader, rest, carry).await?
    } else {
        let length = match request.header("content-length") {
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| HttpError::Malformed("bad content-length"))?,
            None => 0,
        };
        if length > MAX_BODY {
            return Err(HttpError::TooLarge);
        }
        while rest.len() < length {
            if read_more(reader, &mut rest).await? == 0 {
                return Err(HttpError::Closed);
            }
        }
        *carry = rest.split_off(length);
        rest
    };
    Ok(request)
}

/// Decodes a chunked request body; `buf` holds bytes already read past the head.
async fn read_chunked<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut buf: Vec<u8>,
    carry: &mut Vec<u8>,
) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(at) = find(&buf, b"\r\n") {
                break at;
            }
            if read_more(reader, &mut buf).await? == 0 {
                return Err(HttpError::Closed);
            }
        };
        let size_text = std::str::from_utf8(&buf[..line_end])
            .map_err(|_| HttpError::Malformed("bad chunk size"))?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Malformed("bad chunk size"))?;
        if body.len() + size > MAX_BODY {
            return Err(HttpError::TooLarge);
        }
        if size == 0 {
            // Optional trailers follow, then a blank line; nothing in them matters here.
            let mut tail = buf.split_off(line_end);
            loop {
                if let Some(at) = find(&tail, b"\r\n\r\n") {
                    *carry = tail.split_off(at + 4);
                    break;
                }
                if read_more(reader, &mut tail).await? == 0 {
                    // Tolerate a client that closes right after the last chunk.
                    break;
                }
            }
            return Ok(body);
        }
        let data_start = line_end + 2;
        let needed = data_start + size + 2;
        while buf.len() < needed {
            if read_more(reader, &mut buf).await? == 0 {
                return Err(HttpError::Closed);
            }
        }
        body.extend_from_slice(&buf[data_start..data_start + size]);
        buf.drain(..needed);
    }
}

async fn read_more<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut chunk = [0u8; 8 * 1024];
    let n = reader.read(&mut chunk).await?;
    buf.extend_from_slice(&chunk[..n]);
    Ok(n)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "Unknown",
    }
}

/// Writes a status line and headers, plus `connection: close` when `close` (the connection
/// ends after this response).
pub(crate) async fn write_head<W: AsyncWrite + Unpin>(
    writer: &mut W,
    status: u16,
    headers: &[(&str, String)],
    close: bool,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes()).await?;
    writer.flush().await
}

/// A complete response with a fixed-length body.
pub(crate) async fn write_full<W: AsyncWrite + Unpin>(
    writer: &mut W,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
    close: bool,
) -> std::io::Result<()> {
    let mut all: Vec<(&str, String)> = headers.to_vec();
    all.push(("content-length", body.len().to_string()));
    write_head(writer, status, &all, close).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// One chunk of a `transfer-encoding: chunked` body, flushed so the client sees it now.
pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(
    writer: &mut W,
    data: &[u8],
) -> std::io::Result<()> {
    if data.is_empty() {
        // An empty chunk would end the body.
        return Ok(());
    }
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    writer.write_all(&out).await?;
    writer.flush().await
}

/// Ends a chunked body.
pub(crate) async fn write_last_chunk<W: AsyncWrite + Unpin>(writer: &mut W) -> std::io::Result<()> {
    writer.write_all(b"0\r\n\r\n").await?;
    writer.flush().await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    async fn parse(raw: &[u8]) -> Result<Request, HttpError> {
        let mut stream = tokio::io::join(raw, Vec::new());
        read_request(&mut stream, &mut Vec::new()).await
    }

    #[tokio::test]
    async fn answers_expect_continue() {
        let raw = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}";
        let mut stream = tokio::io::join(&raw[..], Vec::new());
        let r = read_request(&mut stream, &mut Vec::new()).await.unwrap();
        assert_eq!(r.body, b"{}");
        assert_eq!(stream.writer(), b"HTTP/1.1 100 Continue\r\n\r\n");
        let mut stream = tokio::io::join(&b"POST / HTTP/1.1\r\n\r\n"[..], Vec::new());
        read_request(&mut stream, &mut Vec::new()).await.unwrap();
        assert!(stream.writer().is_empty());
    }

    #[tokio::test]
    async fn content_length_body() {
        let r = parse(b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nX-Api-Key:  k \r\n\r\nbodyEXTRA")
            .await
            .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.header("x-api-key"), Some("k"));
        assert_eq!(r.body, b"body");
    }

    #[tokio::test]
    async fn chunked_body_with_extensions_and_trailers() {
        let r = parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(r.body, b"abcde");
    }

    #[tokio::test]
    async fn pipelined_requests_are_read_one_after_another() {
        let raw = b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\nPOST /c HTTP/1.1\r\n\r\n";
        let mut stream = tokio::io::join(&raw[..], Vec::new());
        let mut carry = Vec::new();
        let a = read_request(&mut stream, &mut carry).await.unwrap();
        assert_eq!((a.path.as_str(), a.body.as_slice()), ("/a", &b"{}"[..]));
        let b = read_request(&mut stream, &mut carry).await.unwrap();
        assert_eq!((b.path.as_str(), b.body.as_slice()), ("/b", &b"x"[..]));
        let c = read_request(&mut stream, &mut carry).await.unwrap();
        assert_eq!(c.path, "/c");
        assert!(carry.is_empty());
        assert!(matches!(
            read_request(&mut stream, &mut carry).await,
            Err(HttpError::Closed)
        ));
    }

    #[tokio::test]
    async fn keep_alive_follows_version_and_connection_header() {
        for (raw, keep) in [
            (&b"POST / HTTP/1.1\r\n\r\n"[..], true),
            (b"POST / HTTP/1.1\r\nConnection: Close\r\n\r\n", false),
            (
                b"POST / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n",
                false,
            ),
            (b"POST / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true),
            (b"POST / HTTP/1.0\r\n\r\n", false),
            (b"POST / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ] {
            let r = parse(raw).await.unwrap();
            assert_eq!(r.keep_alive(), keep, "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[tokio::test]
    async fn no_body_without_length() {
        let r = parse(b"GET /x HTTP/1.1\r\n\r\n").await.unwrap();
        assert!(r.body.is_empty());
    }

    #[tokio::test]
    async fn bad_requests() {
        for raw in [
            &b""[..],
            b"POST / HTTP/1.1\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"POST /\r\n\r\n",
            b"POST / SPDY/3\r\n\r\n",
            b"POST / HTTP/1.1\r\nnocolon\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n",
        ] {
            assert!(
                parse(raw).await.is_err(),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
        let huge = vec![b'a'; MAX_HEAD + 10];
        assert!(matches!(parse(&huge).await, Err(HttpError::TooLarge)));
    }

    #[tokio::test]
    async fn writes_chunked_framing() {
        let mut out = Vec::new();
        write_head(
            &mut out,
            200,
            &[("content-type", "text/event-stream".into())],
            false,
        )
        .await
        .unwrap();
        write_chunk(&mut out, b"data: x\n\n").await.unwrap();
        write_chunk(&mut out, b"").await.unwrap();
        write_last_chunk(&mut out).await.unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n9\r\ndata: x\n\n\r\n0\r\n\r\n"
        );
        let mut out = Vec::new();
        write_full(&mut out, 429, &[], b"{}", true).await.unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 429 Too Many Requests\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
        );
    }
}
