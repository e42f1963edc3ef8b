//! Resource names a hostile client cannot multiply: a flood of unmatched gRPC-looking paths is
//! one `<unmatched>` resource, and invented methods under a gRPC service's route are bounded.
//! Routers are called as services (no server). Each test uses its own path prefix and counts
//! the resources under it.

use std::convert::Infallible;

use axum::routing::{any_service, get};
use axum::Router;
use http::{Request, Response, StatusCode};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::metrics;
use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::tower::SentinelLayer;
use tower::{service_fn, ServiceExt};

fn grpc(path: &str) -> Request<axum::body::Body> {
    Request::post(path)
        .header("content-type", "application/grpc")
        .body(axum::body::Body::empty())
        .unwrap()
}

/// The resources whose names contain `part`.
fn resources_with(part: &str) -> Vec<String> {
    let mut names: Vec<String> = metrics::all()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.contains(part))
        .collect();
    names.sort();
    names
}

/// A gRPC service as tonic answers: OK (`grpc-status` in the trailers, none in the head) for
/// the methods it has, `UNIMPLEMENTED` (12, trailers-only) for any other.
fn service_with(methods: &'static [&'static str]) -> Router {
    let svc = service_fn(move |req: Request<axum::body::Body>| async move {
        let method = req.uri().path().rsplit('/').next().unwrap_or("");
        let mut response = Response::builder().header("content-type", "application/grpc");
        if !methods.contains(&method) {
            response = response.header("grpc-status", "12");
        }
        Ok::<_, Infallible>(response.body(axum::body::Body::empty()).unwrap())
    });
    Router::new().route_service("/names.Svc/{*rest}", any_service(svc))
}

#[tokio::test]
async fn a_grpc_404_flood_on_a_rest_router_is_one_unmatched_resource() {
    let _clock = MockClock::install();
    let app = Router::new()
        .route("/users/{id}", get(|| async { "user" }))
        .layer(SentinelLayer::new());
    for i in 0..300 {
        let response = app
            .clone()
            .oneshot(grpc(&format!("/evil.Svc/M{i}")))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let evil = resources_with("evil");
    assert!(
        evil.is_empty(),
        "{} resources made by the flood, e.g. {:?}",
        evil.len(),
        &evil[..evil.len().min(3)]
    );
    let unmatched = metrics::snapshot("POST:<unmatched>").expect("the one unmatched resource");
    assert!(unmatched.pass_total >= 300, "{unmatched:?}");
}

#[tokio::test]
async fn invented_methods_under_a_service_route_are_that_services_unmatched() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![]).unwrap();
    let app = service_with(&["Get", "Put"]).layer(SentinelLayer::new());
    let call = |path: String| {
        let app = app.clone();
        async move {
            let response = app.oneshot(grpc(&path)).await.unwrap();
            response
                .headers()
                .get("grpc-status")
                .map(|v| v.to_str().unwrap().to_owned())
        }
    };
    for i in 0..300 {
        assert_eq!(
            call(format!("/names.Svc/M{i}")).await.as_deref(),
            Some("12")
        );
    }
    let names = resources_with("names.Svc");
    assert_eq!(names.len(), 1, "e.g. {:?}", &names[..names.len().min(3)]);
    assert_eq!(names, ["POST:/names.Svc/<unmatched>"]);
    // The methods the service serves get their own names: from their first answer on.
    assert_eq!(call("/names.Svc/Get".into()).await, None);
    assert_eq!(call("/names.Svc/Get".into()).await, None);
    assert_eq!(call("/names.Svc/Put".into()).await, None);
    assert_eq!(
        resources_with("names.Svc"),
        [
            "POST:/names.Svc/<unmatched>",
            "POST:/names.Svc/Get",
            "POST:/names.Svc/Put"
        ]
    );
    let get = metrics::snapshot("POST:/names.Svc/Get").unwrap();
    assert_eq!(get.pass_total, 1, "the second call of Get: {get:?}");
    // A method named by a rule is its own resource from its first call.
    rules::load_flow_rules(vec![FlowRule::qps("POST:/names.Svc/Ruled", 1.0)]).unwrap();
    assert_eq!(call("/names.Svc/Ruled".into()).await.as_deref(), Some("12"));
    assert_eq!(call("/names.Svc/Ruled".into()).await.as_deref(), Some("8"));
    rules::load_flow_rules(vec![]).unwrap();
}

#[tokio::test]
async fn a_service_that_answers_every_method_gets_a_bounded_number_of_names() {
    let _clock = MockClock::install();
    // A catch-all that answers OK to anything (a proxy, say): every invented method looks real.
    let svc = service_fn(|_req: Request<axum::body::Body>| async {
        let response = Response::builder().header("content-type", "application/grpc");
        Ok::<_, Infallible>(response.body(axum::body::Body::empty()).unwrap())
    });
    let app = Router::new()
        .route_service("/names.Proxy/{*rest}", any_service(svc))
        .layer(SentinelLayer::new());
    for i in 0..600 {
        let response = app
            .clone()
            .oneshot(grpc(&format!("/names.Proxy/M{i}")))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let names = resources_with("names.Proxy");
    assert!(
        names.len() <= 257 && names.len() > 1,
        "{} resources for one service",
        names.len()
    );
    assert!(names.contains(&"POST:/names.Proxy/<unmatched>".to_owned()));
}

#[tokio::test]
async fn without_a_router_only_known_methods_are_named() {
    let _clock = MockClock::install();
    // A tonic-style server without axum's routes: the layer sees no matched path.
    let inner = service_fn(|req: Request<axum::body::Body>| async move {
        let known = req.uri().path() == "/names.Bare/Echo";
        let mut response = Response::builder().header("content-type", "application/grpc");
        if !known {
            response = response.header("grpc-status", "12");
        }
        Ok::<_, Infallible>(response.body(axum::body::Body::empty()).unwrap())
    });
    let svc = tower::Layer::layer(&SentinelLayer::new(), inner);
    for i in 0..300 {
        let path = format!("/names.Bare{i}/M{i}");
        svc.clone().oneshot(grpc(&path)).await.unwrap();
    }
    let bare = resources_with("names.Bare");
    assert!(
        bare.is_empty(),
        "{} resources, e.g. {:?}",
        bare.len(),
        &bare[..bare.len().min(3)]
    );
    svc.clone().oneshot(grpc("/names.Bare/Echo")).await.unwrap();
    assert_eq!(resources_with("names.Bare"), ["POST:/names.Bare/Echo"]);
}
