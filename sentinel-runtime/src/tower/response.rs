//! Reading responses (gRPC or not, error or not) and answering blocked requests.

use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};

use super::config::IsErrorFn;
use crate::block_kinds::BlockClass;
use crate::{BlockError, BlockKind};

/// Whether a request or response is gRPC (`content-type: application/grpc...`, any case; gRPC-Web
/// included).
pub(super) fn is_grpc(headers: &HeaderMap) -> bool {
    headers.get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes()
            .get(..GRPC.len())
            .is_some_and(|prefix| prefix == GRPC || prefix.eq_ignore_ascii_case(GRPC))
    })
}

pub(super) const GRPC: &[u8] = b"application/grpc";

/// Whether a request is gRPC: a `POST` (gRPC calls are nothing else) with a gRPC content type.
/// A response is read as gRPC only if its request may be one, so a plain `GET` reads no
/// content type.
pub(super) fn is_grpc_request(method: &http::Method, headers: &HeaderMap) -> bool {
    method == http::Method::POST && is_grpc(headers)
}

pub(super) static GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// Whether a response counts as an error, by its status and `headers` (its head, or its
/// trailers); `grpc`: the response is gRPC (its head says so).
pub(super) fn classify(
    custom: Option<&IsErrorFn>,
    status: StatusCode,
    headers: &HeaderMap,
    grpc: bool,
) -> bool {
    if let Some(f) = custom {
        return f(status, headers);
    }
    if status.is_server_error() {
        return true;
    }
    // `grpc-status` in the head (a trailers-only gRPC response) or in the trailers. A custom
    // header name's lookup is not cheap, so plain HTTP responses skip it.
    grpc && matches!(
        headers.get(&GRPC_STATUS).map(HeaderValue::as_bytes),
        Some(b"4" | b"13" | b"14")
    )
}

/// Whether the response to a call this process made counts as an error, by its status and
/// `headers` (its head, or its trailers): a 5xx, or for a gRPC response (`grpc`) any
/// `grpc-status` but 0 `OK`. Unlike a server's own answers ([`classify`]), every gRPC error a
/// downstream returns is its failure as far as the caller's breakers are concerned.
#[inline]
pub(super) fn classify_outbound(status: StatusCode, headers: &HeaderMap, grpc: bool) -> bool {
    if crate::outbound::is_error_status(status.as_u16()) {
        return true;
    }
    grpc && headers
        .get(&GRPC_STATUS)
        .is_some_and(|v| v.as_bytes() != b"0")
}

/// How a block is answered: HTTP status, gRPC status. By the block's class (from the list of
/// block kinds, `block_kinds.rs`), never by its kind.
pub(super) fn answer(kind: BlockKind) -> (StatusCode, u8) {
    match kind.class() {
        BlockClass::Overload => (StatusCode::TOO_MANY_REQUESTS, 8),
        BlockClass::Forbidden => (StatusCode::FORBIDDEN, 7),
        // "Overloaded, come back later" (an ejected endpoint: "unavailable, try another").
        BlockClass::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, 14),
    }
}

/// `Retry-After` in whole seconds: the rule's hint rounded up, at least 1 (1 without a hint).
pub(super) fn retry_after_secs(block: &BlockError) -> u64 {
    block.retry_after().map_or(1, |d| {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        secs.max(1)
    })
}

/// The default response to a blocked request with `method` and the headers `request`.
pub(super) fn rejection(
    block: &BlockError,
    method: &http::Method,
    request: &HeaderMap,
) -> Response<String> {
    let (status, grpc_status) = answer(block.kind());
    let message = public_message(block, status);
    if is_grpc_request(method, request) {
        // The request's own gRPC content type: a gRPC-Web client expects its own back.
        let content_type = request
            .get(CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/grpc"));
        let mut response = Response::new(String::new());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, content_type);
        headers.insert("grpc-status", HeaderValue::from(u16::from(grpc_status)));
        // Percent-encoded: printable ASCII only, always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&percent_encode(&message)) {
            headers.insert("grpc-message", value);
        }
        return response;
    }
    let mut response = Response::new(message);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status != StatusCode::FORBIDDEN {
        headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(block)));
    }
    response
}

/// What a client is told of a block: the status's own words and, unless it is a 403, when to
/// retry (`Too Many Requests; retry after 2 s`). Nothing of the rule, the resource or the
/// caller: those stay with [`SentinelLayer::on_block`](super::SentinelLayer::on_block) (the
/// [`BlockError`]) and the logs.
pub(super) fn public_message(block: &BlockError, status: StatusCode) -> String {
    let words = status.canonical_reason().unwrap_or("Refused");
    if status == StatusCode::FORBIDDEN {
        return words.to_owned();
    }
    format!("{words}; retry after {} s", retry_after_secs(block))
}

/// gRPC's percent-encoding of `grpc-message`: printable ASCII except `%` stays.
pub(super) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
