//! A request's hotspot parameters: the client's address, and how values are hashed.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;

use super::view::View;

/// The hash of a parameter's value: a value hashes as its text does
/// (`EntryBuilder::param("vip")`, `HotspotRule::exception("vip", ..)`), and a missing value as a
/// value of its own.
pub(super) fn hash_value(value: Option<&str>) -> u64 {
    match value {
        Some(text) => crate::param::hash(text),
        None => crate::param::hash(&None::<&str>),
    }
}

/// The hash of `ip`'s text (`hash_value(Some("10.0.0.1"))`), without allocating: the address is
/// written on the stack (an IPv6 address is at most 45 characters). An IPv4 address is written
/// by hand: `Display` took about 1 100 instructions a request, most of a per-client layer's
/// cost.
pub(super) fn hash_ip(ip: IpAddr) -> u64 {
    if let IpAddr::V4(v4) = ip {
        let mut buf = [0u8; 15];
        let mut len = 0;
        for (i, octet) in v4.octets().into_iter().enumerate() {
            if i > 0 {
                buf[len] = b'.';
                len += 1;
            }
            if octet >= 100 {
                buf[len] = b'0' + octet / 100;
                len += 1;
            }
            if octet >= 10 {
                buf[len] = b'0' + octet / 10 % 10;
                len += 1;
            }
            buf[len] = b'0' + octet % 10;
            len += 1;
        }
        // SAFETY: `buf[..len]` holds only the ASCII bytes written above (`b'0'..=b'9'` and
        // `b'.'`), so it is valid UTF-8 (checking it took 87 instructions a request).
        let text = unsafe { std::str::from_utf8_unchecked(&buf[..len]) };
        return hash_value(Some(text));
    }
    hash_ip_displayed(ip)
}

/// [`hash_ip`] through `Display`.
fn hash_ip_displayed(ip: IpAddr) -> u64 {
    hash_displayed(format_args!("{ip}"))
}

/// The hash of a short text (at most 64 bytes written on the stack; longer: allocated).
fn hash_displayed(args: fmt::Arguments<'_>) -> u64 {
    use std::fmt::Write as _;
    struct Stack {
        buf: [u8; 64],
        len: usize,
    }
    impl fmt::Write for Stack {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let end = self.len + s.len();
            let slot = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
            slot.copy_from_slice(s.as_bytes());
            self.len = end;
            Ok(())
        }
    }
    let mut text = Stack {
        buf: [0; 64],
        len: 0,
    };
    match text
        .write_fmt(args)
        .ok()
        .and_then(|()| std::str::from_utf8(&text.buf[..text.len]).ok())
    {
        Some(text) => hash_value(Some(text)),
        None => hash_value(Some(&args.to_string())),
    }
}

/// The default IPv6 prefix a client is bucketed by: a /64, what every home and cloud host is
/// given (and can rotate addresses within at will).
pub(super) const DEFAULT_IPV6_PREFIX: u8 = 64;

/// The hash of a client's address as a hotspot value: an IPv4 address as its text
/// ([`hash_ip`]); an IPv6 address as the text of its first `v6_prefix` bits, in CIDR notation
/// (`2001:db8:1:2::/64`), or at 128 as its own text.
#[inline]
pub(super) fn hash_client(ip: IpAddr, v6_prefix: u8) -> u64 {
    match ip {
        IpAddr::V4(v4) => hash_v4(v4),
        IpAddr::V6(v6) if v6_prefix < 128 => hash_v6_prefix(v6, v6_prefix),
        ip => hash_ip(ip),
    }
}

/// The slots of each thread's cache of IPv4 clients' hashes ([`hash_v4`]).
const CLIENT_SLOTS: usize = 256;

thread_local! {
    /// IPv4 clients' hashes recently computed by this thread: `(1 << 32 | address, hash)`, in
    /// the slot the address's bits pick (direct-mapped: a client whose slot another took is
    /// hashed again). A fixed 4 KiB per thread, whatever clients send.
    static CLIENT_HASHES: std::cell::Cell<[(u64, u64); CLIENT_SLOTS]> =
        const { std::cell::Cell::new([(0, 0); CLIENT_SLOTS]) };
}

/// [`hash_ip`] of an IPv4 client, from this thread's cache when it holds the address: the
/// same hash (the process's hash key is fixed once any value was hashed), without writing the
/// address's text.
#[inline]
fn hash_v4(v4: std::net::Ipv4Addr) -> u64 {
    let bits = u32::from(v4);
    let key = 1 << 32 | u64::from(bits);
    // Fibonacci hashing: the top 8 bits of the product mix every bit of the address.
    let slot = (bits.wrapping_mul(0x9E37_79B9) >> 24) as usize;
    let cached = CLIENT_HASHES.try_with(|cache| {
        let cache: &std::cell::Cell<[_]> = cache;
        cache
            .as_slice_of_cells()
            .get(slot)
            .map(std::cell::Cell::get)
    });
    if let Ok(Some((k, hash))) = cached
        && k == key
    {
        return hash;
    }
    hash_v4_slow(v4, slot, key)
}

/// [`hash_v4`] for an address not in the cache: hashes its text and caches the hash.
#[cold]
#[inline(never)]
fn hash_v4_slow(v4: std::net::Ipv4Addr, slot: usize, key: u64) -> u64 {
    let hash = hash_ip(IpAddr::V4(v4));
    let _ = CLIENT_HASHES.try_with(|cache| {
        let cache: &std::cell::Cell<[_]> = cache;
        if let Some(cell) = cache.as_slice_of_cells().get(slot) {
            cell.set((key, hash));
        }
    });
    hash
}

/// The text [`hash_client`] hashes: an IPv4 address, or an IPv6 prefix in CIDR notation (its
/// own text at 128). Built only for blocked requests (the dashboard shows it).
pub(super) fn client_text(ip: IpAddr, v6_prefix: u8) -> String {
    match ip {
        IpAddr::V6(v6) if v6_prefix < 128 => format!("{}/{v6_prefix}", v6_network(v6, v6_prefix)),
        ip => ip.to_string(),
    }
}

/// The hash of the text of `v6`'s first `bits` bits (below 128), in CIDR notation.
fn hash_v6_prefix(v6: std::net::Ipv6Addr, bits: u8) -> u64 {
    hash_displayed(format_args!("{}/{bits}", v6_network(v6, bits)))
}

/// `v6` with all but its first `bits` bits (below 128) cleared: the network of its prefix.
fn v6_network(v6: std::net::Ipv6Addr, bits: u8) -> std::net::Ipv6Addr {
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    std::net::Ipv6Addr::from(u128::from(v6) & mask)
}

/// The client's address: see [`SentinelLayer::client_ip`]. An IPv4-mapped IPv6 address (what a
/// dual-stack `[::]` listener reports for an IPv4 client, `::ffff:10.0.0.1`) is the IPv4
/// address it maps, so a client is one value whichever socket it came in on.
#[inline]
pub(super) fn client_ip(view: View<'_>, trusted_proxies: usize) -> Option<IpAddr> {
    raw_client_ip(view, trusted_proxies).map(|ip| ip.to_canonical())
}

/// [`client_ip`] as the request gives it.
fn raw_client_ip(view: View<'_>, trusted_proxies: usize) -> Option<IpAddr> {
    if trusted_proxies > 0 {
        // The `trusted_proxies`th entry from the right, over every header in order. Split as
        // bytes: an entry that is not text (the client's junk) is still one entry, so it cannot
        // hide the entries right of it.
        let from_right = view
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .rev()
            .flat_map(|v| v.as_bytes().rsplit(|&b| b == b','))
            .nth(trusted_proxies - 1);
        if let Some(entry) = from_right {
            return std::str::from_utf8(entry)
                .ok()
                .and_then(|entry| parse_addr(entry.trim()));
        }
    }
    view.extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .or_else(|| view.extensions.get::<SocketAddr>().map(SocketAddr::ip))
}

/// Whether a request without a peer address was reported ([`no_client_address`]).
#[cfg(feature = "tracing")]
pub(super) static REPORTED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// `client_ip` found no address for a request. Without a peer address (the service was served
/// without connect info) every request shares one value, so a per-client limit limits every
/// client together: with the `tracing` feature, the first such request is reported as a
/// warning (once per process). A request whose `X-Forwarded-For` entry is not an address has a
/// peer address and is not reported (it is the client's doing).
#[cold]
pub(super) fn no_client_address(view: View<'_>) {
    #[cfg(feature = "tracing")]
    {
        use std::sync::atomic::Ordering;
        let no_peer = view.extensions.get::<ConnectInfo<SocketAddr>>().is_none()
            && view.extensions.get::<SocketAddr>().is_none();
        if no_peer && !REPORTED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                target: "sentinel",
                "SentinelLayer::client_ip: a request has no peer address (serve with \
                 `into_make_service_with_connect_info::<SocketAddr>()`); every request without \
                 one shares one client's limit"
            );
        }
    }
    #[cfg(not(feature = "tracing"))]
    let _ = view;
}

/// An `X-Forwarded-For` entry: an IP address, possibly with a port; an IPv6 address possibly
/// in brackets (`[2001:db8::1]`, `[2001:db8::1]:443`).
pub(super) fn parse_addr(s: &str) -> Option<IpAddr> {
    if let Some(v6) = s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6);
    }
    s.parse::<IpAddr>()
        .ok()
        .or_else(|| s.parse::<SocketAddr>().ok().map(|a| a.ip()))
}
