//! [`Kind`]: what every kind of rule supplies, so that the table of kinds
//! ([`kinds_table`](super::table::kinds_table)) can derive every per-kind list from one line
//! per kind.

use std::fmt;

use super::call::{BuildContext, Call, Exit};
use crate::error::{BlockError, RuleError};
use crate::param::Params;
#[cfg(feature = "rule-files")]
use crate::rule_data::file::reader::Reader;

/// A kind of rule: its rules, its part of a resource's chain of checks, its stage, its name.
///
/// Every method is required: a new kind cannot leave one out and fall back on a default that
/// would skip its check. That holds for the exit hook too: a kind whose check leaves nothing
/// with the call says so with `type Ticket = ();` and an empty [`on_exit`](Self::on_exit)
/// (never called: a unit ticket is never set), rather than inheriting a default that a kind
/// with a ticket could forget to override.
///
/// A kind with per-call state (the endpoint a call was admitted to, say) writes it in
/// [`check`](Self::check) as its [`Ticket`](Self::Ticket); the table carries each
/// kind's ticket in the call's admission and its entry (`kinds/tickets.rs`), gives it back to
/// [`release`](Self::release) if the call is not admitted after all, and to
/// [`on_exit`](Self::on_exit) at the call's exit, for the enforced and the shadow part.
pub(crate) trait Kind: 'static {
    /// The rule (plain validated data; public in [`rules`](crate::rules)).
    type Rule: Clone + PartialEq + fmt::Debug + Send + Sync + 'static;
    /// Its part of a resource's [`Chain`](super::chain::Chain): what its stage checks. A
    /// chain has two such parts per kind (enforced and shadow), and a build of either may
    /// take over state from both of the old ones ([`Successors`]).
    type Checks: Default + fmt::Debug + Send + Sync + Successors;
    /// What its check leaves with an admitted call until the call's exit (`()` for a kind that
    /// leaves nothing). Its default value means "nothing held": an entry whose tickets are all
    /// default takes the exit that reports to no kind.
    type Ticket: Copy + Default + PartialEq + fmt::Debug;

    /// Its name: in errors (`flow[2]`), in load counts and metrics, and its key in rule files.
    const NAME: &'static str;
    /// Its keys in rule files: its name first, then Sentinel's name if it differs.
    #[cfg_attr(not(feature = "rule-files"), allow(dead_code))]
    const KEYS: &'static [&'static str];
    /// Where its stage runs among the stages and the custom slots (Sentinel's order).
    const ORDER: i32;
    /// Its rule's name in Sentinel (`FlowRule`): Sentinel keeps each kind in a file of that
    /// name (`FlowRule.json`).
    #[cfg(feature = "rule-files")]
    const SENTINEL_NAME: &'static str;
    /// How rule files spell its rules (our names, or Sentinel's).
    #[cfg(feature = "rule-files")]
    const READER: Reader<Self::Rule>;

    /// Whether its rules are process-wide (they name no resource: system rules).
    #[cfg_attr(not(feature = "rule-files"), allow(dead_code))]
    const PROCESS_WIDE: bool;

    /// The resource a rule names; `None` for a process-wide rule (system rules), which is put
    /// in force by [`put_in_force`](Self::put_in_force) instead of on resources.
    fn resource(rule: &Self::Rule) -> Option<&str>;

    /// The rule put in force instead, if it is in shadow mode (its `shadow` field): `Some` of
    /// the same rule with `shadow` cleared. A chain's shadow part is built from these, so a
    /// kind's build never sees the flag, and a rule that moves between the parts compares
    /// equal to itself (its state is kept).
    fn unshadowed(rule: &Self::Rule) -> Option<Self::Rule>;

    /// Every invalid rule of a list, by position: each rule's first bad field, then the rules
    /// beyond a cap (per resource, or a memory budget).
    fn problems(rules: &[Self::Rule], ctx: &Validation) -> Vec<(usize, RuleError)>;

    /// Its checks for a resource's rules, taking over from `old` what it keeps across a reload
    /// (a gate's counts, a table, a breaker's state).
    fn build(rules: &[Self::Rule], old: &Self::Checks, ctx: &BuildContext<'_>) -> Self::Checks;

    /// What its checks are for the lone-check shortcut (see [`Alone`]).
    fn alone(checks: &Self::Checks) -> Alone;

    /// Its stage's check: decides the call, recording what it reserved in the call, and in
    /// `ticket` (the default one on entry) what it leaves with the call until its exit. A
    /// check that leaves nothing does not write it (the common path stays without a store).
    fn check(
        checks: &Self::Checks,
        call: &mut Call<'_>,
        ticket: &mut Self::Ticket,
    ) -> Result<(), BlockError>;

    /// Gives back what its check reserved for the call, `ticket` being what the check left
    /// (the default one if it left nothing or did not run; the call holds it no more): also after the check blocked half-way;
    /// a no-op when it reserved nothing.
    fn release(checks: &Self::Checks, call: &mut Call<'_>, ticket: Self::Ticket);

    /// The exit of a call its check admitted with `ticket` (only called when the ticket is not
    /// the default), with the checks of the part that admitted it: the enforced part, or the
    /// shadow part (whose checks learn the outcome as the enforced ones do).
    fn on_exit(checks: &Self::Checks, ticket: Self::Ticket, exit: &Exit);

    /// Whether this kind's process-wide shadow rules (put in force by
    /// [`put_in_force`](Self::put_in_force)) check a call with `params`: then its shadow stage
    /// runs for the call even on a resource without shadow rules of its own. Always `false` for
    /// a per-resource kind, whose shadow rules are in the resource's chain.
    fn shadow_checks(params: &Params) -> bool;

    /// Puts a whole validated list in force where it is not per resource (the system rules'
    /// process-wide limits and sampler); a no-op for per-resource kinds.
    fn put_in_force(rules: &[Self::Rule], now: u64);
}

/// What a build may take over from a chain's two old parts (enforced and shadow) of one kind:
/// a rule promoted from shadow to enforced (or back) keeps its state (a gate's counts, a
/// breaker's state, a hotspot table). Implemented once per shape of checks
/// (`kinds/succession.rs` has the shared shapes).
pub(crate) trait Successors: Sized {
    /// The old checks a build may take over from: `first`'s (the part's own), then `then`'s
    /// (the other part's), leaving out what `taken` (the other new part) already holds, so
    /// that an enforced and a shadow rule never share state.
    fn successors(first: &Self, then: &Self, taken: &Self) -> Self;
}

/// What a kind's checks are, for the shortcut that skips the stage runner when a chain is one
/// check and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alone {
    /// No check at all.
    Empty,
    /// One exact QPS gate and nothing else.
    Qps,
    /// One hotspot gate limiting a rate, with no wait and no cluster part, and nothing else.
    Hotspot,
    /// Anything else: the stage runner runs.
    Other,
}

/// What validating a kind's rules may ask of the layers above the kinds.
#[derive(Clone, Copy)]
pub(crate) struct Validation {
    /// The parameter names a resource supplies, once it has been entered with names.
    pub(crate) param_names: fn(&str) -> Option<Vec<Option<String>>>,
    /// The most memory the hotspot rules' tables may take together, in bytes.
    pub(crate) max_hotspot_memory: usize,
}
