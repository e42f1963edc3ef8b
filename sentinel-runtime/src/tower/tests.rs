use super::*;
use std::time::Duration;

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
fn a_client_ip_hashes_as_its_text_does() {
    for ip in [
        "10.0.0.9",
        "2001:db8::1",
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
    ] {
        let ip: IpAddr = ip.parse().unwrap();
        assert_eq!(hash_ip(ip), crate::param::hash(&Some(ip.to_string())));
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

#[test]
fn default_names_never_use_the_raw_uri() {
    let p = parts(|b| b.method("GET").uri("/nope/123?x=1"));
    assert_eq!(default_resource(&p, false), "GET:<unmatched>");
    let p = parts(|b| {
        b.method("POST")
            .uri("/helloworld.Greeter/SayHello")
            .header(CONTENT_TYPE, "application/grpc+proto")
    });
    assert!(is_grpc(&p.headers));
    assert_eq!(
        default_resource(&p, true),
        "POST:/helloworld.Greeter/SayHello"
    );
}

#[test]
fn a_thread_keeps_a_short_name_buffer_but_not_a_long_one() {
    let kept = || {
        NAME.with(|cell| {
            let buffer = cell.take();
            let capacity = buffer.capacity();
            cell.set(buffer);
            capacity
        })
    };
    let grpc = |path: &str| {
        parts(|b| {
            b.method("POST")
                .uri(path)
                .header(CONTENT_TYPE, "application/grpc")
        })
    };
    default_resource(&grpc("/a.B/C"), true);
    assert!(kept() > 0, "a short name's buffer is reused");
    let long = format!("/a.B/{}", "x".repeat(10 * MAX_KEPT_NAME));
    assert_eq!(default_resource(&grpc(&long), true).len(), long.len() + 5);
    assert!(kept() <= MAX_KEPT_NAME, "kept {} bytes", kept());
}

#[test]
fn classification_and_rejections() {
    let mut h = HeaderMap::new();
    assert!(!classify(None, StatusCode::NOT_FOUND, &h));
    assert!(classify(None, StatusCode::BAD_GATEWAY, &h));
    for (code, error) in [
        ("0", false),
        ("5", false),
        ("4", true),
        ("13", true),
        ("14", true),
    ] {
        h.insert("grpc-status", HeaderValue::from_static(code));
        assert_eq!(
            classify(None, StatusCode::OK, &h),
            error,
            "grpc-status {code}"
        );
    }
    let never = |_: StatusCode, _: &HeaderMap| false;
    assert!(!classify(Some(&never), StatusCode::BAD_GATEWAY, &h));

    let block = BlockError::hot_param("r", 1.0, 0, Some(Duration::from_millis(1_200)));
    assert_eq!(retry_after_secs(&block), 2);
    let block = BlockError::hot_param("r", 1.0, 0, Some(Duration::from_millis(10)));
    assert_eq!(retry_after_secs(&block), 1);
    let flow = BlockError::flow("r", 1.0, 1_000);
    assert_eq!(retry_after_secs(&flow), 1);
    let r = rejection(&flow, false);
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[RETRY_AFTER], "1");
    let cb = BlockError::circuit_breaker("r", 0.5, "open");
    assert_eq!(
        rejection(&cb, false).status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let g = rejection(&cb, true);
    assert_eq!(g.status(), StatusCode::OK);
    assert_eq!(g.headers()["grpc-status"], "14");
    assert_eq!(rejection(&flow, true).headers()["grpc-status"], "8");
    assert_eq!(percent_encode("a`b` 100%é"), "a`b` 100%25%C3%A9");
}
