//! Default resource names: `"{METHOD}:{route}"`, a gRPC method path, or `<unmatched>`; never
//! anything a client can vary without bound.

use super::response::is_grpc_request;
use axum::extract::MatchedPath;

use super::view::View;
use crate::registry::node_by_name;

/// A method as resource names spell it: a standard method by its name, `HEAD` as `GET` (routers
/// such as axum run a `get` handler for `HEAD`: the same work is under the same rule), any other
/// (a client can invent any number) as `OTHER`.
pub(super) fn method_name(method: &http::Method) -> &str {
    match method.as_str() {
        "HEAD" => "GET",
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "OPTIONS" | "PATCH" | "CONNECT" | "TRACE") => m,
        _ => "OTHER",
    }
}

/// How many names [`method_name`] gives: a route's [`RouteNodes`] keeps a node for each.
const METHOD_KINDS: usize = 9;

/// The index of [`method_name`]'s name for `method`, below [`METHOD_KINDS`].
#[inline]
fn method_index(method: &http::Method) -> usize {
    use http::Method;
    // The common methods first; `HEAD` as `GET`.
    if *method == Method::GET || *method == Method::HEAD {
        0
    } else if *method == Method::POST {
        1
    } else if *method == Method::PUT {
        2
    } else if *method == Method::DELETE {
        3
    } else if *method == Method::PATCH {
        4
    } else if *method == Method::OPTIONS {
        5
    } else if *method == Method::CONNECT {
        6
    } else if *method == Method::TRACE {
        7
    } else {
        8
    }
}

/// The nodes of one layered service's route, by method ([`method_index`]), each resolved once,
/// at its first request: axum's `Router::layer` makes one service per route, whose requests
/// all carry the same matched-path string, so a hit is one comparison of that string's address
/// with the one held here (the held string keeps its address from being given to any other).
/// A service reached under several routes (one service given to several `route_service`
/// calls) keeps the first route it saw, and its other routes are found through the per-thread
/// cache ([`ROUTES`]), as every route was before; so is a route whose string axum builds again
/// for each request (under `nest_service`). Bounded: at most one string and node per method
/// kind.
#[derive(Default)]
pub(super) struct RouteNodes(
    [std::sync::OnceLock<(MatchedPath, &'static crate::ResourceNode)>; METHOD_KINDS],
);

/// The longest gRPC method path used as a name.
pub(super) const MAX_GRPC_PATH: usize = 256;

/// Whether `s` is a protobuf identifier.
fn identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `s` is a gRPC service name, `package.Service` in protobuf identifiers.
fn service_name(s: &str) -> bool {
    s.split('.').all(identifier)
}

/// `path` if it is a gRPC method path, `/package.Service/Method` in protobuf identifiers, at
/// most [`MAX_GRPC_PATH`] bytes: anything else a client sends is not a name.
pub(super) fn grpc_method_path(path: &str) -> Option<&str> {
    if path.len() > MAX_GRPC_PATH {
        return None;
    }
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    (service_name(service) && identifier(method)).then_some(path)
}

/// The service of a route that serves one gRPC service, as tonic's routes in axum are:
/// `/{service}/{*rest}` with a package-qualified service name (`/helloworld.Greeter/{*rest}`
/// gives `helloworld.Greeter`). Any other route, wildcard or not, names its requests itself:
/// a REST catch-all of one plain segment (`/api/{*rest}`) has the same shape, and a client must
/// not leave its rules by sending a gRPC content type. (A service declared without a package,
/// `/Greeter/{*rest}`, is therefore named by its route.)
pub(super) fn grpc_service_route(route: &str) -> Option<&str> {
    let (service, rest) = route.strip_prefix('/')?.split_once('/')?;
    let wildcard = rest.starts_with("{*") && rest.ends_with('}') && !rest.contains('/');
    (wildcard && service.contains('.') && service_name(service)).then_some(service)
}

/// The method path of a gRPC request, if it may name it: a `POST` with a gRPC content type, a
/// gRPC method path, and either no route or a route that serves the path's own service
/// ([`grpc_service_route`]), with that route's service. Any other request under a route is
/// named by the route, so a client cannot leave the route's rules by adding a header.
fn grpc_name<'a, 'r>(view: View<'a>, route: Option<&'r str>) -> Option<(&'a str, Option<&'r str>)> {
    let service = match route {
        Some(route) => Some(grpc_service_route(route)?),
        None => None,
    };
    if !is_grpc_request(view.method, view.headers) {
        return None;
    }
    let path = grpc_method_path(view.uri.path())?;
    match service {
        Some(service) => {
            path[1..].starts_with(service) && path.as_bytes().get(service.len() + 1) == Some(&b'/')
        }
        None => true,
    }
    .then_some((path, service))
}

/// The most gRPC method names learned per service ([`learn`]).
pub(super) const MAX_LEARNED_PER_SERVICE: usize = 256;
/// The most gRPC method names learned in all.
pub(super) const MAX_LEARNED: usize = 4_096;

/// How many method names each service has had learned, and in all.
#[derive(Default)]
struct Learned {
    per_service: std::collections::HashMap<Box<str>, usize>,
    total: usize,
}

static LEARNED: std::sync::Mutex<Option<Learned>> = std::sync::Mutex::new(None);

/// A request named by its service's (or the) `<unmatched>` resource because its gRPC method
/// was not known was answered as a method its service serves: `name` (`POST:/pkg.Svc/Method`)
/// becomes a resource of its own, while its service has had fewer than
/// [`MAX_LEARNED_PER_SERVICE`] names learned (and all services fewer than [`MAX_LEARNED`]).
/// A service that answers every method it is asked (a proxy) cannot make a client's invented
/// names unbounded.
#[cold]
pub(super) fn learn(name: &str) {
    let service = name.split('/').nth(1).unwrap_or("");
    let mut learned = LEARNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if crate::registry::get(name).is_some() {
        return;
    }
    let learned = learned.get_or_insert_with(Learned::default);
    if learned.total >= MAX_LEARNED {
        return;
    }
    let count = match learned.per_service.get_mut(service) {
        Some(count) => count,
        None => learned.per_service.entry(service.into()).or_insert(0),
    };
    if *count >= MAX_LEARNED_PER_SERVICE {
        return;
    }
    *count += 1;
    learned.total += 1;
    node_by_name(name);
}

/// Whether a response shows that its gRPC method exists: a gRPC answer whose head does not say
/// `UNIMPLEMENTED` (12, what tonic answers for a method or service it does not have); a 404
/// (an unmatched route) is not one.
pub(super) fn serves_method(status: http::StatusCode, headers: &http::HeaderMap) -> bool {
    status == http::StatusCode::OK
        && super::response::is_grpc(headers)
        && headers
            .get(&super::response::GRPC_STATUS)
            .is_none_or(|v| v.as_bytes() != b"12")
}

/// Routes recently seen by this thread, keyed by the address of axum's matched-path string (one
/// per route, shared by its requests) and the method, in a slot chosen by the route's text: a
/// hit costs no formatting, hashing or registry probe. The string of each cached address is
/// held ([`HELD_ROUTES`]), so no other route's string can be given that address while it is
/// cached: a hit is that route. A string of the same text at another address (built for each
/// request) is found by comparing the text.
pub(super) const ROUTE_SLOTS: usize = 16;

/// A cached route: the address of its string, its method's tag, its node.
type RouteSlot = (usize, usize, Option<&'static crate::ResourceNode>);

thread_local! {
    static ROUTES: std::cell::Cell<[RouteSlot; ROUTE_SLOTS]> =
        const { std::cell::Cell::new([(0, 0, None); ROUTE_SLOTS]) };
    /// The matched paths whose addresses key [`ROUTES`], slot for slot.
    static HELD_ROUTES: std::cell::RefCell<HeldRoutes> =
        const { std::cell::RefCell::new(HeldRoutes([const { None }; ROUTE_SLOTS])) };
}

/// The route strings [`ROUTES`] is keyed by. When the thread's locals are torn down, the keys
/// go first: a request served by a later destructor finds no slot whose string is gone.
struct HeldRoutes([Option<MatchedPath>; ROUTE_SLOTS]);

impl Drop for HeldRoutes {
    fn drop(&mut self) {
        let _ = ROUTES.try_with(|routes| routes.set([(0, 0, None); ROUTE_SLOTS]));
    }
}

/// Whether the route string held for `slot` reads `route` (a hit by text, for a route whose
/// string is built again for each request; see [`default_node`]).
#[cold]
fn holds_route(slot: usize, route: &str) -> bool {
    HELD_ROUTES
        .try_with(|held| {
            held.try_borrow()
                .is_ok_and(|held| held.0[slot].as_ref().is_some_and(|m| m.as_str() == route))
        })
        .unwrap_or(false)
}

/// Caches `node` in `slot` under `key`, holding `route` (the string `key` has the address of).
#[cold]
fn cache_route(
    slot: usize,
    key: (usize, usize),
    route: &MatchedPath,
    node: &'static crate::ResourceNode,
) {
    let _ = HELD_ROUTES.try_with(|held| {
        let Ok(mut held) = held.try_borrow_mut() else {
            return;
        };
        // The old string is let go only after its key is replaced (no hit can come between:
        // this thread is here).
        let old = held.0[slot].replace(route.clone());
        let _ = ROUTES.try_with(|routes| {
            let routes: &std::cell::Cell<[_]> = routes;
            routes.as_slice_of_cells()[slot].set((key.0, key.1, Some(node)));
        });
        drop(old);
    });
}

/// The node of a request's default resource name (see the module docs). For a gRPC method not
/// known yet (named by an `<unmatched>` resource), `learn` is set to its own name, to [`learn`]
/// if the response shows the method exists (otherwise `learn` is left alone).
///
/// `nodes`: the service's own nodes of its route ([`RouteNodes`]), tried first.
#[inline(always)]
pub(super) fn default_node(
    view: View<'_>,
    learn: &mut Option<Box<str>>,
    nodes: &RouteNodes,
) -> &'static crate::ResourceNode {
    let Some(matched) = view.extensions.get::<MatchedPath>() else {
        return with_default_resource(view, |name, unknown, known| {
            named_node(name, unknown, known, learn)
        });
    };
    let own = nodes.0.get(method_index(view.method));
    if let Some((held, node)) = own.and_then(std::sync::OnceLock::get) {
        // The held string is alive: no other string has its address.
        if std::ptr::eq(held.as_str(), matched.as_str()) {
            return node;
        }
    }
    let node = route_node(view, matched, learn);
    // Cached only what the per-thread cache keeps (a route's own node, never a gRPC service's
    // or the overflow node); a slot set by another route stays.
    if let Some(own) = own
        && own.get().is_none()
        && cacheable(view, matched.as_str(), node)
    {
        let _ = own.set((matched.clone(), node));
    }
    node
}

/// Whether `node`, found for `route`, may be cached for it (by either cache): see
/// [`route_node`].
fn cacheable(view: View<'_>, route: &str, node: &crate::ResourceNode) -> bool {
    grpc_service_route(route).is_none() && names_route(node.name(), method_name(view.method), route)
}

/// [`default_node`] for a request with a matched route, through the per-thread cache.
#[cold]
#[inline(never)]
fn route_node(
    view: View<'_>,
    matched: &MatchedPath,
    learn: &mut Option<Box<str>>,
) -> &'static crate::ResourceNode {
    let route = matched.as_str();
    let method = method_name(view.method);
    // The route's address and the method's length and first letter (GET and PUT differ).
    let tag = method.len() << 8 | usize::from(method.as_bytes().first().copied().unwrap_or(0));
    let key = (route.as_ptr() as usize, tag);
    // The slot by the route's text (its length and middle letter) and the method, not by its
    // address: a route whose string axum builds again for each request (under a service
    // mounted with `nest_service`) keeps its slot, and is found there by its text.
    let bytes = route.as_bytes();
    let middle = usize::from(bytes.get(bytes.len() / 2).copied().unwrap_or(0));
    let slot = (bytes.len().wrapping_mul(7) ^ middle ^ tag ^ (tag >> 8)) % ROUTE_SLOTS;
    let cached = ROUTES.try_with(|routes| {
        let routes: &std::cell::Cell<[_]> = routes;
        routes.as_slice_of_cells()[slot].get()
    });
    if let Ok((k, t, Some(node))) = cached
        && t == tag
        && (k == key.0 || holds_route(slot, route))
    {
        return node;
    }
    let node = with_default_resource(view, |name, unknown, known| {
        named_node(name, unknown, known, learn)
    });
    // Not cached: a gRPC service's route (its methods are each named by their own path, while
    // a cached node is its route's: such a route must never hit), and the overflow node
    // (beyond the cap on resources: a later lookup may differ). A cached node is always
    // `"{method}:{route}"`, so the same route and method (by address or by text) are that node.
    if cacheable(view, route, node) {
        cache_route(slot, key, matched, node);
    }
    node
}

/// The node of a default name (`known`: already looked up); an `unknown` gRPC method's name
/// goes to `learn` (see [`with_default_resource`]).
fn named_node(
    name: &str,
    unknown: Option<&str>,
    known: Option<&'static crate::ResourceNode>,
    learn: &mut Option<Box<str>>,
) -> &'static crate::ResourceNode {
    if let Some(unknown) = unknown {
        *learn = Some(Box::from(unknown));
    }
    known.unwrap_or_else(|| node_by_name(name))
}

/// Whether `name` is `"{method}:{route}"`.
pub(super) fn names_route(name: &str, method: &str, route: &str) -> bool {
    name.len() == method.len() + 1 + route.len()
        && name.starts_with(method)
        && name.as_bytes()[method.len()] == b':'
        && name.ends_with(route)
}

/// Calls `f` with the default resource name of a request, built in a per-thread buffer (no
/// allocation per request once the buffer has grown). Its length is bounded by the routes'
/// and [`MAX_GRPC_PATH`]: nothing a client sends makes it longer.
///
/// A gRPC method path names a request only if the method is known: a resource of that name
/// exists (its method was served before, or something else entered it) or loaded rules name
/// it. Otherwise the request is `POST:/pkg.Svc/<unmatched>` under its service's route, or
/// `POST:<unmatched>` without a route, and `f` is also given the method's own name, to
/// [`learn`] once the response shows the method exists. A known method's node is given to `f`
/// as well (it has been looked up).
pub(super) fn with_default_resource<R>(
    view: View<'_>,
    f: impl FnOnce(&str, Option<&str>, Option<&'static crate::ResourceNode>) -> R,
) -> R {
    // Taken out while in use (a nested call finds an empty buffer and grows its own).
    let mut name = NAME.try_with(std::cell::Cell::take).unwrap_or_default();
    name.clear();
    name.push_str(method_name(view.method));
    name.push(':');
    let route = view
        .extensions
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let result = match grpc_name(view, route) {
        Some((path, service)) => {
            name.push_str(path);
            if let Some(node) = crate::registry::known_node(&name) {
                f(&name, None, Some(node))
            } else {
                let mut unmatched = String::with_capacity(name.len() + 12);
                unmatched.push_str(method_name(view.method));
                unmatched.push(':');
                if let Some(service) = service {
                    unmatched.push('/');
                    unmatched.push_str(service);
                    unmatched.push('/');
                }
                unmatched.push_str("<unmatched>");
                f(&unmatched, Some(&name), None)
            }
        }
        None => {
            name.push_str(route.unwrap_or("<unmatched>"));
            f(&name, None, None)
        }
    };
    let _ = NAME.try_with(|cell| cell.set(name));
    result
}

thread_local! {
    /// Each thread's buffer for default resource names.
    static NAME: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// The default resource name of a request.
#[cfg(test)]
pub(super) fn default_resource(parts: &http::request::Parts) -> String {
    with_default_resource(View::of_parts(parts), |name, _, _| name.to_owned())
}
