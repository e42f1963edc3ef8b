//! Who may ask: the token (random or given), where a request may carry it, and the `Host`
//! check against DNS rebinding.

use std::net::SocketAddr;

use axum::http::{header, HeaderMap};

use super::DashboardError;

/// The bytes of a random token (256 bits).
const RANDOM_BYTES: usize = 32;

/// A random 256-bit token, as 64 hex digits, from the operating system's random source.
pub(crate) fn random_token() -> Result<String, DashboardError> {
    let mut bytes = [0u8; RANDOM_BYTES];
    fill_random(&mut bytes).map_err(DashboardError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(unix)]
fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

#[cfg(not(unix))]
fn fill_random(_buf: &mut [u8]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no /dev/urandom on this platform",
    ))
}

/// Checks a token given by the user: it travels in a URL's fragment and a header, so only
/// unreserved URL characters, and it must be long enough to guess hard.
pub(crate) fn check_token(token: &str) -> Result<(), DashboardError> {
    if token.len() < 16 {
        return Err(DashboardError::Token("shorter than 16 characters"));
    }
    if token.len() > 256 {
        return Err(DashboardError::Token("longer than 256 characters"));
    }
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
    {
        return Err(DashboardError::Token(
            "only A-Z a-z 0-9 - . _ ~ are allowed (it goes into URLs and cookies)",
        ));
    }
    Ok(())
}

/// Compares in time independent of where the first difference is.
pub(crate) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `headers` carry `token`: `Authorization: Bearer <token>` or `X-Sentinel-Token`.
/// Cookies are never read: a browser sends a host's cookies to every port of it.
pub(crate) fn has_token(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        // The scheme's name is case-insensitive (RFC 9110).
        .filter_map(|v| {
            v.get(..7)
                .filter(|s| s.eq_ignore_ascii_case("bearer "))
                .map(|_| &v[7..])
        })
        .any(|t| same(t.trim(), token));
    let custom = headers
        .get_all("x-sentinel-token")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|t| same(t.trim(), token));
    bearer || custom
}

/// Whether the `Host` header names this server: the bound address, or `localhost`,
/// `127.0.0.1`, `[::1]` with the bound port, or one of `extra` with any port (those are
/// usually behind a proxy). Anything else may be a DNS-rebinding page reaching loopback through a name
/// of its own.
pub(crate) fn host_allowed(headers: &HeaderMap, addr: SocketAddr, extra: &[String]) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    let (name, port) = split_port(&host);
    // A browser leaves the port out only when it is HTTP's default.
    let port_ok = port.unwrap_or(80) == addr.port();
    if extra.iter().any(|h| h == name) {
        return true;
    }
    if !port_ok {
        return false;
    }
    let bound = match addr {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    };
    name == bound || matches!(name, "localhost" | "127.0.0.1" | "[::1]")
}

/// `name[:port]`, with IPv6 literals in brackets.
fn split_port(host: &str) -> (&str, Option<u16>) {
    let colon = if host.starts_with('[') {
        host.find(']')
            .and_then(|end| host[end + 1..].starts_with(':').then_some(end + 1))
    } else {
        host.rfind(':')
    };
    match colon {
        Some(i) => (&host[..i], host[i + 1..].parse().ok()),
        None => (host, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_host(host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        h
    }

    #[test]
    fn hosts_other_than_loopback_names_with_the_port_are_refused() {
        let addr: SocketAddr = "127.0.0.1:8719".parse().unwrap();
        for ok in [
            "127.0.0.1:8719",
            "localhost:8719",
            "LOCALHOST:8719",
            "[::1]:8719",
        ] {
            assert!(host_allowed(&with_host(ok), addr, &[]), "{ok}");
        }
        for bad in [
            "evil.example:8719",
            "127.0.0.1:80",
            "localhost",
            "127.0.0.1",
            "localhost.evil.example:8719",
            "[::1]",
        ] {
            assert!(!host_allowed(&with_host(bad), addr, &[]), "{bad}");
        }
        assert!(!host_allowed(&HeaderMap::new(), addr, &[]));
        let extra = vec!["dash.example".to_owned()];
        assert!(host_allowed(&with_host("dash.example"), addr, &extra));
        assert!(host_allowed(&with_host("dash.example:8719"), addr, &extra));
        assert!(host_allowed(&with_host("dash.example:443"), addr, &extra));
        assert!(!host_allowed(
            &with_host("other.example:8719"),
            addr,
            &extra
        ));
    }

    #[test]
    fn tokens_are_random_hex_of_256_bits_and_user_tokens_are_checked() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(check_token(&a).is_ok());
        assert!(check_token("short").is_err());
        assert!(check_token("has space in it, long enough").is_err());
        assert!(check_token("semi;colon-long-enough-token").is_err());
    }

    #[test]
    fn only_a_header_carries_the_token_never_a_cookie() {
        let t = "0123456789abcdef";
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; c_1=0123456789abcdef"),
        );
        assert!(!has_token(&h, t));
        h.insert(
            "x-sentinel-token",
            HeaderValue::from_static("0123456789abcdef"),
        );
        assert!(has_token(&h, t));
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer 0123456789abcdeX"),
        );
        assert!(!has_token(&h, t));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer 0123456789abcdef"),
        );
        assert!(has_token(&h, t));
    }
}
