//! [`AuthorityRule`]: allow or deny callers by origin.

use crate::error::RuleError;

/// Whether an authority rule lists the origins allowed or the origins denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthorityStrategy {
    /// Only the listed origins pass (Sentinel's white list).
    Allow,
    /// The listed origins are blocked (Sentinel's black list).
    Deny,
}

/// An authority rule: which callers, named by their origin, may enter a resource. A call's origin
/// comes from [`EntryBuilder::origin`](crate::EntryBuilder::origin) or, failing that, from the
/// scope it runs in ([`context::with_origin`](crate::context::with_origin),
/// [`WithOrigin`](crate::context::WithOrigin)). A block is
/// [`BlockKind::Authority`](crate::BlockKind::Authority).
///
/// * **Origins are compiled once**, at construction, with surrounding whitespace trimmed
///   (Sentinel splits a comma-separated string on every call, so `"a, b"` never matched `b`).
/// * **Origins match trimmed and without regard to ASCII case**, on both sides: a call from
///   `"EVIL "` is denied by `deny(["evil"])`, and `" ops"` passes `allow(["OPS"])`; a call's
///   origin of only whitespace is no origin. Letters beyond ASCII are compared as they are
///   (`"É"` is not `"é"`). Only resources with an authority rule pay for the comparison.
/// * **A missing origin is denied under an allow-list** (Sentinel passes it, which bypasses the
///   list), unless the rule opts out with [`allow_missing_origin`](Self::allow_missing_origin).
///   Under a deny-list a missing origin passes.
///
/// ```
/// use sentinel_runtime::rules::AuthorityRule;
///
/// let internal = AuthorityRule::allow("admin", ["ops", " billing "]); // trimmed
/// let not_crawlers = AuthorityRule::deny("search", &["crawler"]);
/// # assert!(internal.validate().is_ok() && not_crawlers.validate().is_ok());
/// # assert_eq!(internal.origins, vec!["ops".to_string(), "billing".to_string()]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorityRule {
    /// The resource the rule applies to.
    pub resource: String,
    /// Allow-list or deny-list.
    pub strategy: AuthorityStrategy,
    /// The origins listed (trimmed, non-empty).
    pub origins: Vec<String>,
    /// Under an allow-list, whether a call without an origin passes. Default false.
    pub allow_missing: bool,
    /// Shadow mode: the rule is evaluated with its own state as if it were enforced, and a call
    /// it would refuse is counted ([`ResourceStats::shadow_block_total`]) but goes on. Default
    /// false. See [`AuthorityRule::shadow`].
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub shadow: bool,
}

impl AuthorityRule {
    fn new(
        resource: impl Into<String>,
        strategy: AuthorityStrategy,
        origins: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> AuthorityRule {
        AuthorityRule {
            resource: resource.into(),
            strategy,
            origins: origins
                .into_iter()
                .map(|o| o.as_ref().trim().to_owned())
                .collect(),
            allow_missing: false,
            shadow: false,
        }
    }

    /// Only calls from `origins` may enter `resource`.
    pub fn allow(
        resource: impl Into<String>,
        origins: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> AuthorityRule {
        AuthorityRule::new(resource, AuthorityStrategy::Allow, origins)
    }

    /// Calls from `origins` may not enter `resource`.
    pub fn deny(
        resource: impl Into<String>,
        origins: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> AuthorityRule {
        AuthorityRule::new(resource, AuthorityStrategy::Deny, origins)
    }

    /// Under an allow-list, lets calls without an origin pass (they are denied by default).
    pub fn allow_missing_origin(mut self, allow: bool) -> AuthorityRule {
        self.allow_missing = allow;
        self
    }

    /// Puts the rule in shadow mode (`true`) or in force (`false`, the default). A shadow rule
    /// is evaluated with its own state (windows, tables, breaker state) but never blocks,
    /// delays or takes anything from an enforced rule: a call it would refuse is counted in
    /// [`ResourceStats::shadow_block_total`] and goes on. Turning it to `false` later (a
    /// reload of the same rule) keeps its state: what it watched is what it enforces.
    ///
    /// [`ResourceStats::shadow_block_total`]: crate::metrics::ResourceStats::shadow_block_total
    pub fn shadow(mut self, shadow: bool) -> AuthorityRule {
        self.shadow = shadow;
        self
    }

    /// Whether a call from `origin` passes this rule. Both sides are compared trimmed and
    /// without regard to ASCII case; an origin of only whitespace is no origin.
    #[inline]
    pub(crate) fn admits(&self, origin: Option<&str>) -> bool {
        let origin = origin.map(str::trim).filter(|o| !o.is_empty());
        let listed = origin.is_some_and(|o| {
            self.origins
                .iter()
                .any(|l| l.trim().eq_ignore_ascii_case(o))
        });
        match self.strategy {
            AuthorityStrategy::Allow => listed || (origin.is_none() && self.allow_missing),
            AuthorityStrategy::Deny => !listed,
        }
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RuleError> {
        let err = |field, message: String| Err(RuleError::new(&self.resource, field, message));
        crate::rule_data::resource::validate(&self.resource)?;
        if self.origins.is_empty() {
            return err("origins", "must list at least one origin".into());
        }
        if self.origins.iter().any(|o| o.trim().is_empty()) {
            return err("origins", "must not contain an empty origin".into());
        }
        if self.allow_missing && self.strategy == AuthorityStrategy::Deny {
            return err(
                "allow_missing",
                "applies to allow-lists only (a deny-list always passes a missing origin)".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_deny_missing_origins_unless_told_and_deny_lists_pass_them() {
        let allow = AuthorityRule::allow("r", ["a", " b "]);
        assert!(allow.admits(Some("a")) && allow.admits(Some("b")));
        assert!(!allow.admits(Some("c")));
        assert!(
            !allow.admits(None),
            "a missing origin does not bypass the list"
        );
        assert!(allow.clone().allow_missing_origin(true).admits(None));
        let deny = AuthorityRule::deny("r", ["a"]);
        assert!(!deny.admits(Some("a")));
        assert!(deny.admits(Some("b")) && deny.admits(None));
        assert!(!deny.admits(Some(" A\t")), "trimmed, any ASCII case");
        assert!(allow.admits(Some(" B")) && !allow.admits(Some(" ")));
    }

    #[test]
    fn each_bad_field_is_named() {
        let field = |r: AuthorityRule| r.validate().unwrap_err().field();
        assert_eq!(field(AuthorityRule::allow("", ["a"])), "resource");
        assert_eq!(
            field(AuthorityRule::allow("r", Vec::<String>::new())),
            "origins"
        );
        assert_eq!(field(AuthorityRule::allow("r", ["a", "  "])), "origins");
        assert_eq!(
            field(AuthorityRule::deny("r", ["a"]).allow_missing_origin(true)),
            "allow_missing"
        );
    }
}
