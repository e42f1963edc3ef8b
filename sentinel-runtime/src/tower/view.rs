//! What the layer reads of a request, from its parts or the request itself.

use http::header::HeaderMap;
use http::request::Parts;
use http::Request;

/// What the layer reads of a request.
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    pub(super) method: &'a http::Method,
    pub(super) uri: &'a http::Uri,
    pub(super) headers: &'a HeaderMap,
    pub(super) extensions: &'a http::Extensions,
}

impl<'a> View<'a> {
    pub(super) fn of_parts(parts: &'a Parts) -> View<'a> {
        View {
            method: &parts.method,
            uri: &parts.uri,
            headers: &parts.headers,
            extensions: &parts.extensions,
        }
    }

    pub(super) fn of_request<B>(req: &'a Request<B>) -> View<'a> {
        View {
            method: req.method(),
            uri: req.uri(),
            headers: req.headers(),
            extensions: req.extensions(),
        }
    }
}
