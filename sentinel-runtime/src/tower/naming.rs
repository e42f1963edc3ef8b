//! Default resource names: `"{METHOD}:{route}"`, a gRPC method path, or `<unmatched>`; never
//! anything a client can vary without bound.

use super::response::is_grpc_request;
use super::{MatchedPath, View};
use crate::rules::node_by_name;

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

/// The method path that names a gRPC request, if it has one: a `POST` with a gRPC content type,
/// a gRPC method path, and either no route or a route that serves the path's own service
/// ([`grpc_service_route`]). Any other request under a route is named by the route, so a
/// client cannot leave the route's rules by adding a header.
fn grpc_name<'a>(view: View<'a>, route: Option<&str>) -> Option<&'a str> {
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
    .then_some(path)
}

/// Routes recently seen by this thread, by the address of axum's matched-path string (one per
/// route, shared by its requests) and the method: a hit costs no formatting, hashing or
/// registry probe. Every hit is verified against the node's name, so a stale slot (a route
/// string freed and its address reused) is only a miss.
pub(super) const ROUTE_SLOTS: usize = 16;

thread_local! {
    static ROUTES: std::cell::Cell<[(usize, Option<&'static crate::ResourceNode>); ROUTE_SLOTS]> =
        const { std::cell::Cell::new([(0, None); ROUTE_SLOTS]) };
}

/// The node of a request's default resource name (see the module docs).
pub(super) fn default_node(view: View<'_>) -> &'static crate::ResourceNode {
    let Some(route) = view.extensions.get::<MatchedPath>() else {
        return with_default_resource(view, node_by_name);
    };
    let route = route.as_str();
    let method = method_name(view.method);
    // The route's address and the method's length and first letter (GET and PUT differ).
    let tag = method.len() << 8 | usize::from(method.as_bytes().first().copied().unwrap_or(0));
    let key = (route.as_ptr() as usize) << 16 | tag;
    let slot = ((route.as_ptr() as usize >> 4) ^ tag) % ROUTE_SLOTS;
    let cached = ROUTES.try_with(|routes| {
        let routes: &std::cell::Cell<[_]> = routes;
        routes.as_slice_of_cells()[slot].get()
    });
    if let Ok((k, Some(node))) = cached {
        if k == key && names_route(node.name(), method, route) {
            return node;
        }
    }
    let node = with_default_resource(view, node_by_name);
    // Not cached: a gRPC service's route (its methods are each named by their own path: a hit
    // is verified against the route's name, so such a route never hits), and the overflow
    // node (beyond the cap on resources: a later lookup may differ).
    if grpc_service_route(route).is_none() && names_route(node.name(), method, route) {
        let _ = ROUTES.try_with(|routes| {
            let routes: &std::cell::Cell<[_]> = routes;
            routes.as_slice_of_cells()[slot].set((key, Some(node)));
        });
    }
    node
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
pub(super) fn with_default_resource<R>(view: View<'_>, f: impl FnOnce(&str) -> R) -> R {
    // Taken out while in use (a nested call finds an empty buffer and grows its own).
    let mut name = NAME.try_with(std::cell::Cell::take).unwrap_or_default();
    name.clear();
    name.push_str(method_name(view.method));
    name.push(':');
    let route = view
        .extensions
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    name.push_str(grpc_name(view, route).or(route).unwrap_or("<unmatched>"));
    let result = f(&name);
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
    with_default_resource(View::of_parts(parts), str::to_owned)
}
