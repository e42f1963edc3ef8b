//! The list of block kinds: every way a call can be refused, as seen from outside, written
//! once ([`block_kinds!`] below, invoked once). Everything that goes over the kinds of block
//! is derived from it: [`BlockKind`] itself, each kind's words in the text of a
//! [`BlockError`](crate::BlockError) ([`Text`]), its label (the metrics' and the page's name, and its field of
//! [`BlockTotals`]), its index in the block totals, its [`BlockClass`] (the tower layer answers
//! a class, not a kind) and, for a kind of rule, its stage's order number
//! (`*_SLOT_ORDER`, re-exported in [`slot`](crate::slot)).
//!
//! A new kind of block is one entry here; the compiler then asks nothing else outside the
//! kind's folder and the table of kinds (`kinds/table.rs`).

/// What a refusal tells the caller, whatever kind of rule made it: the tower layer answers
/// each class with one HTTP (and gRPC) status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockClass {
    /// Too many calls: try again later (HTTP 429, gRPC `RESOURCE_EXHAUSTED`).
    Overload,
    /// The resource, the process or the endpoint cannot serve now (HTTP 503, gRPC
    /// `UNAVAILABLE`).
    Unavailable,
    /// The caller may not enter at all (HTTP 403, gRPC `PERMISSION_DENIED`).
    Forbidden,
}

impl BlockClass {
    /// The HTTP status a refusal of this class is answered with, as each class's doc says
    /// (the tower layer's test checks its answers against it).
    #[cfg(test)]
    pub(crate) const fn http_status(self) -> u16 {
        match self {
            BlockClass::Overload => 429,
            BlockClass::Unavailable => 503,
            BlockClass::Forbidden => 403,
        }
    }
}

/// How a block's text goes on after "resource `r` blocked by " (`BlockError`'s `Display`), with
/// the kind's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Text {
    /// `<words> (qps T)` or `<words> (T per W ms)`, then ` counting related resource `r``
    /// and `: <reason>` where the block has them.
    Window(&'static str),
    /// `<words> (<reason, or "limit"> T)`.
    Limit(&'static str),
    /// `<words> (<reason, or the default given here>)`.
    Reason(&'static str, &'static str),
    /// `<words> on parameter i`, then `: <reason>` and ` (retry after d)` where it has them.
    Param(&'static str),
    /// A shared limit: `<words> hotspot rule on parameter i (T` or `<words> flow rule (T`,
    /// then ` per second)` or ` per W ms)`, `: <reason>`, and for a parameter's block
    /// ` (retry after d)`.
    Shared(&'static str),
}

/// Writes the items of the list of block kinds. Each entry: the [`BlockKind`] variant with its
/// doc; `total:` its [`BlockTotals`] field (its doc above it), whose name is also the kind's
/// label; its [`BlockClass`]; its [`Text`]; and, for the kind of rule that has a stage of its
/// own, `order:` the public constant of that stage's order number (its doc above it).
macro_rules! block_kinds {
    (@order) => { None };
    (@order $order:ident) => { Some(slot_orders::$order) };
    ($(
        $(#[$doc:meta])*
        $variant:ident {
            $(#[$total_doc:meta])*
            total: $field:ident,
            class: $class:ident,
            text: $text:expr,
            $(
                $(#[$order_doc:meta])*
                order: $order:ident = $number:expr,
            )?
        },
    )*) => {
        /// Which kind of check rejected a call.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum BlockKind {
            $($(#[$doc])* $variant,)*
        }

        /// How many kinds of block there are.
        pub(crate) const COUNT: usize = [$(BlockKind::$variant),*].len();

        impl BlockKind {
            /// Every kind, in the order of their indexes.
            #[cfg_attr(not(test), allow(dead_code))]
            pub(crate) const ALL: [BlockKind; COUNT] = [$(BlockKind::$variant),*];

            /// The labels, in the order of the indexes.
            const LABELS: [&'static str; COUNT] = [$(stringify!($field)),*];

            /// Its place in the list (and in the block totals' arrays).
            #[inline]
            pub(crate) const fn index(self) -> usize {
                self as usize
            }

            /// Its name in the metrics, the page and the block totals (`flow`, `hotspot`,
            /// `cluster`, ...).
            pub(crate) const fn label(self) -> &'static str {
                BlockKind::LABELS[self.index()]
            }

            /// What a refusal of this kind tells the caller.
            #[cfg_attr(not(any(test, feature = "tower")), allow(dead_code))]
            pub(crate) const fn class(self) -> BlockClass {
                match self {
                    $(BlockKind::$variant => BlockClass::$class,)*
                }
            }

            /// How its block's text reads.
            pub(crate) const fn text(self) -> Text {
                use Text::*;
                match self {
                    $(BlockKind::$variant => $text,)*
                }
            }

            /// The order number of its stage, for the kinds of rule with a stage of their own.
            #[cfg_attr(not(test), allow(dead_code))]
            pub(crate) const fn slot_order(self) -> Option<i32> {
                match self {
                    $(BlockKind::$variant => block_kinds!(@order $($order)?),)*
                }
            }
        }

        /// The built-in checks' order numbers (Sentinel's where Sentinel has the check): custom
        /// slots run between them by theirs.
        pub mod slot_orders {
            $($(
                $(#[$order_doc])*
                pub const $order: i32 = $number;
            )?)*
        }

        /// Blocked calls since a resource was created, by the kind of rule that blocked them.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct BlockTotals {
            $($(#[$total_doc])* pub $field: u64,)*
        }

        impl BlockTotals {
            /// The rule kinds' names, as the metrics label them, in the order of
            /// [`by_rule`](Self::by_rule).
            pub const RULES: [&'static str; COUNT] = BlockKind::LABELS;

            /// Every kind's name (as in [`RULES`](Self::RULES)) with its count.
            pub fn by_rule(&self) -> [(&'static str, u64); COUNT] {
                [$((stringify!($field), self.$field)),*]
            }

            pub(crate) fn from_counts(c: [u64; COUNT]) -> BlockTotals {
                let [$($field),*] = c;
                BlockTotals { $($field),* }
            }
        }
    };
}

block_kinds! {
    /// A flow rule counting passes per window (QPS).
    Flow {
        /// By QPS flow rules ([`BlockKind::Flow`]).
        total: flow,
        class: Overload,
        text: Window("flow rule"),
        /// Order of the built-in flow checks (concurrency and QPS), as in Sentinel.
        order: FLOW_SLOT_ORDER = -2_000,
    },
    /// A flow rule limiting the calls inside at once.
    Concurrency {
        /// By concurrency limits ([`BlockKind::Concurrency`]).
        total: concurrency,
        class: Overload,
        text: Limit("concurrency rule"),
    },
    /// An open (or half-open, probes taken) circuit breaker.
    CircuitBreaker {
        /// By circuit breakers ([`BlockKind::CircuitBreaker`]).
        total: circuit_breaker,
        // "Overloaded, come back later".
        class: Unavailable,
        text: Reason("circuit breaker", "open"),
        /// Order of the built-in circuit breakers, as in Sentinel's degrade slot.
        order: CIRCUIT_BREAKER_SLOT_ORDER = -1_000,
    },
    /// A hotspot rule: one value of a parameter made too many calls
    /// ([`crate::rules::HotspotRule`]).
    HotParam {
        /// By hotspot (hot-parameter) rules ([`BlockKind::HotParam`]).
        total: hotspot,
        class: Overload,
        text: Param("hotspot rule"),
        /// Order of the built-in hotspot (per-parameter-value) checks: after the flow checks,
        /// before the circuit breakers.
        order: HOTSPOT_SLOT_ORDER = -1_500,
    },
    /// A system rule: the process as a whole is over a limit ([`crate::rules::SystemRule`];
    /// inbound entries only). [`BlockError::reason`](crate::BlockError::reason) names the
    /// limit (`qps`, `concurrency`, `avg_rt`, `cpu_usage`, `load_per_core`, or `adaptive` while
    /// the adaptive check holds on for a second after the CPU or load came back under its
    /// limit).
    System {
        /// By system rules ([`BlockKind::System`]).
        total: system,
        class: Unavailable,
        text: Limit("system rule"),
        /// Order of the built-in system checks (inbound entries), as in Sentinel.
        order: SYSTEM_SLOT_ORDER = -5_000,
    },
    /// An authority rule: the caller's origin may not enter the resource
    /// ([`crate::rules::AuthorityRule`]).
    Authority {
        /// By authority (origin) rules ([`BlockKind::Authority`]).
        total: authority,
        class: Forbidden,
        text: Reason("authority rule", "origin not allowed"),
        /// Order of the built-in authority (origin) checks, as in Sentinel.
        order: AUTHORITY_SLOT_ORDER = -6_000,
    },
    /// An outlier rule: the call's endpoint is ejected for its errors
    /// ([`crate::rules::OutlierRule`]). [`BlockError::reason`](crate::BlockError::reason) names
    /// the endpoint.
    Outlier {
        /// By outlier rules ([`BlockKind::Outlier`]).
        total: outlier,
        // "Unavailable, try another".
        class: Unavailable,
        text: Reason("outlier rule", "endpoint ejected"),
        /// Order of the built-in outlier checks (endpoints ejected for their errors): after
        /// the circuit breakers.
        order: OUTLIER_SLOT_ORDER = -900,
    },
    /// A check slot registered by the user ([`crate::slot::register_check_slot`]).
    Custom {
        /// By the user's check slots ([`BlockKind::Custom`]).
        total: custom,
        class: Overload,
        text: Reason("check slot", "no reason given"),
    },
    /// A cluster rule: a flow or hotspot rule marked `cluster`, whose limit the instances of a
    /// service share ([`crate::cluster`]). One kind wherever a refusal is told: this kind, the
    /// `cluster` count of the block totals and metrics, and the dashboard's `cluster`.
    /// [`BlockError::reason`](crate::BlockError::reason) says the cause (the fleet's budget
    /// spent, a window the store lost counted as spent, or this instance's local share), and a
    /// hotspot rule's refusal has its [`param_index`](crate::BlockError::param_index).
    Cluster {
        /// By cluster rules, the limit shared by the instances (a flow or hotspot rule marked
        /// `cluster`: [`BlockKind::Cluster`]); counted here, not under the rule's own kind.
        total: cluster,
        class: Overload,
        text: Shared("cluster"),
    },
}

impl BlockTotals {
    /// The sum over every kind.
    pub fn sum(&self) -> u64 {
        self.by_rule().iter().map(|&(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::slot_orders::*;
    use super::*;

    #[test]
    fn every_kind_has_its_own_index_label_and_order() {
        let mut labels = HashSet::new();
        let mut orders = HashSet::new();
        for (i, kind) in BlockKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), i, "{kind:?}'s index is its place in the list");
            assert!(labels.insert(kind.label()), "{kind:?}'s label is taken");
            assert_eq!(BlockTotals::RULES[i], kind.label(), "{kind:?}");
            if let Some(order) = kind.slot_order() {
                assert!(
                    orders.insert(order),
                    "{kind:?}'s slot order {order} is taken"
                );
            }
            // Its count lands in its own field, under its own label.
            let mut counts = [0; COUNT];
            counts[i] = 7;
            let totals = BlockTotals::from_counts(counts);
            assert_eq!(totals.by_rule()[i], (kind.label(), 7), "{kind:?}");
            assert_eq!(totals.sum(), 7, "{kind:?}");
        }
        assert_eq!(labels.len(), COUNT);
        // Every kind of rule with a stage has its order (custom slots, concurrency and cluster
        // blocks come from other stages); today's numbers are kept.
        assert_eq!(
            [AUTHORITY_SLOT_ORDER, SYSTEM_SLOT_ORDER, FLOW_SLOT_ORDER],
            [-6_000, -5_000, -2_000]
        );
        assert_eq!(
            [
                HOTSPOT_SLOT_ORDER,
                CIRCUIT_BREAKER_SLOT_ORDER,
                OUTLIER_SLOT_ORDER
            ],
            [-1_500, -1_000, -900]
        );
        assert_eq!(orders.len(), 6);
        assert_eq!(BlockKind::Cluster.label(), "cluster");
        assert_eq!(BlockKind::HotParam.label(), "hotspot");
    }

    #[test]
    fn every_class_has_its_status() {
        let statuses: HashSet<u16> = BlockKind::ALL
            .iter()
            .map(|k| k.class().http_status())
            .collect();
        assert_eq!(statuses, HashSet::from([429, 503, 403]));
        assert_eq!(BlockKind::Authority.class(), BlockClass::Forbidden);
        assert_eq!(BlockKind::Outlier.class(), BlockClass::Unavailable);
        assert_eq!(BlockKind::Cluster.class(), BlockClass::Overload);
    }
}
