//! The server: binding, the runtime it runs on (the caller's or a thread of its own), the
//! sampler, routing with the access checks, and stopping.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, Method, Response, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit, Semaphore};

use super::auth;
use super::conn::{Bounded, Busy, Conns, Limits, Tag};
use super::events::{Bus, Deltas};
use super::fleet_api;
use super::handle::Stop;
use super::history::{History, TRACKED};
use super::load::ProcessLoad;
use super::rules_api::{self, Editor, Format, Put};
use super::source_api::{self, SharedSource};
use super::{api, page, Dashboard, DashboardError, DashboardHandle};
use crate::{clock, metrics};

/// The largest rule set a `PUT` may send.
const MAX_BODY: usize = 1 << 20;

/// What every request handler shares.
struct Shared {
    addr: SocketAddr,
    token: String,
    hosts: Vec<String>,
    editor: Editor,
    source: Option<SharedSource>,
    history: History,
    bus: Arc<Bus>,
    stopped: watch::Receiver<bool>,
    limits: Limits,
    conns: Arc<Conns>,
    streams: Arc<Semaphore>,
    max_streams: usize,
    load: ProcessLoad,
}

impl Dashboard {
    /// Binds the address and starts serving: on the current tokio runtime if called inside
    /// one, else on a thread of its own. Fails if the address is not loopback (without
    /// [`allow_remote`](Self::allow_remote)), cannot be bound, the token is unfit, a limit is
    /// out of range, or the [`rules_file`](Self::rules_file) is invalid.
    pub fn start(self) -> Result<DashboardHandle, DashboardError> {
        start(self)
    }
}

/// [`Dashboard::start`].
fn start(d: Dashboard) -> Result<DashboardHandle, DashboardError> {
    if !d.allow_remote && !d.addr.ip().is_loopback() {
        return Err(DashboardError::NotLoopback(d.addr));
    }
    d.check_limits()?;
    let token = match d.token {
        Some(token) => {
            auth::check_token(&token)?;
            token
        }
        None => auth::random_token()?,
    };
    let listener =
        std::net::TcpListener::bind(d.addr).map_err(|e| DashboardError::Bind(d.addr, e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DashboardError::Bind(d.addr, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| DashboardError::Bind(d.addr, e))?;
    if let Some(file) = &d.rules_file {
        rules_api::load_at_start(file).map_err(|e| DashboardError::RulesFile(file.clone(), e))?;
    }
    // The totals that later samples report differences from, taken now: whatever happens
    // after `start` returns is reported, however late the server's first tick runs.
    let mut deltas = Deltas::default();
    let _ = deltas.blocks(
        0,
        api::ranked()
            .iter()
            .map(|(n, s)| (n.name(), &s.block_total_by_rule)),
    );
    let _ = deltas.rule_loads(metrics::rule_loads());
    deltas.prime();
    let (tx, stopped) = watch::channel(false);
    let shared = Arc::new(Shared {
        addr,
        token: token.clone(),
        hosts: d.hosts,
        editor: Editor::new(d.rules_file),
        source: d.rules_source,
        history: History::default(),
        bus: Bus::new(),
        stopped,
        limits: Limits {
            max_connections: d.max_connections,
            header_timeout: d.header_timeout,
            idle_timeout: d.idle_timeout,
        },
        conns: Arc::new(Conns::default()),
        streams: Arc::new(Semaphore::new(d.max_event_streams)),
        max_streams: d.max_event_streams,
        load: ProcessLoad::default(),
    });
    let thread = match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            let _in_runtime = handle.enter();
            let listener =
                tokio::net::TcpListener::from_std(listener).map_err(DashboardError::Runtime)?;
            handle.spawn(serve(shared, listener, deltas));
            None
        }
        Err(_) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(DashboardError::Runtime)?;
            let listener = {
                let _in_runtime = runtime.enter();
                tokio::net::TcpListener::from_std(listener).map_err(DashboardError::Runtime)?
            };
            let thread = std::thread::Builder::new()
                .name("sentinel-dashboard".into())
                .spawn(move || runtime.block_on(serve(shared, listener, deltas)))
                .map_err(DashboardError::Runtime)?;
            Some(thread)
        }
    };
    Ok(DashboardHandle {
        addr,
        token,
        stop: Some(Stop::new(tx, thread)),
    })
}

/// Serves until stopped, sampling once a second.
async fn serve(shared: Arc<Shared>, listener: tokio::net::TcpListener, deltas: Deltas) {
    let mut stopped = shared.stopped.clone();
    let app = Router::new()
        .fallback(handle)
        .with_state(Arc::clone(&shared))
        .into_make_service_with_connect_info::<Tag>();
    let bounded = Bounded {
        listener,
        conns: Arc::clone(&shared.conns),
        limits: shared.limits,
    };
    tokio::select! {
        _ = axum::serve(bounded, app) => {}
        _ = sample_every_second(Arc::clone(&shared), deltas) => {}
        _ = stopped.wait_for(|s| *s) => {}
    }
    // The connections' tasks outlive the server's: tell them to close.
    shared.conns.close_all();
}

async fn sample_every_second(shared: Arc<Shared>, mut deltas: Deltas) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        sample(&shared, &mut deltas);
    }
}

/// One sample: the history of the busiest resources, the blocks and rule loads since the last.
fn sample(shared: &Shared, deltas: &mut Deltas) {
    let second = clock::now_nanos() / 1_000_000_000;
    let ranked = api::ranked();
    let busiest: Vec<&'static str> = ranked.iter().take(TRACKED).map(|(n, _)| n.name()).collect();
    shared.history.update(&busiest, second);
    let now = clock::now_nanos();
    super::rates::READINGS.record(now, ranked.iter().take(TRACKED).map(|(n, s)| (n.name(), s)));
    let blocks = ranked
        .iter()
        .map(|(n, s)| (n.name(), &s.block_total_by_rule));
    if let Some(event) = deltas.blocks(second, blocks) {
        shared.bus.send(event);
    }
    for event in deltas.rule_loads(metrics::rule_loads()) {
        shared.bus.send(event);
    }
    deltas.prime();
    shared.load.sample();
}

/// Every request: the checks and the route, then the security headers on whatever answers.
async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response<Body> {
    // No timeout closes the connection while its request is handled.
    let busy = req
        .extensions()
        .get::<ConnectInfo<Tag>>()
        .map(|ConnectInfo(Tag(conn))| conn.busy());
    let mut res = route(&shared, req, busy.as_ref()).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

async fn route(shared: &Shared, req: Request, busy: Option<&Busy>) -> Response<Body> {
    if !auth::host_allowed(req.headers(), shared.addr, &shared.hosts) {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: the Host header does not name this dashboard",
        );
    }
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    // Query strings end up in logs and histories: the token never travels in one.
    if has_token_param(req.uri().query()) {
        return text(
            StatusCode::BAD_REQUEST,
            "the token never goes in a query string (logs and histories keep it): open \
             /#token=<token> (the part after # stays in the browser), or send it in the \
             Authorization or X-Sentinel-Token header",
        );
    }
    // The page and its assets hold no data (the page asks the API, with the token from its
    // link's fragment); everything else needs the token in a header. A cookie is never
    // enough: cookies are per host, not per port, so every server on this host gets them.
    let public = path == "/" || path.starts_with("/assets/");
    if !public {
        if !auth::has_token(req.headers(), &shared.token) {
            return unauthorized();
        }
        // Past the connection cap, strangers' connections are closed before this one.
        if let Some(busy) = busy {
            busy.trust();
        }
    }
    let read = method == Method::GET || method == Method::HEAD;
    match path.as_str() {
        "/" if read => html(page::index()),
        "/api/resources" if read => {
            let search = match query_param(req.uri().query(), "search") {
                Err(()) => {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &json!({ "error": "`search` has a malformed escape (% must be followed \
                                           by two hex digits of UTF-8)" }),
                    )
                }
                Ok(Some(q)) if q.len() > api::MAX_SEARCH => {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &json!({ "error": format!(
                            "`search` is at most {} bytes", api::MAX_SEARCH
                        ) }),
                    )
                }
                Ok(q) => q,
            };
            let (rows, total, matched) =
                api::resources(search.as_deref().filter(|q| !q.is_empty()));
            let mut res = json_response(StatusCode::OK, &rows);
            res.headers_mut()
                .insert("x-sentinel-resources-total", HeaderValue::from(total));
            res.headers_mut()
                .insert("x-sentinel-resources-matched", HeaderValue::from(matched));
            res
        }
        "/api/system" if read => {
            let own = shared.load.asked();
            json_response(StatusCode::OK, &api::system(&shared.bus, own))
        }
        "/api/rules" if read && accepts(req.headers(), "yaml") => {
            let json_too = accepts(req.headers(), "json");
            let document = match &shared.source {
                Some(source) => source.document(json_too).await,
                None => rules_api::document(&shared.editor, json_too),
            };
            match document {
                Ok((bytes, format, tag)) => {
                    let mut res = Response::builder()
                        .header(header::CONTENT_TYPE, format.content_type())
                        .body(Body::from(bytes))
                        .unwrap_or_default();
                    if let Ok(tag) = HeaderValue::from_str(&tag) {
                        res.headers_mut().insert(header::ETAG, tag);
                    }
                    res
                }
                Err(e) => json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({ "error": e })),
            }
        }
        "/api/rules" if read => {
            let (status, body, tag) = match &shared.source {
                Some(source) => source.get().await,
                None => rules_api::get(),
            };
            let mut res = json_response(StatusCode::from_u16(status).unwrap_or_default(), &body);
            if let Ok(tag) = HeaderValue::from_str(&tag) {
                res.headers_mut().insert(header::ETAG, tag);
            }
            res
        }
        "/api/rules" if method == Method::PUT => put_rules(shared, req).await,
        "/api/events" if read => events(shared, busy),
        "/api/fleet" if read => json_response(StatusCode::OK, &fleet_api::fleet()),
        "/" | "/api/resources" | "/api/system" | "/api/events" | "/api/fleet" => {
            not_allowed("GET, HEAD")
        }
        "/api/rules" => not_allowed("GET, HEAD, PUT"),
        p => {
            if let Some(asset) = p.strip_prefix("/assets/").and_then(page::asset) {
                return if read {
                    Response::builder()
                        .header(header::CONTENT_TYPE, asset.0)
                        .body(Body::from(asset.1))
                        .unwrap_or_default()
                } else {
                    not_allowed("GET, HEAD")
                };
            }
            match history_name(p) {
                Some(name) if read => match api::history(&shared.history, &name) {
                    Some(body) => json_response(StatusCode::OK, &body),
                    None => json_response(
                        StatusCode::NOT_FOUND,
                        &json!({ "error": format!("no resource named `{name}`") }),
                    ),
                },
                Some(_) => not_allowed("GET, HEAD"),
                None => json_response(
                    StatusCode::NOT_FOUND,
                    &json!({ "error": format!("no such path: {p}") }),
                ),
            }
        }
    }
}

/// `PUT /api/rules`.
async fn put_rules(shared: &Shared, req: Request) -> Response<Body> {
    let if_match = req
        .headers()
        .get(header::IF_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let format = Format::of_content_type(
        req.headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    );
    let timeout = shared.limits.header_timeout;
    let body = match tokio::time::timeout(timeout, to_bytes(req.into_body(), MAX_BODY)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                &json!({ "error": format!("a rule set is at most {MAX_BODY} bytes") }),
            )
        }
        Err(_) => {
            return json_response(
                StatusCode::REQUEST_TIMEOUT,
                &json!({ "error": format!("the body did not arrive within {timeout:?}") }),
            )
        }
    };
    let Ok(body) = std::str::from_utf8(&body) else {
        return json_response(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({ "error": "the body is not UTF-8", "problems": [] }),
        );
    };
    let put = match &shared.source {
        Some(source) => source.put(if_match, body.to_owned(), format).await,
        None => shared.editor.put(if_match.as_deref(), body, format),
    };
    match put {
        Put::Applied(tag, written) => {
            shared
                .bus
                .send(json!({ "type": "rules_saved", "etag": tag, "applied": true }));
            let mut res = json_response(
                StatusCode::OK,
                &json!({ "applied": true, "written": written, "etag": tag }),
            );
            if let Ok(tag) = HeaderValue::from_str(&tag) {
                res.headers_mut().insert(header::ETAG, tag);
            }
            res
        }
        Put::Written(tag) => {
            shared
                .bus
                .send(json!({ "type": "rules_saved", "etag": tag, "applied": false }));
            let mut res = json_response(
                StatusCode::OK,
                &json!({
                    "applied": false,
                    "written": true,
                    "etag": tag,
                    "message": format!(
                        "written to the rule source: every instance watching it applies it; not \
                         in force in this process within {} s (it does not watch the source, \
                         or has not read it yet)",
                        rules_api::IN_FORCE_WAIT.as_secs()
                    ),
                }),
            );
            if let Ok(tag) = HeaderValue::from_str(&tag) {
                res.headers_mut().insert(header::ETAG, tag);
            }
            res
        }
        Put::NoVersion => json_response(
            StatusCode::PRECONDITION_REQUIRED,
            &json!({ "error": "send the version read from GET /api/rules in If-Match \
                               (`*` is not a version)" }),
        ),
        Put::Stale(current) => {
            let mut res = json_response(
                StatusCode::CONFLICT,
                &json!({ "error": "the rules changed since they were read; read them again",
                         "etag": current }),
            );
            if let Ok(tag) = HeaderValue::from_str(&current) {
                res.headers_mut().insert(header::ETAG, tag);
            }
            res
        }
        Put::Refused(e) => {
            let body = rules_api::refused_json(&e);
            shared
                .bus
                .send(json!({ "type": "rules_refused", "error": body["error"] }));
            json_response(StatusCode::UNPROCESSABLE_ENTITY, &body)
        }
        Put::CannotSave(why) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": why, "applied": false }),
        ),
        Put::NotSaved(tag, why) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": why, "applied": true, "etag": tag }),
        ),
        Put::Unavailable(why) => json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &source_api::unavailable_json(&why),
        ),
    }
}

/// Whether the `Accept` header names a media type containing `what` (`yaml`: a `GET
/// /api/rules` asks for the stored document as it is written, rather than the rules as JSON).
fn accepts(headers: &axum::http::HeaderMap, what: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains(what))
}

/// `GET /api/events`: every event of the bus from now on, until the client leaves or the
/// dashboard stops. A client too slow for the bus is told how many events it missed. At most
/// `max_event_streams` at once (`503` past it); the connection stays busy (no timeout, never
/// evicted) while the stream is open.
fn events(shared: &Shared, busy: Option<&Busy>) -> Response<Body> {
    let Ok(permit) = Arc::clone(&shared.streams).try_acquire_owned() else {
        let mut res = json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({ "error": format!(
                "too many event streams open (at most {}); close one, or poll /api/system",
                shared.max_streams
            ) }),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return res;
    };
    let open = Open {
        _permit: permit,
        _busy: busy.map(Busy::again),
    };
    let rx = shared.bus.subscribe();
    let stopped = shared.stopped.clone();
    let state = (rx, stopped, open);
    let stream = futures_util::stream::unfold(state, |(mut rx, mut stopped, open)| async move {
        let next = tokio::select! {
            _ = stopped.wait_for(|s| *s) => None,
            r = rx.recv() => Some(r),
        };
        let event = match next? {
            Ok(text) => Event::default().data(&*text),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                Event::default().data(json!({ "type": "lagged", "missed": n }).to_string())
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<Event, Infallible>(event), (rx, stopped, open)))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// What an open event stream holds: its place under the cap, and its connection busy.
struct Open {
    _permit: OwnedSemaphorePermit,
    _busy: Option<Busy>,
}

/// The resource name of `/api/resources/{name}/history` (percent-decoded).
fn history_name(path: &str) -> Option<String> {
    let name = path
        .strip_prefix("/api/resources/")?
        .strip_suffix("/history")?;
    percent_decode(name).filter(|n| !n.is_empty())
}

fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The percent-decoded value of the query parameter `name` (`+` is a space), if given (its
/// name compared decoded); `Err` if its value has a malformed escape.
fn query_param(query: Option<&str>, name: &str) -> Result<Option<String>, ()> {
    let Some(query) = query else {
        return Ok(None);
    };
    let found = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| {
            *k == name || percent_decode(&k.replace('+', " ")).is_some_and(|k| k == name)
        });
    match found {
        None => Ok(None),
        Some((_, raw)) => percent_decode(&raw.replace('+', " ")).map(Some).ok_or(()),
    }
}

/// Whether a query string has a `token` parameter, however spelled: any case, and escaped
/// (`?TOKEN=`, `?%74oken=`). A name with a malformed escape is compared as it is written.
fn has_token_param(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|kv| {
            let key = kv.split_once('=').map_or(kv, |(k, _)| k);
            let decoded = percent_decode(&key.replace('+', " "));
            decoded
                .as_deref()
                .unwrap_or(key)
                .eq_ignore_ascii_case("token")
        })
    })
}

fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Body::from(body))
        .unwrap_or_default()
}

fn html(body: String) -> Response<Body> {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .body(Body::from(body))
        .unwrap_or_default()
}

fn unauthorized() -> Response<Body> {
    let mut res = text(
        StatusCode::UNAUTHORIZED,
        "unauthorized: open the dashboard's link with its token (/#token=...), or send \
         Authorization: Bearer <token> or X-Sentinel-Token: <token>",
    );
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut res = json_response(
        StatusCode::METHOD_NOT_ALLOWED,
        &json!({ "error": format!("method not allowed here; allowed: {allow}") }),
    );
    res.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_names_are_percent_decoded() {
        assert_eq!(
            history_name("/api/resources/GET%3A%2Fusers%2F%7Bid%7D/history").as_deref(),
            Some("GET:/users/{id}")
        );
        assert_eq!(history_name("/api/resources//history"), None);
        assert_eq!(history_name("/api/resources/a%zz/history"), None);
        assert_eq!(history_name("/api/resources/a"), None);
    }

    #[test]
    fn a_token_in_the_query_is_seen() {
        assert!(has_token_param(Some("a=1&token=xyz")));
        assert!(has_token_param(Some("token")));
        assert!(has_token_param(Some("TOKEN=x")));
        assert!(has_token_param(Some("b=2&%74oken=x")));
        assert!(has_token_param(Some("%54%6f%4B%65%6E")));
        assert!(!has_token_param(Some("tokens=1")));
        assert!(!has_token_param(Some("%74oken%zz=1")));
        assert!(!has_token_param(None));
    }
}
