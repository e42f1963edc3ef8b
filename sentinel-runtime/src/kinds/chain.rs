//! The checks in force on a resource ([`Chain`]): one part per kind of rule (from the table of
//! kinds), each built by its kind from the resource's rules of that kind ([`ChainRules`]).

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use super::call::BuildContext;
use super::kind::{Alone, Kind, Successors};
use super::table::kinds_table;
use crate::kinds::flow::gate::Gate;
use crate::kinds::flow::qps::QpsGate;
use crate::kinds::hotspot::gate::HotspotGate;
use crate::param::Params;
use crate::slot::concurrency::ConcurrencyCounter;
use crate::stat::NodeStats;

/// Defines [`Chain`] and [`ChainRules`] from the table of kinds.
macro_rules! define_chain {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// The checks in force on a resource, as the entry path reads them: each kind's part,
        /// built by its [`Kind::build`] and checked by its stage.
        #[derive(Debug, Default)]
        pub(crate) struct Chain {
            $( pub(crate) $name: <$kind as Kind>::Checks, )*
            /// Whether the chain is a single check and nothing else: an entry then only asks
            /// that check, without the stage runner, when it is not inbound or no system rule
            /// is in force, custom slots do not run on the node and the resource does not count
            /// its calls inside (all read at the entry; see [`Chain::lone_qps`] and
            /// [`Chain::lone_hotspot`]).
            pub(crate) lone: Lone,
            /// The shadow part: the checks of the resource's shadow rules, run after the
            /// enforced ones admit a call, with their own admission; what they would refuse is
            /// counted, never refused (see [`Shadow`]). `None` without shadow rules: such a chain
            /// costs nothing more.
            pub(crate) shadow: Option<Box<Shadow>>,
        }

        /// A resource's rules in force, by kind, as the manager hands them to [`Chain::build`]
        /// (all validated and naming the resource).
        #[derive(Clone, Copy, Debug, Default)]
        pub(crate) struct ChainRules<'a> {
            $( pub(crate) $name: &'a [<$kind as Kind>::Rule], )*
        }

        impl Chain {
            /// The chain of `rules`, each kind taking over from `old` what it keeps across a
            /// reload (a gate's counts, a hotspot table, a breaker's state). The rules in
            /// shadow mode make the shadow part, the others the enforced part; each part takes
            /// over from its own old part first, then from the other (a rule promoted from
            /// shadow to enforced, or back, keeps its state), never what the other new part
            /// took.
            pub(crate) fn build(rules: &ChainRules<'_>, old: &Chain, ctx: &BuildContext<'_>) -> Chain {
                $( let $name = split::<$kind>(rules.$name); )*
                let none = Chain::default();
                let old_shadow = old.shadow.as_ref().map_or(&none, |s| &s.chain);
                let enforced = ChainRules { $( $name: &$name.0, )* };
                let enforced_ctx = BuildContext { shadow: false, ..*ctx };
                let mut chain = Chain::part(&enforced, [old, old_shadow, &none], &enforced_ctx);
                let shadow = ChainRules { $( $name: &$name.1, )* };
                if false $( || !shadow.$name.is_empty() )* {
                    let shadow_ctx = BuildContext { shadow: true, ..*ctx };
                    let part = Chain::part(&shadow, [old_shadow, old, &chain], &shadow_ctx);
                    let counter = old
                        .shadow
                        .as_ref()
                        .map_or_else(Arc::default, |s| Arc::clone(&s.counter));
                    if part.counts_inside() {
                        // From nothing: the calls already inside took no place of the shadow
                        // rules, and their exits give none back.
                        counter.start(|| 0);
                    }
                    chain.shadow = Some(Box::new(Shadow { chain: part, counter }));
                    // A chain with a shadow part is never one lone gate.
                    chain.lone = Lone::No;
                }
                chain
            }

            /// One part of a chain: each kind's checks of `rules`, taking over from
            /// `[first, then, taken]`'s (see [`Successors`]).
            fn part(rules: &ChainRules<'_>, [first, then, taken]: [&Chain; 3], ctx: &BuildContext<'_>) -> Chain {
                let mut chain = Chain {
                    $( $name: {
                        let old = Successors::successors(&first.$name, &then.$name, &taken.$name);
                        <$kind as Kind>::build(rules.$name, &old, ctx)
                    }, )*
                    lone: Lone::No,
                    shadow: None,
                };
                chain.lone = Lone::of(&[$( <$kind as Kind>::alone(&chain.$name), )*]);
                chain
            }

            /// No checks at all (enforced or shadow).
            pub(crate) fn is_empty(&self) -> bool {
                self.shadow.is_none() $( && <$kind as Kind>::alone(&self.$name) == Alone::Empty )*
            }
        }
    };
}

kinds_table!(define_chain);

/// A chain's shadow part: the checks of the shadow rules, and their own count of calls inside
/// (a shadow concurrency limit never takes a place of the resource's).
#[derive(Debug, Default)]
pub(crate) struct Shadow {
    pub(crate) chain: Chain,
    /// Places the calls the shadow concurrency limits admitted hold, counted from the first
    /// shadow concurrency rule (kept across reloads).
    pub(crate) counter: Arc<ConcurrencyCounter>,
}

impl Shadow {
    /// The shadow part a call of `chain` was checked against: the chain's own, else
    /// [`process_wide`](Self::process_wide).
    pub(crate) fn of(chain: &Chain) -> &Shadow {
        chain
            .shadow
            .as_deref()
            .unwrap_or_else(|| Shadow::process_wide())
    }

    /// The shadow part of a chain without one: no resource's rules, so only the process-wide
    /// kinds' shadow rules (system rules, put in force by their `put_in_force`) check a call
    /// against it.
    pub(crate) fn process_wide() -> &'static Shadow {
        static PART: LazyLock<Shadow> = LazyLock::new(|| {
            let stats = NodeStats::new();
            let ctx = BuildContext {
                param_names: None,
                now: 0,
                stats: &stats,
                resolve: |_| None,
                shadow: true,
            };
            let none = Chain::default();
            Shadow {
                chain: Chain::part(&ChainRules::default(), [&none, &none, &none], &ctx),
                counter: Arc::default(),
            }
        });
        &PART
    }
}

/// A kind's rules split into the enforced ones (borrowed when none is in shadow mode) and the
/// shadow ones (with `shadow` cleared).
fn split<K: Kind>(rules: &[K::Rule]) -> (Cow<'_, [K::Rule]>, Vec<K::Rule>) {
    if rules.iter().all(|r| K::unshadowed(r).is_none()) {
        return (Cow::Borrowed(rules), Vec::new());
    }
    let (mut enforced, mut shadow) = (Vec::new(), Vec::new());
    for rule in rules {
        match K::unshadowed(rule) {
            Some(unshadowed) => shadow.push(unshadowed),
            None => enforced.push(rule.clone()),
        }
    }
    (Cow::Owned(enforced), shadow)
}

/// What [`Chain::lone`] says the chain is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Lone {
    /// Anything else: the stage runner runs.
    #[default]
    No,
    /// One exact QPS gate (the flow part's first gate).
    Qps,
    /// One hotspot gate limiting a rate, with no wait and no cluster part.
    Hotspot,
}

impl Lone {
    /// The chain is lone when exactly one kind has checks and that kind says they are one gate
    /// of a shortcut's shape.
    fn of(kinds: &[Alone]) -> Lone {
        let mut held = kinds.iter().filter(|&&a| a != Alone::Empty);
        match (held.next(), held.next()) {
            (Some(Alone::Qps), None) => Lone::Qps,
            (Some(Alone::Hotspot), None) => Lone::Hotspot,
            _ => Lone::No,
        }
    }
}

impl Chain {
    /// Starts loading what the hotspot checks will read of the call's parameters (their
    /// tables' lines, over a large table misses to memory), so that the misses overlap the work
    /// before the checks. Only a hint: the checks are the same without it.
    #[inline(always)]
    pub(crate) fn prefetch_params(&self, params: &Params) {
        for gate in &self.hotspot {
            gate.prefetch(params);
        }
    }

    /// The lone exact QPS gate, if the chain is that and nothing else (the entry's shortcut:
    /// no stage runner, no admission record; the same checks and the same counts).
    #[inline(always)]
    pub(crate) fn lone_qps(&self) -> Option<&QpsGate> {
        if self.lone != Lone::Qps {
            return None;
        }
        self.flow.gates.first()?.as_qps()
    }

    /// The gate of [`lone_qps`](Self::lone_qps), shared (the node pins it).
    pub(crate) fn lone_qps_gate(&self) -> Option<&Arc<Gate>> {
        self.lone_qps()?;
        self.flow.gates.first()
    }

    /// The lone hotspot gate, if the chain is that and nothing else (as [`lone_qps`]).
    ///
    /// [`lone_qps`]: Self::lone_qps
    #[inline(always)]
    pub(crate) fn lone_hotspot(&self) -> Option<&HotspotGate> {
        if self.lone != Lone::Hotspot {
            return None;
        }
        self.hotspot.first()
    }

    /// Whether the chain needs the resource's count of calls inside.
    pub(crate) fn counts_inside(&self) -> bool {
        self.flow.concurrency.is_some() || self.flow.adaptive.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_lone_only_when_one_kind_holds_one_gate_of_a_shortcuts_shape() {
        use Alone::*;
        assert_eq!(Lone::of(&[Empty, Empty, Empty]), Lone::No);
        assert_eq!(Lone::of(&[Qps, Empty, Empty]), Lone::Qps);
        assert_eq!(Lone::of(&[Empty, Hotspot, Empty]), Lone::Hotspot);
        assert_eq!(Lone::of(&[Qps, Hotspot, Empty]), Lone::No);
        assert_eq!(Lone::of(&[Qps, Empty, Other]), Lone::No);
        assert_eq!(Lone::of(&[Other]), Lone::No);
    }
}
