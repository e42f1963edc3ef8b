//! The table of kinds: one line per kind of rule. Every list that goes over the kinds is
//! derived from it: the fields of [`RuleSet`](crate::rules::RuleSet), of a resource's chain of
//! checks and of the rules a chain is built from, the stages and their order, the loaded rules
//! by kind, the attribute's defaults, the kinds' names and file keys, the lone-check shortcut,
//! the kinds' per-call tickets with the exit hook that reports them (`tickets.rs`), the kinds
//! the page lists, the public `load_<kind>_rules` and `<kind>_rules` functions
//! (`manager/by_kind.rs`) and the re-exports of each kind's public types in
//! [`rules`](crate::rules) (`public.rs`). A kind is its folder under `kinds/` (a
//! [`Kind`](super::kind::Kind) and what it needs) and one line here.

/// Calls `$then! { .. }` with the table: per kind, the doc of its [`RuleSet`](crate::rules::RuleSet)
/// field, its name (the field's, and its folder's), its [`Kind`](super::kind::Kind), and in
/// braces its rule's type and the names of its public load and read functions (in
/// [`rules`](crate::rules); the load function's doc is its folder's `load.md`), in the order
/// of the `RuleSet`'s fields. The stages run in the order of each kind's `ORDER`, not this one.
macro_rules! kinds_table {
    ($then:ident) => {
        $then! {
            /// Flow rules (Sentinel's `FlowRule`). In files: `flow`.
            flow: crate::kinds::flow::kind::FlowKind {
                rule: crate::kinds::flow::rule::FlowRule,
                load: load_flow_rules,
                read: flow_rules,
            },
            /// Circuit-breaker rules (Sentinel's `DegradeRule`). In files: `circuit_breaker`, or
            /// Sentinel's name `degrade`.
            circuit_breaker: crate::kinds::circuit_breaker::kind::CircuitBreakerKind {
                rule: crate::kinds::circuit_breaker::rule::CircuitBreakerRule,
                load: load_circuit_breaker_rules,
                read: circuit_breaker_rules,
            },
            /// Hotspot (per-parameter-value) rules (Sentinel's `ParamFlowRule`). In files:
            /// `hotspot`, or Sentinel's name `paramFlow`.
            hotspot: crate::kinds::hotspot::kind::HotspotKind {
                rule: crate::kinds::hotspot::rule::HotspotRule,
                load: load_hotspot_rules,
                read: hotspot_rules,
            },
            /// System rules (Sentinel's `SystemRule`). In files: `system`.
            system: crate::kinds::system::kind::SystemKind {
                rule: crate::kinds::system::rule::SystemRule,
                load: load_system_rules,
                read: system_rules,
            },
            /// Authority rules (Sentinel's `AuthorityRule`). In files: `authority`.
            authority: crate::kinds::authority::kind::AuthorityKind {
                rule: crate::kinds::authority::rule::AuthorityRule,
                load: load_authority_rules,
                read: authority_rules,
            },
            /// Outlier rules (endpoints ejected for their errors). In files: `outlier`.
            outlier: crate::kinds::outlier::kind::OutlierKind {
                rule: crate::kinds::outlier::rule::OutlierRule,
                load: load_outlier_rules,
                read: outlier_rules,
            },
        }
    };
}
pub(crate) use kinds_table;
