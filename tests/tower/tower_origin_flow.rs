//! Per-origin flow rules (Sentinel's `limitApp`) behind the tower layer: the origin its
//! `.origin(..)` finds (a header here) selects the rule.

use std::convert::Infallible;

use http::{Request, Response, StatusCode};
use http_body_util::Full;
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::{service_fn, Layer, ServiceExt};

type Body = Full<axum::body::Bytes>;

#[tokio::test]
async fn the_layers_origin_selects_the_per_origin_flow_rule() {
    let _clock = MockClock::install();
    let resource = "PUT:<unmatched>";
    rules::load_flow_rules(vec![
        FlowRule::qps(resource, 1.0).origin("billing"),
        FlowRule::qps(resource, 2.0).other_origins(),
    ])
    .unwrap();
    let inner = service_fn(|_req: Request<Body>| async {
        Ok::<_, Infallible>(Response::new(Body::default()))
    });
    let svc = SentinelLayer::new()
        .origin(|parts| {
            parts
                .headers
                .get("x-app")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .layer(inner);
    let call = |app: Option<&str>| {
        let mut request = Request::put("/anything");
        if let Some(app) = app {
            request = request.header("x-app", app);
        }
        let svc = svc.clone();
        async move {
            svc.oneshot(request.body(Body::default()).unwrap())
                .await
                .unwrap()
                .status()
        }
    };
    let mut statuses = Vec::new();
    for app in [
        Some("billing"),
        Some("billing"),
        Some("guest"),
        Some("guest"),
        Some("guest"),
    ] {
        statuses.push(call(app).await);
    }
    let (ok, busy) = (StatusCode::OK, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        statuses,
        [ok, busy, ok, ok, busy],
        "billing 1, each other origin 2"
    );
    assert_eq!(call(Some("crawler")).await, ok, "another origin: its own 2");
    assert_eq!(call(None).await, ok, "no origin: neither rule applies");
    rules::load_flow_rules(vec![]).unwrap();
}
