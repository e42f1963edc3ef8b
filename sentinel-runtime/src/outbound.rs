//! What the outbound integrations share (the tower client layer, the reqwest middleware): the
//! default name of a call, `"{METHOD}:{scheme}://{host}[:{port}]"`, found without building the
//! name on every call, and which answers count as errors.
//!
//! A name is made of pieces ([`Target`]): the method, the scheme and the host as the URL has
//! them, and the port unless it is the scheme's default (so `http://inventory:80` and
//! `http://inventory` are one resource, as `reqwest`'s URLs write them). User information
//! (`user:secret@`) is never part of a name: names are shown in metrics and on the page.
//!
//! Each thread keeps the nodes of its recently called targets ([`RECENT`]), in the slot a hash
//! of the target picks; a hit compares the node's own name, piece by piece, with the target,
//! so a call to a host called before costs a hash and a comparison, no allocation and no
//! lookup in the registry.

use std::cell::Cell;

use crate::node::ResourceNode;
use crate::registry::node_by_name;

/// The name of a call whose request has no host (a tonic `Channel` given a bare path: it adds
/// the origin itself, after the layers in front of it).
pub(crate) const NO_HOST: &str = "<unknown>";

/// The pieces of an outbound call's default name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) method: &'a str,
    /// `None`: no scheme (the name has no `scheme://`).
    pub(crate) scheme: Option<&'a str>,
    /// `None`: no host (the name is `"{METHOD}:<unknown>"`).
    pub(crate) host: Option<&'a str>,
    pub(crate) port: Option<u16>,
}

impl Target<'_> {
    /// The port as the name writes it: `None` for none, or the scheme's default.
    fn shown_port(&self) -> Option<u16> {
        let default = match self.scheme {
            Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("ws") => Some(80),
            Some(s) if s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("wss") => {
                Some(443)
            }
            _ => None,
        };
        self.port.filter(|p| Some(*p) != default)
    }

    /// Calls `f` with each piece of the name, in order, until it returns `false`; whether every
    /// call returned `true`.
    fn pieces(&self, mut f: impl FnMut(&str) -> bool) -> bool {
        let mut digits = [0u8; 5];
        if !(f(self.method) && f(":")) {
            return false;
        }
        let Some(host) = self.host else {
            return f(NO_HOST);
        };
        if let Some(scheme) = self.scheme {
            if !(f(scheme) && f("://")) {
                return false;
            }
        }
        if !f(host) {
            return false;
        }
        match self.shown_port() {
            Some(port) => f(":") && f(write_port(port, &mut digits)),
            None => true,
        }
    }

    /// The name, built (a cache miss).
    pub(crate) fn name(&self) -> String {
        let mut name = String::with_capacity(64);
        self.pieces(|piece| {
            name.push_str(piece);
            true
        });
        name
    }

    /// Whether `name` is this target's name.
    fn is_named(&self, name: &str) -> bool {
        let mut rest = name;
        self.pieces(|piece| match rest.strip_prefix(piece) {
            Some(r) => {
                rest = r;
                true
            }
            None => false,
        }) && rest.is_empty()
    }

    /// The slot of [`RECENT`] this target is cached in.
    fn slot(&self) -> usize {
        let mut h = u64::from(self.port.unwrap_or(0)) ^ ((self.method.len() as u64) << 16);
        for b in self.host.unwrap_or("").bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        (h ^ (h >> 29)) as usize % RECENT_SLOTS
    }
}

/// The decimal digits of `port`, written into `buf`.
fn write_port(mut port: u16, buf: &mut [u8; 5]) -> &str {
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = b'0' + (port % 10) as u8;
        port /= 10;
        if port == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[start..]).unwrap_or("0")
}

/// The slots of each thread's cache of outbound targets.
const RECENT_SLOTS: usize = 16;

thread_local! {
    /// Nodes of the targets this thread called recently, in the slot [`Target::slot`] picks.
    static RECENT: [Cell<Option<&'static ResourceNode>>; RECENT_SLOTS] =
        const { [const { Cell::new(None) }; RECENT_SLOTS] };
}

/// The node of `target`'s default name: this thread's cached node if its name is the target's,
/// else the registry's (the name built once), cached for the next call. A name refused by the
/// cap on resources gets the shared overflow node, which is not cached (its name is another).
#[inline]
pub(crate) fn default_node(target: &Target<'_>) -> &'static ResourceNode {
    let slot = target.slot();
    let cached = RECENT
        .try_with(|recent| recent.get(slot).and_then(Cell::get))
        .ok()
        .flatten();
    match cached {
        Some(node) if target.is_named(node.name()) => node,
        _ => default_node_uncached(target, slot),
    }
}

#[cold]
#[inline(never)]
fn default_node_uncached(target: &Target<'_>, slot: usize) -> &'static ResourceNode {
    let name = target.name();
    let node = node_by_name(&name);
    if node.name() == name {
        let _ = RECENT.try_with(|recent| {
            if let Some(cell) = recent.get(slot) {
                cell.set(Some(node));
            }
        });
    }
    node
}

/// Whether an HTTP status counts as the call's error (for the statistics, the circuit breakers
/// and the adaptive limit): a 5xx. A 4xx is the caller's mistake, not the downstream's failure.
#[inline]
pub(crate) fn is_error_status(status: u16) -> bool {
    (500..600).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target<'a>(
        method: &'a str,
        scheme: Option<&'a str>,
        host: Option<&'a str>,
        port: Option<u16>,
    ) -> Target<'a> {
        Target {
            method,
            scheme,
            host,
            port,
        }
    }

    #[test]
    fn names_are_method_scheme_host_and_a_port_that_is_not_the_default() {
        let cases = [
            (
                target("GET", Some("http"), Some("inventory"), Some(8080)),
                "GET:http://inventory:8080",
            ),
            (
                target("GET", Some("http"), Some("inventory"), Some(80)),
                "GET:http://inventory",
            ),
            (
                target("POST", Some("https"), Some("pay.test"), Some(443)),
                "POST:https://pay.test",
            ),
            (
                target("POST", Some("https"), Some("pay.test"), Some(80)),
                "POST:https://pay.test:80",
            ),
            (
                target("PUT", Some("http"), Some("[::1]"), Some(0)),
                "PUT:http://[::1]:0",
            ),
            (
                target("GET", Some("http"), Some("a"), Some(65535)),
                "GET:http://a:65535",
            ),
            (
                target("GET", None, Some("proxy"), Some(3128)),
                "GET:proxy:3128",
            ),
            (target("POST", None, None, None), "POST:<unknown>"),
            (
                target("POST", Some("http"), None, Some(1)),
                "POST:<unknown>",
            ),
        ];
        for (target, name) in cases {
            assert_eq!(target.name(), name, "{target:?}");
            assert!(target.is_named(name), "{target:?}");
            assert!(!target.is_named(&format!("{name}x")), "{target:?}");
            assert!(!target.is_named(&name[..name.len() - 1]), "{target:?}");
        }
        let a = target("GET", Some("http"), Some("a"), Some(81));
        assert!(!a.is_named("GET:http://a:8"));
        assert!(!a.is_named("GET:http://b:81"));
        assert!(!a.is_named("POST:http://a:81"));
    }

    #[test]
    fn a_cached_node_is_the_registrys_node_of_the_name() {
        let a = target("GET", Some("http"), Some("outbound-unit-a.test"), Some(81));
        let b = target("GET", Some("http"), Some("outbound-unit-b.test"), Some(81));
        let node_a = default_node(&a);
        assert_eq!(node_a.name(), "GET:http://outbound-unit-a.test:81");
        assert!(std::ptr::eq(default_node(&a), node_a), "a hit");
        let node_b = default_node(&b);
        assert_eq!(node_b.name(), "GET:http://outbound-unit-b.test:81");
        // Whatever slots they share, each finds its own node.
        for _ in 0..3 {
            assert!(std::ptr::eq(default_node(&a), node_a));
            assert!(std::ptr::eq(default_node(&b), node_b));
        }
        assert!(std::ptr::eq(node_a, node_by_name(&a.name())));
    }

    #[test]
    fn only_5xx_is_an_error() {
        assert!(is_error_status(500) && is_error_status(503) && is_error_status(599));
        assert!(!is_error_status(404) && !is_error_status(429) && !is_error_status(200));
    }
}
