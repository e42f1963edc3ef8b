//! Hotspot params by name: the tower layer's `client_ip` and `named_param`, the attribute's
//! `params = [...]` and `EntryBuilder::param_names` name them, and rules (in code and in rule
//! files) limit them by name whatever their order. Time from the MockClock (installing it also
//! serialises these tests).

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use http::{Request, StatusCode};
use sentinel_runtime::clock::MockClock;
use sentinel_runtime::rules::{self, HotspotRule, RuleSet, PARAM_BY_NAME};
use sentinel_runtime::tower::SentinelLayer;
use sentinel_runtime::{sentinel, BlockError, BlockKind, EntryBuilder};
use tower::ServiceExt;

fn request(path: &str, ip: &str, key: &str) -> Request<axum::body::Body> {
    let peer = SocketAddr::new(ip.parse().unwrap(), 40_000);
    Request::get(path)
        .header("x-api-key", key)
        .extension(ConnectInfo(peer))
        .body(axum::body::Body::empty())
        .unwrap()
}

/// How many of the requests (client address, API key) to `path` pass.
async fn passed(app: &Router, path: &str, requests: &[(&str, &str)]) -> usize {
    let mut passed = 0;
    for (ip, key) in requests {
        let response = app.clone().oneshot(request(path, ip, key)).await.unwrap();
        if response.status() == StatusCode::OK {
            passed += 1;
        }
    }
    passed
}

#[tokio::test]
async fn a_layer_s_params_are_limited_by_name_whatever_order_they_were_added_in() {
    let _clock = MockClock::install();
    // The rule file names the params; the layer adds the API key first (index 0) and the client
    // address second (index 1), the other way round from what `param_index: 0` for the client
    // would assume.
    let set = RuleSet::from_yaml(
        "hotspot:\n\
         \x20 - { resource: \"GET:/named\", param: client_ip, threshold: 1, window: 10s }\n\
         \x20 - { resource: \"GET:/named\", param: api_key, threshold: 2, window: 10s }\n",
    )
    .unwrap();
    rules::load(set).unwrap();
    let layer = SentinelLayer::new()
        .named_param("api_key", |parts| {
            parts
                .headers
                .get("x-api-key")?
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .client_ip(0);
    let app = Router::new()
        .route("/named", get(|| async { "ok" }))
        .layer(layer);
    // One client with ever new keys: its address's limit, 1 per 10 s.
    let one_client = [("10.0.0.1", "a"), ("10.0.0.1", "b"), ("10.0.0.1", "c")];
    assert_eq!(passed(&app, "/named", &one_client).await, 1);
    // One key from ever new clients: the key's limit, 2 per 10 s.
    let one_key = [
        ("10.0.0.2", "shared"),
        ("10.0.0.3", "shared"),
        ("10.0.0.4", "shared"),
        ("10.0.0.5", "shared"),
    ];
    assert_eq!(passed(&app, "/named", &one_key).await, 2);
    // The resource has been seen: a rule naming a param it does not supply is refused, by its
    // field, and the rules in force stay.
    let err = RuleSet::from_yaml(
        "hotspot:\n  - { resource: \"GET:/named\", param: api_kye, threshold: 1 }\n",
    )
    .and_then(rules::load)
    .unwrap_err();
    let entry = &err.entries()[0];
    assert_eq!(entry.field.as_deref(), Some("param"), "{err}");
    assert!(
        entry.message.contains("api_kye") && entry.message.contains("`client_ip`"),
        "{err}"
    );
    assert_eq!(passed(&app, "/named", &[("10.0.0.1", "d")]).await, 0);
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[test]
fn a_rule_naming_a_param_the_resource_does_not_supply_is_refused_once_it_was_seen() {
    let _clock = MockClock::install();
    let call = |region: &str, user: &str| {
        EntryBuilder::new("named-entries")
            .param_names(&["region", "user"])
            .param(region)
            .param(user)
            .enter()
    };
    // Before the resource is seen, the name cannot be checked: the rule is kept.
    let early = HotspotRule::qps_by_name("named-entries", "user", 1.0);
    rules::load_hotspot_rules(vec![early.clone()]).unwrap();
    assert!(call("eu", "alice").is_ok());
    let blocked = call("us", "alice").unwrap_err();
    assert_eq!(blocked.kind(), BlockKind::HotParam);
    assert_eq!(blocked.param_index(), Some(1), "`user` is the second param");
    assert!(call("eu", "bob").is_ok());
    // Now it is checked, by field, and the rules in force stay.
    let bad = HotspotRule::qps_by_name("named-entries", "tenant", 1.0);
    let err = rules::load_hotspot_rules(vec![bad]).unwrap_err();
    assert_eq!((err.resource(), err.field()), ("named-entries", "param"));
    assert!(err.to_string().contains("`region`, `user`"), "{err}");
    assert_eq!(rules::hotspot_rules(), vec![early]);
    assert!(call("eu", "alice").is_err());
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[sentinel(resource = "attr-named-params", params = [region, user])]
fn per_user(region: &str, user: &str) -> Result<(), BlockError> {
    let _ = (region, user);
    Ok(())
}

#[test]
fn the_attribute_s_params_are_named_after_the_arguments() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![HotspotRule::qps_by_name(
        "attr-named-params",
        "user",
        2.0,
    )
    .window(Duration::from_secs(10))])
    .unwrap();
    let passed = (0..5)
        .filter(|i| per_user(["eu", "us", "ap"][i % 3], "alice").is_ok())
        .count();
    assert_eq!(passed, 2, "limited per user, whatever the region");
    assert!(per_user("eu", "bob").is_ok());
    let err = rules::load_hotspot_rules(vec![HotspotRule::qps_by_name(
        "attr-named-params",
        "user_id",
        1.0,
    )])
    .unwrap_err();
    assert_eq!(err.field(), "param");
    rules::load_hotspot_rules(vec![]).unwrap();
}

#[sentinel(resource = "attr-no-params")]
fn no_params() -> Result<(), BlockError> {
    Ok(())
}

#[test]
fn a_resource_of_the_attribute_without_params_refuses_named_rules() {
    let _clock = MockClock::install();
    assert!(no_params().is_ok());
    let named = HotspotRule::qps_by_name("attr-no-params", "user", 1.0);
    let err = rules::load_hotspot_rules(vec![named]).unwrap_err();
    assert_eq!(err.field(), "param");
    assert!(err.to_string().contains("none"), "{err}");
}

#[test]
fn a_rule_file_gives_exactly_one_of_param_and_param_index() {
    let field = |yaml: &str| {
        let err = RuleSet::from_yaml(yaml)
            .and_then(rules::load)
            .expect_err(yaml);
        err.entries()[0].field.clone()
    };
    assert_eq!(
        field("hotspot:\n  - { resource: a, param: user, param_index: 0, threshold: 1 }\n")
            .as_deref(),
        Some("param")
    );
    assert_eq!(
        field("hotspot:\n  - { resource: a, threshold: 1 }\n").as_deref(),
        Some("param_index")
    );
    assert_eq!(
        field("hotspot:\n  - { resource: a, param: \"\", threshold: 1 }\n").as_deref(),
        Some("param")
    );
    // A named rule is written back with its name and without an index.
    let set =
        RuleSet::from_yaml("hotspot:\n  - { resource: a, param: user, threshold: 1 }\n").unwrap();
    assert_eq!(
        set.hotspot,
        vec![HotspotRule::qps_by_name("a", "user", 1.0)]
    );
    assert_eq!(set.hotspot[0].param_index, PARAM_BY_NAME);
    let yaml = set.to_yaml().unwrap();
    assert!(
        yaml.contains("param: user") && !yaml.contains("param_index"),
        "{yaml}"
    );
    assert_eq!(RuleSet::from_yaml(&yaml).unwrap(), set);
}
