use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::request::Parts;
use http::{Method, Request, StatusCode};

use super::naming::{default_resource, grpc_service_route, names_route, MAX_GRPC_PATH};
use super::params::{client_ip, client_text, hash_client, hash_ip, hash_value};
use super::response::{answer, classify, is_grpc, percent_encode, rejection, retry_after_secs};
use super::view::View;
use crate::{BlockError, BlockKind};
use axum::extract::ConnectInfo;

fn parts(build: impl FnOnce(http::request::Builder) -> http::request::Builder) -> Parts {
    build(Request::builder()).body(()).unwrap().into_parts().0
}

#[test]
fn client_ip_takes_the_nth_from_the_right_never_the_leftmost() {
    let p = parts(|b| {
        b.header("x-forwarded-for", "6.6.6.6, 1.1.1.1")
            .header("x-forwarded-for", "2.2.2.2:8080")
            .extension(ConnectInfo("10.0.0.9:4000".parse::<SocketAddr>().unwrap()))
    });
    assert_eq!(
        client_ip(View::of_parts(&p), 0),
        Some("10.0.0.9".parse().unwrap())
    );
    assert_eq!(
        client_ip(View::of_parts(&p), 1),
        Some("2.2.2.2".parse().unwrap())
    );
    assert_eq!(
        client_ip(View::of_parts(&p), 2),
        Some("1.1.1.1".parse().unwrap())
    );
    assert_eq!(
        client_ip(View::of_parts(&p), 3),
        Some("6.6.6.6".parse().unwrap())
    );
    // fewer entries than trusted proxies: the peer, not the (forgeable) leftmost
    assert_eq!(
        client_ip(View::of_parts(&p), 4),
        Some("10.0.0.9".parse().unwrap())
    );
    let plain = parts(|b| b.extension("127.0.0.1:1".parse::<SocketAddr>().unwrap()));
    assert_eq!(
        client_ip(View::of_parts(&plain), 0),
        Some("127.0.0.1".parse().unwrap())
    );
    assert_eq!(client_ip(View::of_parts(&parts(|b| b)), 1), None);
}

#[test]
fn an_ipv4_mapped_client_ip_is_its_ipv4_address() {
    let p = parts(|b| {
        b.header(
            "x-forwarded-for",
            "::ffff:1.1.1.1, [::ffff:2.2.2.2]:80, 2001:db8::1",
        )
        .extension(ConnectInfo(
            "[::ffff:10.0.0.9]:4000".parse::<SocketAddr>().unwrap(),
        ))
    });
    let ip = |n| client_ip(View::of_parts(&p), n).map(|ip| ip.to_string());
    assert_eq!(ip(0).as_deref(), Some("10.0.0.9"));
    assert_eq!(ip(1).as_deref(), Some("2001:db8::1"));
    assert_eq!(ip(2).as_deref(), Some("2.2.2.2"));
    assert_eq!(ip(3).as_deref(), Some("1.1.1.1"));
}

#[test]
fn a_client_ip_hashes_as_its_text_does() {
    for ip in [
        "10.0.0.9",
        "0.0.0.0",
        "255.255.255.255",
        "1.20.100.109",
        "99.100.9.10",
        "2001:db8::1",
        "::ffff:1.2.3.4",
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(hash_ip(ip), crate::param::hash(ip.to_string().as_str()));
        assert_eq!(hash_ip(ip), hash_value(Some(&ip.to_string())));
    }
    // Every octet at each of the digit-count boundaries, in every position.
    let octets = [0u8, 1, 9, 10, 11, 99, 100, 101, 199, 200, 249, 250, 255];
    for a in octets {
        for b in octets {
            for c in octets {
                for d in octets {
                    let ip = IpAddr::from([a, b, c, d]);
                    assert_eq!(hash_ip(ip), hash_value(Some(&ip.to_string())), "{ip}");
                }
            }
        }
    }
}

#[test]
fn an_ipv6_client_hashes_as_its_prefix_text_and_an_ipv4_one_as_its_address() {
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let text = |s: &str| hash_value(Some(s));
    let host = ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    assert_eq!(hash_client(host, 64), text("2001:db8:1:2::/64"));
    assert_eq!(hash_client(host, 48), text("2001:db8:1::/48"));
    assert_eq!(hash_client(host, 1), text("::/1"));
    assert_eq!(hash_client(host, 0), text("::/0"));
    assert_eq!(
        hash_client(host, 127),
        text("2001:db8:1:2:aaaa:bbbb:cccc:dddc/127")
    );
    assert_eq!(
        hash_client(host, 128),
        text("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
    );
    let v4 = ip("10.1.2.3");
    for bits in [0, 64, 128] {
        assert_eq!(hash_client(v4, bits), text("10.1.2.3"), "/{bits}");
    }
}

#[test]
fn an_ipv4_clients_cached_hash_is_its_texts_every_time() {
    // More addresses than the cache has slots, twice over (the second round hits or refills
    // the slots), and addresses that differ only in high bits.
    for round in 0..2 {
        for i in 0..2_000u32 {
            for ip in [i, i << 16 | 7, i << 24 | 1] {
                let ip = std::net::Ipv4Addr::from(ip);
                let want = hash_value(Some(&ip.to_string()));
                assert_eq!(hash_client(IpAddr::V4(ip), 64), want, "{ip}, round {round}");
                assert_eq!(
                    hash_client(IpAddr::V4(ip), 128),
                    want,
                    "{ip}, round {round}"
                );
            }
        }
    }
}

#[test]
fn a_clients_text_hashes_as_the_client_does() {
    for ip in [
        "10.1.2.3",
        "2001:db8:1:2:aaaa:bbbb:cccc:dddd",
        "::1",
        "fe80::1",
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        for bits in [0, 1, 48, 64, 127, 128] {
            let text = client_text(ip, bits);
            assert_eq!(
                hash_value(Some(&text)),
                hash_client(ip, bits),
                "{ip} /{bits}: {text}"
            );
        }
    }
}

#[test]
fn routes_are_recognised_by_their_names_only() {
    assert!(names_route("GET:/users/{id}", "GET", "/users/{id}"));
    assert!(!names_route("PUT:/users/{id}", "GET", "/users/{id}"));
    assert!(!names_route("GET:/users", "GET", "/users/{id}"));
    assert!(!names_route("GET/users/{id}", "GET", "/users/{id}"));
    assert!(!names_route("GETX/users/{id}", "GET", "/users/{id}"));
    assert!(!names_route("<overflow>", "GET", "/x"));
}

fn grpc(path: &str) -> Parts {
    parts(|b| {
        b.method("POST")
            .uri(path)
            .header(CONTENT_TYPE, "Application/GRPC+proto")
    })
}

#[test]
fn default_names_never_use_the_raw_uri() {
    let p = parts(|b| b.method("GET").uri("/nope/123?x=1"));
    assert_eq!(default_resource(&p), "GET:<unmatched>");
    let p = grpc("/helloworld.Greeter/SayHello");
    assert!(is_grpc(&p.headers));
    // A gRPC method is named by its path once known (here: a resource of that name exists),
    // and is `<unmatched>` before.
    assert_eq!(default_resource(&p), "POST:<unmatched>");
    crate::registry::node_by_name("POST:/helloworld.Greeter/SayHello");
    assert_eq!(default_resource(&p), "POST:/helloworld.Greeter/SayHello");
    crate::registry::node_by_name("POST:/_a.b_2.C/M_1");
    assert_eq!(
        default_resource(&grpc("/_a.b_2.C/M_1")),
        "POST:/_a.b_2.C/M_1"
    );
    // Not gRPC method paths: anything a client could vary without bound.
    for path in [
        "/", "/a.B", "/a.B/", "/a.B/C/D", "/a..B/C", "/.a/C", "/a-b/C", "/a.B/1C", "/a%2EB/C",
    ] {
        assert_eq!(default_resource(&grpc(path)), "POST:<unmatched>", "{path}");
    }
    // The query is not part of the path.
    crate::registry::node_by_name("POST:/a.B/C");
    assert_eq!(default_resource(&grpc("/a.B/C?x=1")), "POST:/a.B/C");
    let longest = format!("/a.B/{}", "x".repeat(MAX_GRPC_PATH - 5));
    crate::registry::node_by_name(&format!("POST:{longest}"));
    assert_eq!(default_resource(&grpc(&longest)).len(), MAX_GRPC_PATH + 5);
    let longer = format!("/a.B/{}", "x".repeat(MAX_GRPC_PATH - 4));
    crate::registry::node_by_name(&format!("POST:{longer}"));
    assert_eq!(default_resource(&grpc(&longer)), "POST:<unmatched>");
    let invented = parts(|b| b.method("BREW").uri("/pot"));
    assert_eq!(default_resource(&invented), "OTHER:<unmatched>");
    let lower = parts(|b| b.method("get").uri("/pot"));
    assert_eq!(default_resource(&lower), "OTHER:<unmatched>");
    // HEAD runs the GET handler: it is named as GET.
    let head = parts(|b| b.method("HEAD").uri("/pot"));
    assert_eq!(default_resource(&head), "GET:<unmatched>");
    // gRPC is always a POST: any other method with a gRPC content type is not named by its path.
    let get = parts(|b| {
        b.method("GET")
            .uri("/a.B/C")
            .header("content-type", "application/grpc")
    });
    assert_eq!(default_resource(&get), "GET:<unmatched>");
}

#[test]
fn a_method_is_served_when_a_grpc_answer_does_not_say_unimplemented() {
    use super::naming::serves_method;
    let mut h = HeaderMap::new();
    assert!(!serves_method(StatusCode::OK, &h), "not gRPC");
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/grpc+proto"),
    );
    assert!(
        serves_method(StatusCode::OK, &h),
        "a stream: the status comes later"
    );
    assert!(!serves_method(StatusCode::NOT_FOUND, &h));
    h.insert("grpc-status", HeaderValue::from_static("14"));
    assert!(serves_method(StatusCode::OK, &h), "a real method failing");
    h.insert("grpc-status", HeaderValue::from_static("12"));
    assert!(!serves_method(StatusCode::OK, &h), "UNIMPLEMENTED");
}

#[test]
fn wildcard_routes_are_recognised() {
    assert_eq!(grpc_service_route("/pkg.Svc/{*rest}"), Some("pkg.Svc"));
    assert_eq!(grpc_service_route("/a.b.Svc/{*rest}"), Some("a.b.Svc"));
    // Routes that do not serve one gRPC service: their requests are named by the route. A plain
    // segment is a REST catch-all's as much as a package-less service's: the route names it.
    for route in [
        "/Svc/{*rest}",
        "/api/{*rest}",
        "/{*path}",
        "/users/{id}",
        "/users",
        "/{*rest}/x",
        "/files-v1/{*path}",
        "/api/pkg.Svc/{*rest}",
        "/pkg.Svc/{*rest}/x",
        "/pkg.Svc/{id}",
        "/pkg..Svc/{*rest}",
    ] {
        assert_eq!(grpc_service_route(route), None, "{route}");
    }
}

#[test]
fn classification_and_rejections() {
    let mut h = HeaderMap::new();
    assert!(!classify(None, StatusCode::NOT_FOUND, &h, true));
    assert!(classify(None, StatusCode::BAD_GATEWAY, &h, false));
    for (code, error) in [
        ("0", false),
        ("5", false),
        ("4", true),
        ("13", true),
        ("14", true),
    ] {
        h.insert("grpc-status", HeaderValue::from_static(code));
        assert_eq!(
            classify(None, StatusCode::OK, &h, true),
            error,
            "grpc-status {code}"
        );
    }
    let never = |_: StatusCode, _: &HeaderMap| false;
    assert!(!classify(Some(&never), StatusCode::BAD_GATEWAY, &h, false));
    // A plain HTTP response's `grpc-status` means nothing.
    h.insert("grpc-status", HeaderValue::from_static("14"));
    assert!(!classify(None, StatusCode::OK, &h, false));

    let block = BlockError::hot_param("r", 1.0, 0, Some(Duration::from_millis(1_200)));
    assert_eq!(retry_after_secs(&block), 2);
    let block = BlockError::hot_param("r", 1.0, 0, Some(Duration::from_millis(10)));
    assert_eq!(retry_after_secs(&block), 1);
    let flow = BlockError::flow("r", 1.0, 1_000);
    assert_eq!(retry_after_secs(&flow), 1);
    let http = HeaderMap::new();
    let grpc_web = grpc("/a.B/C").headers;
    let r = rejection(&flow, &Method::POST, &http);
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[RETRY_AFTER], "1");
    let cb = BlockError::circuit_breaker("r", 0.5, "open");
    assert_eq!(
        rejection(&cb, &Method::POST, &http).status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let g = rejection(&cb, &Method::POST, &grpc_web);
    assert_eq!(g.status(), StatusCode::OK);
    assert_eq!(g.headers()[CONTENT_TYPE], "Application/GRPC+proto");
    assert_eq!(g.headers()["grpc-status"], "14");
    assert_eq!(
        rejection(&flow, &Method::POST, &grpc_web).headers()["grpc-status"],
        "8"
    );
    // gRPC is always a POST: any other method gets the HTTP answer.
    let get = rejection(&flow, &Method::GET, &grpc_web);
    assert_eq!(get.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(get.headers()[CONTENT_TYPE], "text/plain; charset=utf-8");
    assert_eq!(percent_encode("a`b` 100%é"), "a`b` 100%25%C3%A9");
}

/// The client address with `trusted_proxies`, from `X-Forwarded-For` lines given as bytes.
fn forwarded_for(lines: &[&[u8]], trusted_proxies: usize) -> Option<IpAddr> {
    let p = parts(|mut b| {
        for line in lines {
            b = b.header("x-forwarded-for", HeaderValue::from_bytes(line).unwrap());
        }
        b.extension(ConnectInfo("10.0.0.9:4000".parse::<SocketAddr>().unwrap()))
    });
    client_ip(View::of_parts(&p), trusted_proxies)
}

#[test]
fn a_non_ascii_byte_in_x_forwarded_for_does_not_shift_the_entries() {
    let proxy_saw = Some("1.2.3.4".parse().unwrap());
    // The client wrote "6.6.6.6" and "\xff"; the trusted proxy appended ", 1.2.3.4".
    assert_eq!(forwarded_for(&[b"6.6.6.6", b"\xff, 1.2.3.4"], 1), proxy_saw);
    assert_eq!(forwarded_for(&[b"\xff, 1.2.3.4"], 1), proxy_saw);
    // The junk is an entry of its own: one more trusted proxy lands on it, not past it.
    assert_eq!(forwarded_for(&[b"6.6.6.6", b"\xff, 1.2.3.4"], 2), None);
    assert_eq!(
        forwarded_for(&[b"6.6.6.6", b"\xff, 1.2.3.4"], 3),
        Some("6.6.6.6".parse().unwrap())
    );
}

#[test]
fn x_forwarded_for_entries_may_be_bracketed_ipv6_with_or_without_a_port() {
    let ip: Option<IpAddr> = Some("2001:db8::1".parse().unwrap());
    assert_eq!(forwarded_for(&[b"1.1.1.1, [2001:db8::1]"], 1), ip);
    assert_eq!(forwarded_for(&[b"1.1.1.1, [2001:db8::1]:443"], 1), ip);
    assert_eq!(forwarded_for(&[b"1.1.1.1,2001:db8::1"], 1), ip);
    assert_eq!(forwarded_for(&[b"1.1.1.1, [2001:db8::1"], 1), None);
    assert_eq!(forwarded_for(&[b"1.1.1.1, [1.2.3.4]"], 1), None);
}

/// A layer whose `client_ip` finds no peer address (the service was served without connect
/// info) says so once, as a warning: every client then shares one limit.
#[cfg(feature = "tracing")]
#[test]
fn client_ip_without_a_peer_address_is_reported_once() {
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};

    /// Keeps the messages of the warnings on target `sentinel`.
    struct Warnings(Arc<Mutex<Vec<String>>>);
    struct Message(String);
    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    impl tracing::Subscriber for Warnings {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let meta = event.metadata();
            if meta.target() == "sentinel" && *meta.level() == tracing::Level::WARN {
                let mut message = Message(String::new());
                event.record(&mut message);
                self.0.lock().unwrap().push(message.0);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    let seen = Arc::new(Mutex::new(Vec::new()));
    let config = super::config::Config {
        params: vec![super::config::ParamSource::ClientIp { trusted_proxies: 0 }],
        ..super::config::Config::default()
    };
    let with_peer = parts(|b| {
        b.uri("/no-peer-test")
            .extension(ConnectInfo("10.0.0.9:4000".parse::<SocketAddr>().unwrap()))
    });
    let without = parts(|b| b.uri("/no-peer-test"));
    super::params::REPORTED.store(false, std::sync::atomic::Ordering::Relaxed);
    tracing::subscriber::with_default(Warnings(seen.clone()), || {
        let admit = |p: &Parts| {
            let reservation = super::service::admit(
                &config,
                &Default::default(),
                View::of_parts(p),
                None,
                &mut None,
                &mut Default::default(),
            )
            .unwrap();
            drop(reservation.into_entry());
        };
        admit(&with_peer);
        assert!(
            seen.lock().unwrap().is_empty(),
            "a peer address: nothing to say"
        );
        admit(&without);
        admit(&without);
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "reported once: {seen:?}");
    assert!(seen[0].contains("no peer address"), "{seen:?}");
}

/// Routers built and dropped one after another, their route strings all of one length (the
/// allocator hands a freed string's address to the next): each request still counts under its
/// own route, though the route cache is keyed by those addresses.
#[cfg(feature = "tokio")] // a runtime of its own
#[test]
fn each_route_counts_its_own_requests_when_route_strings_are_freed_and_reallocated() {
    use tower_service::Service;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for i in 0..40 {
        let route = format!("/route-cache-{i:02}/{{id}}");
        let mut app = axum::Router::new()
            .route(&route, axum::routing::get(|| async { "ok" }))
            .layer(super::SentinelLayer::new());
        let request = Request::get(format!("/route-cache-{i:02}/7"))
            .body(axum::body::Body::empty())
            .unwrap();
        // A router is always ready.
        let response = runtime.block_on(app.call(request)).unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        drop(response);
        let name = format!("GET:{route}");
        let passed = crate::metrics::snapshot(&name).map(|s| s.pass_total);
        assert_eq!(passed, Some(1), "{name}: its request counted elsewhere");
    }
}

/// One layered service given to two routes (its clones share its own cache of route nodes,
/// which keeps the first route it saw), each route with two methods, in turns, over routers
/// built again: every request counts under its own route and method.
#[cfg(feature = "tokio")] // a runtime of its own
#[test]
fn one_service_under_two_routes_counts_each_request_under_its_own_route() {
    use tower_layer::Layer as _;
    use tower_service::Service;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for round in 0..3u64 {
        let handler = axum::routing::get(|| async { "ok" }).post(|| async { "ok" });
        let service = super::SentinelLayer::new().layer(handler);
        let mut app = axum::Router::new()
            .route_service("/shared-service-a/{id}", service.clone())
            .route_service("/shared-service-b/{id}", service);
        for i in 0..8u64 {
            let route = if i % 2 == 0 { "a" } else { "b" };
            let method = if i % 4 < 2 { Method::GET } else { Method::POST };
            let request = Request::builder()
                .method(method)
                .uri(format!("/shared-service-{route}/{i}"))
                .body(axum::body::Body::empty())
                .unwrap();
            let response = runtime.block_on(app.call(request)).unwrap();
            assert_eq!(response.status(), StatusCode::OK);
        }
        for name in [
            "GET:/shared-service-a/{id}",
            "GET:/shared-service-b/{id}",
            "POST:/shared-service-a/{id}",
            "POST:/shared-service-b/{id}",
        ] {
            let passed = crate::metrics::snapshot(name).map(|s| s.pass_total);
            assert_eq!(passed, Some(2 * (round + 1)), "{name}, round {round}");
        }
    }
}

/// Under a service mounted with `nest_service`, axum builds the matched path again for each
/// request (a new string each time): the requests still count under their route's resource.
#[cfg(feature = "tokio")] // a runtime of its own
#[test]
fn a_nested_service_counts_its_requests_under_the_full_route() {
    use tower_service::Service;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let inner = axum::Router::new()
        .route("/users/{id}", axum::routing::get(|| async { "ok" }))
        .route("/items/{id}", axum::routing::get(|| async { "ok" }))
        .layer(super::SentinelLayer::new());
    let mut app = axum::Router::new().nest_service("/nested-cache", inner);
    for i in 0..12 {
        let path = if i % 3 == 2 { "items" } else { "users" };
        let request = Request::get(format!("/nested-cache/{path}/{i}"))
            .body(axum::body::Body::empty())
            .unwrap();
        // A router is always ready.
        let response = runtime.block_on(app.call(request)).unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let passed = |name: &str| crate::metrics::snapshot(name).map(|s| s.pass_total);
    assert_eq!(passed("GET:/nested-cache/users/{id}"), Some(8));
    assert_eq!(passed("GET:/nested-cache/items/{id}"), Some(4));
}

#[test]
fn every_kind_of_block_is_answered_with_its_class_status() {
    // Walks the list of block kinds: each kind's class says the status the layer answers.
    for kind in BlockKind::ALL {
        let (status, grpc) = answer(kind);
        assert_eq!(status.as_u16(), kind.class().http_status(), "{kind:?}");
        let grpc_of_status = match status {
            StatusCode::TOO_MANY_REQUESTS => 8,
            StatusCode::SERVICE_UNAVAILABLE => 14,
            StatusCode::FORBIDDEN => 7,
            other => panic!("{kind:?} answered {other}"),
        };
        assert_eq!(grpc, grpc_of_status, "{kind:?}");
    }
    // The answers as they were when the layer matched kinds.
    let expected = [
        (BlockKind::Flow, 429),
        (BlockKind::Concurrency, 429),
        (BlockKind::HotParam, 429),
        (BlockKind::Custom, 429),
        (BlockKind::Cluster, 429),
        (BlockKind::Authority, 403),
        (BlockKind::CircuitBreaker, 503),
        (BlockKind::System, 503),
        (BlockKind::Outlier, 503),
    ];
    assert_eq!(expected.len(), BlockKind::ALL.len());
    for (kind, status) in expected {
        assert_eq!(answer(kind).0.as_u16(), status, "{kind:?}");
    }
}
