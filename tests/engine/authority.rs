//! Authority rules and origin scopes through the public API.

use std::time::Duration;

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::context::{self, WithOrigin};
use sentinel_runtime::rules::{self, AuthorityRule, FlowRule};
use sentinel_runtime::{sentinel, BlockError, BlockKind, EntryBuilder};

#[sentinel(resource = "auth-guarded", fallback = refused)]
fn guarded() -> Result<(), BlockKind> {
    Ok(())
}

fn refused(e: BlockError) -> Result<(), BlockKind> {
    Err(e.kind())
}

#[test]
fn allow_and_deny_lists_by_origin_with_missing_origins_denied_under_allow() {
    let _clock = MockClock::install();
    rules::load_authority_rules(vec![
        AuthorityRule::allow("auth-admin", ["ops", " billing"]),
        AuthorityRule::deny("auth-search", ["crawler"]),
        AuthorityRule::allow("auth-open", ["ops"]).allow_missing_origin(true),
    ])
    .unwrap();
    let enter = |r: &str, o: Option<&str>| {
        let b = EntryBuilder::new(r);
        match o {
            Some(o) => b.origin(o).enter(),
            None => b.enter(),
        }
        .map(drop)
        .map_err(|e| e.kind())
    };
    assert_eq!(enter("auth-admin", Some("ops")), Ok(()));
    assert_eq!(
        enter("auth-admin", Some("billing")),
        Ok(()),
        "trimmed at load"
    );
    assert_eq!(
        enter("auth-admin", Some("guest")),
        Err(BlockKind::Authority)
    );
    assert_eq!(
        enter("auth-admin", None),
        Err(BlockKind::Authority),
        "a missing origin does not bypass an allow-list"
    );
    assert_eq!(enter("auth-open", None), Ok(()), "unless the rule opts out");
    assert_eq!(
        enter("auth-search", Some("crawler")),
        Err(BlockKind::Authority)
    );
    assert_eq!(enter("auth-search", Some("app")), Ok(()));
    assert_eq!(enter("auth-search", None), Ok(()));
    let err = EntryBuilder::new("auth-admin")
        .origin("guest")
        .enter()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "resource `auth-admin` blocked by authority rule (origin `guest` not allowed)"
    );
    rules::load_authority_rules(vec![]).unwrap();
}

#[test]
fn authority_is_checked_before_flow_and_reserves_nothing() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![FlowRule::qps("auth-order", 1.0)]).unwrap();
    rules::load_authority_rules(vec![AuthorityRule::allow("auth-order", ["ops"])]).unwrap();
    for _ in 0..5 {
        let e = EntryBuilder::new("auth-order")
            .origin("guest")
            .enter()
            .unwrap_err();
        assert_eq!(e.kind(), BlockKind::Authority);
    }
    assert!(
        EntryBuilder::new("auth-order")
            .origin("ops")
            .enter()
            .is_ok(),
        "the denied calls took nothing of the qps = 1 budget"
    );
    rules::load_flow_rules(vec![]).unwrap();
    rules::load_authority_rules(vec![]).unwrap();
}

#[test]
fn the_attribute_takes_the_scope_origin_and_scopes_nest() {
    let _clock = MockClock::install();
    rules::load_authority_rules(vec![AuthorityRule::allow("auth-guarded", ["ops"])]).unwrap();
    assert_eq!(guarded(), Err(BlockKind::Authority), "no scope: no origin");
    context::with_origin("ops", || {
        assert_eq!(guarded(), Ok(()));
        context::with_origin("guest", || assert_eq!(guarded(), Err(BlockKind::Authority)));
        assert_eq!(guarded(), Ok(()), "the outer scope is back");
        // An entry's own origin wins over the scope's.
        assert!(EntryBuilder::new("auth-guarded")
            .origin("guest")
            .enter()
            .is_err());
    });
    let panicked = std::panic::catch_unwind(|| {
        context::with_origin("ops", || panic!("inside a scope"));
    });
    assert!(panicked.is_err());
    assert_eq!(context::origin(), None, "a panic leaves no scope behind");
    rules::load_authority_rules(vec![]).unwrap();
}

#[test]
fn nested_origin_scopes_hold_across_await_on_a_multi_thread_runtime() {
    let _clock = MockClock::install();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let seen = runtime.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..8 {
            let outer = format!("tenant-{i}");
            tasks.push(tokio::spawn(
                async move {
                    let mut seen = Vec::new();
                    for _ in 0..5 {
                        seen.push(context::origin());
                        // Yield to the scheduler: the task may resume on the other worker.
                        tokio::time::sleep(Duration::from_micros(50)).await;
                        let inner = async {
                            tokio::task::yield_now().await;
                            context::origin()
                        }
                        .with_origin("inner")
                        .await;
                        seen.push(inner);
                        seen.push(context::origin());
                    }
                    seen
                }
                .with_origin(outer),
            ));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.unwrap());
        }
        all
    });
    for (i, seen) in seen.iter().enumerate() {
        for (j, origin) in seen.iter().enumerate() {
            let expected = if j % 3 == 1 {
                "inner".to_string()
            } else {
                format!("tenant-{i}")
            };
            assert_eq!(
                origin.as_deref(),
                Some(expected.as_str()),
                "task {i}, read {j}"
            );
        }
    }
    assert_eq!(context::origin(), None);
}
