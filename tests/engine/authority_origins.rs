//! Authority rules compare origins after the same normalisation on both sides: surrounding
//! whitespace trimmed, ASCII case ignored. A deny-list is not escaped by `"evil "` or `"EVIL"`,
//! and an allow-list does not refuse `" ops"`.

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::context;
use sentinel_runtime::rules::{self, AuthorityRule};
use sentinel_runtime::{BlockKind, EntryBuilder};

fn enter(resource: &str, origin: Option<&str>) -> Result<(), BlockKind> {
    let b = EntryBuilder::new(resource);
    match origin {
        Some(o) => b.origin(o).enter(),
        None => b.enter(),
    }
    .map(drop)
    .map_err(|e| e.kind())
}

#[test]
fn origins_match_whatever_their_surrounding_whitespace_and_ascii_case() {
    let _clock = MockClock::install();
    rules::load_authority_rules(vec![
        AuthorityRule::deny("auth-norm-deny", ["evil"]),
        AuthorityRule::allow("auth-norm-allow", ["ops", " Billing "]),
        AuthorityRule::allow("auth-norm-open", ["ops"]).allow_missing_origin(true),
    ])
    .unwrap();
    for evil in [
        "evil", "evil ", " evil", "\tevil\n", "EVIL", "Evil", " eViL  ",
    ] {
        assert_eq!(
            enter("auth-norm-deny", Some(evil)),
            Err(BlockKind::Authority),
            "{evil:?} escaped the deny-list"
        );
        let scoped = context::with_origin(evil, || enter("auth-norm-deny", None));
        assert_eq!(scoped, Err(BlockKind::Authority), "{evil:?} as a scope");
    }
    for other in ["evil2", "e vil", "devil", "", "   "] {
        assert_eq!(enter("auth-norm-deny", Some(other)), Ok(()), "{other:?}");
    }
    for ops in [
        "ops", " ops", "ops\t", "OPS", "billing", "BILLING ", " billing",
    ] {
        assert_eq!(
            enter("auth-norm-allow", Some(ops)),
            Ok(()),
            "{ops:?} refused by the allow-list"
        );
    }
    for guest in ["guest", "op s", "opss", "bill"] {
        assert_eq!(
            enter("auth-norm-allow", Some(guest)),
            Err(BlockKind::Authority),
            "{guest:?}"
        );
    }
    // An origin of only whitespace is no origin: refused by an allow-list, unless it lets
    // missing origins pass.
    assert_eq!(
        enter("auth-norm-allow", Some("  ")),
        Err(BlockKind::Authority)
    );
    assert_eq!(enter("auth-norm-open", Some("  ")), Ok(()));
    assert_eq!(enter("auth-norm-open", Some("OPS ")), Ok(()));
    assert_eq!(
        enter("auth-norm-open", Some("guest")),
        Err(BlockKind::Authority)
    );
    rules::load_authority_rules(vec![]).unwrap();
}
