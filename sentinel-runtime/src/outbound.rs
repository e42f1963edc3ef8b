//! What the outbound integrations share (the tower client layer, the reqwest middleware): the
//! default name of a call, `"{METHOD}:{scheme}://{host}[:{port}]"`, found without building the
//! name on every call, which answers count as errors, and what a call its caller gave up on
//! counts as ([`InFlight`]).
//!
//! A name is made of pieces ([`Target`]): the method, the scheme and the host as the URL has
//! them, and the port unless it is the scheme's default (so `http://inventory:80` and
//! `http://inventory` are one resource, as `reqwest`'s URLs write them). User information
//! (`user:secret@`) is never part of a name: names are shown in metrics and on the page.
//!
//! Each thread keeps the nodes of its recently called targets ([`RECENT`]) under the request's
//! own pieces ([`Key`]: the method, the scheme and the authority as the request has them), in
//! the slot a hash of the authority picks; a hit compares those pieces, so a call to a host
//! called before costs a hash and a comparison: no parsing of the authority, no allocation,
//! no lookup in the registry.

use std::cell::RefCell;
use std::hash::BuildHasher;

use http::Method;

use crate::node::ResourceNode;
use crate::registry::node_by_name;
use crate::Entry;

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
        if let Some(scheme) = self.scheme
            && !(f(scheme) && f("://"))
        {
            return false;
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

/// A request's target as the request has it: the key of [`RECENT`]. The tower layer's is the
/// URI's scheme and authority (`user@host:port`, unparsed); the middleware's, the URL's scheme,
/// host and port (each read in place).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key<'a> {
    pub(crate) method: &'a Method,
    pub(crate) scheme: &'a str,
    pub(crate) authority: &'a str,
    pub(crate) port: Option<u16>,
}

/// One target's node in [`RECENT`]: its key (the scheme and authority in one string) and
/// its node.
struct Cached {
    method: Method,
    port: Option<u16>,
    scheme_len: usize,
    /// The scheme, then the authority.
    text: Box<str>,
    node: &'static ResourceNode,
}

impl Cached {
    #[inline]
    fn is(&self, key: &Key<'_>) -> bool {
        let (scheme, authority) = self.text.split_at(self.scheme_len.min(self.text.len()));
        self.method == *key.method
            && self.port == key.port
            && authority == key.authority
            && scheme == key.scheme
    }
}

/// The slots of each thread's cache of outbound targets.
const RECENT_SLOTS: usize = 16;

thread_local! {
    /// Nodes of the targets this thread called recently, in the slot [`slot`] picks.
    static RECENT: RefCell<[Option<Cached>; RECENT_SLOTS]> =
        const { RefCell::new([const { None }; RECENT_SLOTS]) };
}

/// The slot of [`RECENT`] for `key`.
#[inline]
fn slot(key: &Key<'_>) -> usize {
    let h = foldhash::fast::FixedState::with_seed(0).hash_one(key.authority);
    (h ^ u64::from(key.port.unwrap_or(0))) as usize % RECENT_SLOTS
}

/// The node of a call's default name: this thread's cached node for `key`, else the
/// registry's for the name of `target` (built once), cached for the next call. A name refused
/// by the cap on resources gets the shared overflow node, which is not cached (the next new
/// name may be admitted).
#[inline]
pub(crate) fn default_node<'a>(
    key: &Key<'a>,
    target: impl FnOnce() -> Target<'a>,
) -> &'static ResourceNode {
    let slot = slot(key);
    let hit = RECENT.try_with(|recent| {
        let recent = recent.try_borrow().ok()?;
        let cached = recent.get(slot)?.as_ref()?;
        cached.is(key).then_some(cached.node)
    });
    match hit {
        Ok(Some(node)) => node,
        _ => default_node_uncached(key, &target(), slot),
    }
}

#[cold]
#[inline(never)]
fn default_node_uncached(key: &Key<'_>, target: &Target<'_>, slot: usize) -> &'static ResourceNode {
    let name = target.name();
    let node = node_by_name(&name);
    if node.name() == name {
        let cached = Cached {
            method: key.method.clone(),
            port: key.port,
            scheme_len: key.scheme.len(),
            text: [key.scheme, key.authority].concat().into_boxed_str(),
            node,
        };
        let _ = RECENT.try_with(|recent| {
            if let Ok(mut recent) = recent.try_borrow_mut()
                && let Some(entry) = recent.get_mut(slot)
            {
                *entry = Some(cached);
            }
        });
    }
    node
}

/// The [`BlockError`](crate::BlockError) in `err` or in its
/// [`source`](std::error::Error::source) chain: what both clients' `block_error` look for.
pub(crate) fn block_in<'e>(
    err: &'e (dyn std::error::Error + 'static),
) -> Option<&'e crate::BlockError> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(block) = e.downcast_ref::<crate::BlockError>() {
            return Some(block);
        }
        next = e.source();
    }
    None
}

/// Whether an HTTP status counts as the call's error (for the statistics, the circuit breakers
/// and the adaptive limit): a 5xx. A 4xx is the caller's mistake, not the downstream's failure.
#[inline]
pub(crate) fn is_error_status(status: u16) -> bool {
    (500..600).contains(&status)
}

/// An outbound call's entry until its answer (a response's head, or the client's error) comes.
/// Dropped before that, the caller gave up on the call (its own timeout, a `select!` that took
/// another branch, an aborted task): if `abandoned_is_error`, the call counts as an error
/// (finished, so also for the circuit breakers, the outlier rules and the adaptive limit: a
/// dependency that hangs is a failing one); else it is abandoned, which decides nothing.
#[derive(Debug)]
pub(crate) struct InFlight {
    entry: Option<Entry>,
    abandoned_is_error: bool,
}

impl InFlight {
    pub(crate) fn new(entry: Entry, abandoned_is_error: bool) -> InFlight {
        InFlight {
            entry: Some(entry),
            abandoned_is_error,
        }
    }

    /// The entry, while the call waits for its answer (the tower client layer's throttled
    /// path reads it).
    #[cfg(feature = "tower")]
    #[inline]
    pub(crate) fn entry(&self) -> Option<&Entry> {
        self.entry.as_ref()
    }

    /// The answer came: the entry, for its outcome (`None` once taken).
    #[inline]
    pub(crate) fn answered(&mut self) -> Option<Entry> {
        self.entry.take()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take()
            && self.abandoned_is_error
        {
            entry.set_error();
            entry.finish();
        }
    }
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
        }
    }

    #[test]
    fn a_cached_node_is_the_registrys_node_of_the_name() {
        let key = |method, authority, port| Key {
            method,
            scheme: "http",
            authority,
            port,
        };
        let node = |key: &Key<'static>| {
            let host = key.authority;
            let method = key.method.as_str();
            default_node(key, || target(method, Some("http"), Some(host), key.port))
        };
        let get = &Method::GET;
        let a = key(get, "outbound-unit-a.test", Some(81));
        let b = key(get, "outbound-unit-b.test", Some(81));
        let node_a = node(&a);
        assert_eq!(node_a.name(), "GET:http://outbound-unit-a.test:81");
        // A hit does not build the target.
        let hit = default_node(&a, || panic!("a hit builds nothing"));
        assert!(std::ptr::eq(hit, node_a));
        let node_b = node(&b);
        assert_eq!(node_b.name(), "GET:http://outbound-unit-b.test:81");
        // Whatever slots they share, each finds its own node.
        for _ in 0..3 {
            assert!(std::ptr::eq(node(&a), node_a));
            assert!(std::ptr::eq(node(&b), node_b));
        }
        assert!(std::ptr::eq(node_a, node_by_name(node_a.name())));
        // Another method, port or scheme is another key.
        let post = key(&Method::POST, "outbound-unit-a.test", Some(81));
        assert_eq!(node(&post).name(), "POST:http://outbound-unit-a.test:81");
        let other_port = key(get, "outbound-unit-a.test", Some(82));
        assert_eq!(
            node(&other_port).name(),
            "GET:http://outbound-unit-a.test:82"
        );
        let https = Key {
            scheme: "https",
            ..a
        };
        let node_https = default_node(&https, || {
            target("GET", Some("https"), Some("outbound-unit-a.test"), Some(81))
        });
        assert_eq!(node_https.name(), "GET:https://outbound-unit-a.test:81");
    }

    #[test]
    fn only_5xx_is_an_error() {
        assert!(is_error_status(500) && is_error_status(503) && is_error_status(599));
        assert!(!is_error_status(404) && !is_error_status(429) && !is_error_status(200));
    }
}
