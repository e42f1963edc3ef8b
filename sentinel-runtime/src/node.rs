//! [`ResourceNode`]: one resource's statistics and the rules in force on it.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::breaker::CircuitState;
use crate::clock;
use crate::error::BlockError;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::defaults::Defaults;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::flow::{Gate, QpsGate};
use crate::kinds::{Chain, Target};
use crate::slot::{self, ConcurrencyCounter};
use crate::stat::{BlockTotals, NodeStats, ResourceStats};
use crate::sync::{Held, Published};

/// What changes only when rules are loaded, behind the node's lock.
#[derive(Debug, Default)]
struct NodeConfig {
    /// The rules of every definition of the resource.
    defaults: Defaults,
    /// The names of the entries' parameters by index (`None`: unnamed), once an entry with
    /// names has been seen: named hotspot rules resolve against them.
    param_names: Option<Vec<Option<String>>>,
    /// The lone QPS gates published in the node's `lone_qps`, kept for the node's life (at
    /// most [`PINNED_GATES`]): an entry reads the published one without a hazard word.
    pinned: Vec<Arc<Gate>>,
}

/// How many lone QPS gates a node keeps for its life. A chain whose gate is new after that many
/// (a gate is new when its rule's shape changed: window, sample count, strictness, or for a
/// warm-up rule also its threshold) is entered through the chain's read, as any other chain.
const PINNED_GATES: usize = 4;

/// The most buckets a pinned gate's ring may hold (a word each): a node keeps at most
/// [`PINNED_GATES`] gates of at most this size for its life, rules removed or not. A gate with
/// a larger ring (a sample count over 63: the ring has the next power of two above it) is
/// entered through the chain's read.
const PINNED_BUCKETS: u64 = 64;

/// A resource: its statistics (second- and minute-level windows) and the rules in force.
///
/// Nodes live for the whole program: the registry hands out `&'static ResourceNode`, so the
/// attribute's `static` can hold one and enter it without any lookup. How many nodes exist is
/// bounded (see [`registry::set_max_resources`](crate::registry::set_max_resources)).
#[derive(Debug)]
pub struct ResourceNode {
    name: &'static str,
    stats: NodeStats,
    /// Calls inside, counted exactly once a concurrency rule has been in force.
    counter: ConcurrencyCounter,
    /// Whether an entry has anything to check: [`CHECKS_CHAIN`] (rules in force, or calls to
    /// count) and [`CHECKS_CUSTOM`] bits; entries of a node without either skip loading the
    /// chain.
    checked: AtomicU8,
    /// What exits report to: [`REPORTS_BREAKERS`], [`REPORTS_ADAPTIVE`] and [`REPORTS_COUNTED`]
    /// bits (0: nothing).
    reports_exits: AtomicU8,
    /// Whether the parameter names are known (read by entries that supply names, so that they
    /// supply them once).
    knows_param_names: AtomicBool,
    /// The checks in force, replaced whole on reload; the replaced one is freed once no call
    /// reads it.
    chain: Published<Chain>,
    /// The chain's lone exact QPS gate (`Chain::lone_qps`), if it is one of the node's pinned
    /// gates (`NodeConfig::pinned`), else null: set with the chain, read by entries without
    /// reading the chain.
    lone_qps: AtomicPtr<QpsGate>,
    config: Mutex<NodeConfig>,
    /// The block events of the `tracing` feature (at most one a second).
    #[cfg(feature = "tracing")]
    block_events: BlockEvents,
}

/// When the last block event of a node was emitted, and the blocks it reported.
#[cfg(feature = "tracing")]
#[derive(Debug, Default)]
struct BlockEvents {
    /// The second (on the runtime clock) of the last event, plus one; 0 before the first.
    last_second: std::sync::atomic::AtomicU64,
    /// The blocks by rule kind counted up to the last event.
    reported: [std::sync::atomic::AtomicU64; BlockTotals::RULES.len()],
}

/// [`ResourceNode::reports_exits`]: the chain has circuit breakers.
pub(crate) const REPORTS_BREAKERS: u8 = 1;
/// [`ResourceNode::reports_exits`]: the chain has an adaptive concurrency limit.
pub(crate) const REPORTS_ADAPTIVE: u8 = 2;
/// [`ResourceNode::reports_exits`]: the resource counts its calls inside (a concurrency rule
/// has been in force on it): an exit gives back its place, or leaves the count of calls that
/// were inside when counting started. Set before counting starts and never cleared, so an
/// exit that sees no bit has nothing to give back, but for one race, as before the bit (the
/// exit then read the counter's own flag at the same point): an exit that reads the byte just
/// before the bit is set, and lowers its shard's count of calls inside only after the count
/// started read it, is counted among the calls inside without ever leaving that count (the
/// limit then holds one place fewer, on the side of blocking).
pub(crate) const REPORTS_COUNTED: u8 = 4;

/// [`ResourceNode`]'s `checked`: the chain has checks, or the resource counts its calls inside.
const CHECKS_CHAIN: u8 = 1;
/// [`ResourceNode`]'s `checked`: a custom check slot is registered, so every entry runs the
/// chain. Set when the node is made, if a slot is registered by then, and by the registration
/// on every node made before it (`registry` installs how: see `slot::install_node_marker`);
/// never cleared. A node is made under the registry's writer lock; the registration says a slot
/// is registered before it takes that lock, takes the list of nodes under it, and marks them
/// before it returns. So a node that both miss cannot exist: each entry that starts after
/// `register_check_slot` returns sees the bit, as it saw the global flag this replaces.
pub(crate) const CHECKS_CUSTOM: u8 = 2;

impl NodeConfig {
    /// `gate`'s QPS gate, pinned for the node's life (kept if it is already), or `None` if
    /// [`PINNED_GATES`] others are or its ring holds more than [`PINNED_BUCKETS`].
    fn pin(&mut self, gate: &Arc<Gate>) -> Option<&QpsGate> {
        let at = match self.pinned.iter().position(|p| Arc::ptr_eq(p, gate)) {
            Some(at) => at,
            None if self.pinned.len() < PINNED_GATES
                && gate.as_qps()?.buckets() <= PINNED_BUCKETS =>
            {
                self.pinned.push(Arc::clone(gate));
                self.pinned.len() - 1
            }
            None => return None,
        };
        self.pinned.get(at)?.as_qps()
    }
}

impl crate::sync::Named for ResourceNode {
    fn name(&self) -> &str {
        self.name
    }
}

impl ResourceNode {
    /// A new node with no rules; it lives for the rest of the program.
    pub(crate) fn leak(name: &str) -> &'static ResourceNode {
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        Box::leak(Box::new(ResourceNode::new(name)))
    }

    pub(crate) fn new(name: &'static str) -> ResourceNode {
        ResourceNode {
            name,
            stats: NodeStats::new(),
            counter: ConcurrencyCounter::default(),
            // Set here and by the registration of a slot (see `CHECKS_CUSTOM`).
            checked: AtomicU8::new(if slot::has_custom() { CHECKS_CUSTOM } else { 0 }),
            reports_exits: AtomicU8::new(0),
            knows_param_names: AtomicBool::new(false),
            chain: Published::new(Arc::new(Chain::default())),
            lone_qps: AtomicPtr::new(std::ptr::null_mut()),
            config: Mutex::new(NodeConfig::default()),
            #[cfg(feature = "tracing")]
            block_events: BlockEvents::default(),
        }
    }

    /// The resource's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The resource's name, by reference (read where it is needed, not before).
    #[inline(always)]
    pub(crate) fn name_ref(&self) -> &&'static str {
        &self.name
    }

    pub(crate) fn stats(&'static self) -> &'static NodeStats {
        &self.stats
    }

    pub(crate) fn counter(&self) -> &ConcurrencyCounter {
        &self.counter
    }

    /// The node as the checks see it.
    #[inline(always)]
    pub(crate) fn target(&'static self) -> Target<'static> {
        Target {
            name: self.name,
            stats: &self.stats,
        }
    }

    /// Whether entries must run the chain.
    #[inline(always)]
    pub(crate) fn is_checked(&self) -> bool {
        self.checked.load(Ordering::Acquire) != 0
    }

    /// Whether custom check slots run on this node's entries (see [`CHECKS_CUSTOM`]).
    #[inline(always)]
    pub(crate) fn runs_custom(&self) -> bool {
        self.checked.load(Ordering::Acquire) & CHECKS_CUSTOM != 0
    }

    /// A custom check slot is registered: every entry from now on runs the chain.
    pub(crate) fn mark_custom(&self) {
        self.checked.fetch_or(CHECKS_CUSTOM, Ordering::Release);
    }

    /// What an exit reports to ([`REPORTS_BREAKERS`], [`REPORTS_ADAPTIVE`],
    /// [`REPORTS_COUNTED`]; 0: nothing).
    #[inline(always)]
    pub(crate) fn reports_exits(&self) -> u8 {
        self.reports_exits.load(Ordering::Acquire)
    }

    /// The lone exact QPS gate of the chain in force, if the node keeps it pinned; `None` for
    /// any other chain, and while a chain is being replaced (see `rebuild`). The entry's
    /// shortcut: read without the chain's hazard word.
    #[inline(always)]
    pub(crate) fn lone_qps(&self) -> Option<&QpsGate> {
        let gate = self.lone_qps.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is the QPS gate inside an `Arc<Gate>` that `pinned` holds
        // (stored by `rebuild` after pinning it, with `Release`); `pinned` only grows and is
        // dropped with the node, so the gate lives as long as `&self`. The gate is `Sync`.
        unsafe { gate.as_ref() }
    }

    /// Runs `f` on the chain in force (for the duration of one check or exit).
    #[inline(always)]
    pub(crate) fn with_chain<R>(&self, f: impl FnOnce(Held<'_, Chain>) -> R) -> R {
        self.chain.read(f)
    }

    /// [`with_chain`](Self::with_chain) for a caller that knows its thread slot.
    #[inline(always)]
    pub(crate) fn with_chain_in<R>(&self, slot: usize, f: impl FnOnce(Held<'_, Chain>) -> R) -> R {
        self.chain.read_in(slot, f)
    }

    /// [`with_chain_in`](Self::with_chain_in), calling `elsewhere` instead where this thread
    /// has no hazard word free (see [`Published::read_in_or`]).
    #[inline]
    pub(crate) fn with_chain_in_or<R>(
        &self,
        slot: usize,
        f: impl FnOnce(Held<'_, Chain>) -> R,
        elsewhere: impl FnOnce() -> R,
    ) -> R {
        self.chain.read_in_or(slot, f, elsewhere)
    }

    /// The chain in force, to hold across a wait.
    pub(crate) fn chain_owned(&self) -> Arc<Chain> {
        self.chain.load_full()
    }

    /// The resource's statistics over the second-level window, with its running totals.
    pub fn snapshot(&self) -> ResourceStats {
        let (circuit, limit, evictions, min_rtt) = self.with_chain(|c| {
            let circuit = c.circuit_breaker.iter().map(|b| b.state()).max();
            let evictions =
                (!c.hotspot.is_empty()).then(|| c.hotspot.iter().map(|g| g.live_evictions()).sum());
            let min_rtt = c.flow.adaptive.as_ref().and_then(|a| a.min_rtt());
            (
                circuit,
                c.flow.adaptive.as_ref().map(|a| a.limit()),
                evictions,
                min_rtt,
            )
        });
        let now = clock::now_nanos();
        let mut stats = ResourceStats::from_totals(self.stats.window(now), circuit)
            .with_running(self.stats.totals())
            .with_shadow(self.stats.shadow());
        stats.concurrency_limit = limit;
        if let Some((rtt, at)) = min_rtt {
            stats.adaptive_min_rtt = Some(Duration::from_nanos(rtt));
            stats.adaptive_min_rtt_age = Some(Duration::from_nanos(now.saturating_sub(at)));
        }
        stats.hotspot_live_evictions = evictions;
        stats
    }

    /// A call of `count` rejected at `now` by a rule of `kind`: counted, and with the `tracing`
    /// feature reported in at most one event a second.
    #[inline]
    pub(crate) fn on_block(&self, now: u64, count: u32, block: &BlockError) {
        let rule = BlockTotals::index_of_block(block);
        self.stats.on_block(now, count, rule);
        #[cfg(feature = "tracing")]
        self.block_event(now, rule);
    }

    /// Emits the block event if none was emitted in the second of `now`: one caller a second
    /// wins the compare-and-swap and reports the blocks since the last event, by rule kind.
    #[cfg(feature = "tracing")]
    fn block_event(&self, now: u64, rule: usize) {
        use std::sync::atomic::Ordering::*;
        let Some(level) = crate::events::block_level() else {
            return;
        };
        let second = now / 1_000_000_000 + 1;
        let events = &self.block_events;
        let last = events.last_second.load(Relaxed);
        if last >= second
            || events
                .last_second
                .compare_exchange(last, second, AcqRel, Relaxed)
                .is_err()
        {
            return;
        }
        let blocked = self.stats.blocks_by_rule();
        let since: [u64; BlockTotals::RULES.len()] = std::array::from_fn(|i| {
            blocked[i].saturating_sub(events.reported[i].fetch_max(blocked[i], AcqRel))
        });
        let rule = BlockTotals::RULES.get(rule).copied().unwrap_or("custom");
        // Every kind by name: a kind missing here leaves its variable unused (a warning).
        let BlockTotals {
            flow,
            concurrency,
            circuit_breaker,
            hotspot,
            system,
            authority,
            outlier,
            custom,
            cluster,
        } = BlockTotals::from_counts(since);
        crate::events::event_at!(
            level,
            target: "sentinel",
            resource = self.name,
            blocked = since.iter().sum::<u64>(),
            rule,
            flow,
            concurrency,
            circuit_breaker,
            hotspot,
            system,
            authority,
            outlier,
            custom,
            cluster,
            "calls blocked since the last report"
        );
    }

    /// What each of its hotspot rules blocked most in the last minute as of `now` (clock
    /// nanoseconds), in rule order.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn hotspot_blocked(&self, now: u64) -> Vec<crate::kinds::hotspot::BlockedValues> {
        self.with_chain(|c| c.hotspot.iter().map(|g| g.blocked_top(now)).collect())
    }

    /// Values its hotspot rules forgot while still being limited, because their tables were full
    /// of such values (a table full of idle values forgets those first, losing nothing).
    pub fn hotspot_live_evictions(&self) -> u64 {
        self.with_chain(|c| c.hotspot.iter().map(|g| g.live_evictions()).sum())
    }

    /// The state of each circuit breaker in force, in rule order.
    pub fn circuit_states(&self) -> Vec<CircuitState> {
        self.with_chain(|c| c.circuit_breaker.iter().map(|b| b.state()).collect())
    }

    /// The flow rules written at the resource's definition.
    pub fn default_flow_rules(&self) -> Vec<FlowRule> {
        self.config().defaults.flow.clone()
    }

    /// The circuit-breaker rules written at the resource's definition.
    pub fn default_circuit_breaker_rules(&self) -> Vec<CircuitBreakerRule> {
        self.config().defaults.circuit_breaker.clone()
    }

    /// Whether the node has learned its parameters' names.
    #[inline]
    pub(crate) fn knows_param_names(&self) -> bool {
        self.knows_param_names.load(Ordering::Acquire)
    }

    /// Learns the parameters' names (by index; `None`: unnamed): the first supplier's names,
    /// and from later ones only names for indices still unnamed (several definitions may share
    /// a resource). Returns whether anything was learned (then the loaded rules must be applied
    /// again, for named rules to resolve).
    pub(crate) fn learn_param_names<S: AsRef<str>>(&self, names: &[Option<S>]) -> bool {
        let mut config = self.config();
        let mut changed = config.param_names.is_none();
        let known = config.param_names.get_or_insert_with(Vec::new);
        for (i, name) in names.iter().enumerate() {
            let Some(name) = name else { continue };
            if known.len() <= i {
                known.resize(i + 1, None);
            }
            if known[i].is_none() {
                known[i] = Some(name.as_ref().to_owned());
                changed = true;
            }
        }
        self.knows_param_names.store(true, Ordering::Release);
        changed
    }

    /// The parameters' names, once known.
    pub(crate) fn param_names(&self) -> Option<Vec<Option<String>>> {
        self.config().param_names.clone()
    }

    fn config(&self) -> MutexGuard<'_, NodeConfig> {
        self.config.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds one definition's rules (a function guarded by the attribute) to the defaults:
    /// several functions may share a resource, and then every definition's rules apply to every
    /// call of it (a rule two definitions both write is kept once). Returns whether the defaults
    /// changed.
    pub(crate) fn adopt_defaults(&self, defaults: &Defaults) -> bool {
        self.config().defaults.adopt(defaults)
    }

    /// Puts a new chain in force: `build` makes it from the node's definition defaults, its
    /// parameters' names (if known) and the chain in force, which it may take parts of (so no
    /// count or state is lost). Builds of one node are serialized; the replaced chain is freed
    /// once no call reads it. A new concurrency limit counts the calls already inside.
    pub(crate) fn rebuild(
        &self,
        build: impl FnOnce(&Defaults, Option<&[Option<String>]>, &Chain, &NodeStats) -> Chain,
    ) {
        let mut config = self.config();
        let old = self.chain_owned();
        let chain = build(
            &config.defaults,
            config.param_names.as_deref(),
            &old,
            &self.stats,
        );
        if chain.counts_inside() {
            self.reports_exits
                .fetch_or(REPORTS_COUNTED, Ordering::SeqCst);
            self.counter.start(|| self.stats.inflight_total());
        }
        let checked = !chain.is_empty() || self.counter.is_tracking();
        let mut reports = 0;
        // The shadow part's breakers and adaptive limit learn the calls' outcomes too.
        let shadow = chain.shadow.as_ref().map(|s| &s.chain);
        if std::iter::once(&chain)
            .chain(shadow)
            .any(|part| !part.circuit_breaker.is_empty())
        {
            reports |= REPORTS_BREAKERS;
        }
        if std::iter::once(&chain)
            .chain(shadow)
            .any(|part| part.flow.adaptive.is_some())
        {
            reports |= REPORTS_ADAPTIVE;
        }
        if self.counter.is_tracking() {
            reports |= REPORTS_COUNTED;
        }
        let lone = chain
            .lone_qps_gate()
            .and_then(|gate| config.pin(gate))
            .map_or(std::ptr::null_mut(), |gate| {
                std::ptr::from_ref(gate).cast_mut()
            });
        // What the new chain needs is set before it is in force, what it no longer needs is
        // cleared after: a thread that has read the new chain then finds its entries checked
        // and its exits reported (an entry of the old chain that finds them too runs the chain
        // it then reads, as any entry straddling a reload does).
        self.reports_exits.fetch_or(reports, Ordering::Release);
        if checked {
            self.checked.fetch_or(CHECKS_CHAIN, Ordering::Release);
        }
        // No gate while the chain is replaced: a thread that has read the new chain never reads
        // the old gate after it (the replacement frees the old chain only after a barrier; the
        // new gate comes after the new chain). An entry that read the old gate before this
        // store read what a read of the chain then gave.
        self.lone_qps.store(std::ptr::null_mut(), Ordering::Release);
        self.chain.replace(Arc::new(chain));
        self.lone_qps.store(lone, Ordering::Release);
        self.reports_exits.store(reports, Ordering::Release);
        // Only this bit: the registration of a slot sets the other, also during a rebuild.
        if !checked {
            self.checked.fetch_and(!CHECKS_CHAIN, Ordering::Release);
        }
        drop(config);
    }
}
