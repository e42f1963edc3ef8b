//! [`entry`] and [`EntryBuilder`]: how a call asks to enter a resource.

use std::hash::Hash;

use super::enter::{enter_in, reserve_with};
use super::guard::Entry;
use super::reserve::wait_turn;
use crate::error::BlockError;
use crate::node::ResourceNode;
use crate::param::{ParamBuf, Params};
use crate::sync::thread_slot;

/// Enters `resource` for one pass: `Ok(Entry)` if every rule admits the call, else the
/// [`BlockError`] of the rule that blocked it.
///
/// A resource first seen here gets a node with no rules (statistics only) unless rules were
/// loaded for it. Hold the [`Entry`] while the guarded work runs; dropping it records the exit.
///
/// How many resources get a node is bounded
/// ([`registry::set_max_resources`](crate::registry::set_max_resources), 6000 by default):
/// beyond that, a new name's entries pass unchecked and are counted in
/// [`metrics::overflow`](crate::metrics::overflow), as in Sentinel.
///
/// ```
/// let entry = sentinel_runtime::entry("doc-entry")?;
/// // ... the guarded work ...
/// drop(entry);
/// # Ok::<(), sentinel_runtime::BlockError>(())
/// ```
#[inline]
pub fn entry(resource: &str) -> Result<Entry, BlockError> {
    // Not through `EntryBuilder`: with no parameters known at compile time, the checks that
    // only parameters, origins or inbound entries need are left out of this path.
    let slot = thread_slot();
    let node = crate::registry::node_by_name_cached(resource);
    enter_in(slot, node, 1, &Params::NONE)
}

/// Options for entering a resource: `EntryBuilder::new("r").acquire(5).enter()`.
#[derive(Clone, Debug)]
#[must_use = "an EntryBuilder does nothing until `enter` is called"]
pub struct EntryBuilder<'a> {
    resource: &'a str,
    count: u32,
    params: ParamBuf,
    /// The parameters' names, by index, if given.
    param_names: Option<&'a [&'a str]>,
}

impl<'a> EntryBuilder<'a> {
    /// Entering `resource` for one pass.
    #[inline]
    pub fn new(resource: &'a str) -> EntryBuilder<'a> {
        EntryBuilder {
            resource,
            count: 1,
            params: ParamBuf::NONE,
            param_names: None,
        }
    }

    /// Adds a parameter value for hotspot rules ([`HotspotRule`](crate::rules::HotspotRule)):
    /// parameters are indexed in call order (the first is index 0). The value is hashed with the
    /// process's keyed 64-bit hasher; only the hash is kept. Up to 8 parameters (more are
    /// ignored).
    ///
    /// ```
    /// use sentinel_runtime::{rules::{self, HotspotRule}, BlockKind, EntryBuilder};
    ///
    /// rules::load_hotspot_rules(vec![HotspotRule::qps("doc-per-user", 0, 2.0)])?;
    /// let call = |user: &str| EntryBuilder::new("doc-per-user").param(user).enter();
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    /// assert!(call("alice").is_ok() && call("alice").is_ok());
    /// assert_eq!(call("alice").unwrap_err().kind(), BlockKind::HotParam); // 2 a second each
    /// assert!(call("bob").is_ok()); // bob has his own 2
    /// # rules::load_hotspot_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn param(mut self, value: &(impl Hash + ?Sized)) -> EntryBuilder<'a> {
        self.params.push(crate::param::hash(value));
        self
    }

    /// Names the parameters, by index (the first name is parameter 0), so that hotspot rules can
    /// name them ([`HotspotRule::qps_by_name`](crate::rules::HotspotRule::qps_by_name),
    /// `param:` in rule files) instead of counting positions. A resource learns its names from
    /// its first entry that gives them (later entries' names are not read): give the same names
    /// on every entry of a resource.
    ///
    /// ```
    /// use sentinel_runtime::{rules::{self, HotspotRule}, BlockKind, EntryBuilder};
    ///
    /// rules::load_hotspot_rules(vec![HotspotRule::qps_by_name("doc-named", "user", 1.0)])?;
    /// let call = |region: &str, user: &str| {
    ///     EntryBuilder::new("doc-named").param_names(&["region", "user"]).param(region).param(user).enter()
    /// };
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    /// assert!(call("eu", "alice").is_ok());
    /// assert_eq!(call("us", "alice").unwrap_err().kind(), BlockKind::HotParam); // per user
    /// assert!(call("eu", "bob").is_ok());
    /// # rules::load_hotspot_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn param_names(mut self, names: &'a [&'a str]) -> EntryBuilder<'a> {
        self.param_names = Some(names);
        self
    }

    /// Names the caller (an upstream application, a tenant) for authority rules
    /// ([`AuthorityRule`](crate::rules::AuthorityRule)). Without it, the entry takes the origin
    /// of the scope it runs in ([`context`](crate::context)), if any.
    pub fn origin(mut self, origin: &str) -> EntryBuilder<'a> {
        self.params.set_origin(origin);
        self
    }

    /// Names the **endpoint** the call goes to: the instance of a dependency (a host and port,
    /// `10.0.0.2:80`) for outlier rules ([`OutlierRule`](crate::rules::OutlierRule)), which
    /// count errors and eject per endpoint. A call without an endpoint is not subject to them.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, OutlierRule};
    /// use sentinel_runtime::{outlier, BlockKind, EntryBuilder};
    ///
    /// rules::load_outlier_rules(vec![OutlierRule::consecutive_errors("doc-endpoint", 1)])?;
    /// # let _clock = sentinel_runtime::clock::MockClock::install();
    /// let call = |endpoint: &str| EntryBuilder::new("doc-endpoint").endpoint(endpoint).enter();
    /// call("inv-a").unwrap().set_error();
    /// assert_eq!(call("inv-a").unwrap_err().kind(), BlockKind::Outlier);
    /// assert_eq!(outlier::healthy("doc-endpoint", &["inv-a", "inv-b"]), ["inv-b"]);
    /// assert!(EntryBuilder::new("doc-endpoint").enter().is_ok(), "no endpoint: not checked");
    /// # rules::load_outlier_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    pub fn endpoint(mut self, endpoint: &str) -> EntryBuilder<'a> {
        self.params.set_endpoint(endpoint);
        self
    }

    /// Marks the entry as **inbound** traffic (a request this process serves, not a call it
    /// makes): system rules ([`SystemRule`](crate::rules::SystemRule)) check inbound entries
    /// only, and the process's inbound statistics count them
    /// ([`metrics::inbound`](crate::metrics::inbound)). The tower layer's entries are inbound;
    /// the attribute takes `inbound = true`.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, SystemRule};
    /// use sentinel_runtime::{BlockKind, EntryBuilder};
    ///
    /// rules::load_system_rules(vec![SystemRule::new().concurrency(1)])?;
    /// let first = EntryBuilder::new("doc-inbound").inbound().enter().unwrap();
    /// let second = EntryBuilder::new("doc-inbound").inbound().enter();
    /// assert_eq!(second.unwrap_err().kind(), BlockKind::System);
    /// assert!(EntryBuilder::new("doc-outbound").enter().is_ok(), "not inbound: not limited");
    /// drop(first);
    /// # rules::load_system_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    #[inline]
    pub fn inbound(mut self) -> EntryBuilder<'a> {
        self.params.set_inbound();
        self
    }

    /// Asks for `count` passes at once (a batch); 0 is taken as 1. A batch larger than a QPS
    /// rule's threshold is blocked at once. Under a concurrency rule
    /// ([`FlowRule::concurrency`](crate::rules::FlowRule::concurrency)) the batch holds `count`
    /// places while it is inside, and is blocked if the places held plus `count` exceed the
    /// limit (as Sentinel's `DefaultController` decides); its exit gives them all back.
    #[inline]
    pub fn acquire(mut self, count: u32) -> EntryBuilder<'a> {
        self.count = count.max(1);
        self
    }

    /// Runs the slot chain: `Ok(Entry)` if admitted. On a resource with a throttling rule, a
    /// call whose turn is not yet due **sleeps this thread** until it is: in async code use
    /// [`enter_async`](Self::enter_async), which awaits its turn without blocking the executor.
    #[inline]
    pub fn enter(self) -> Result<Entry, BlockError> {
        let slot = thread_slot();
        let node = crate::registry::node_by_name_cached(self.resource);
        self.teach_names(node);
        enter_in(slot, node, self.count, &self.params.view())
    }

    /// Teaches `node` the parameters' names, if given and it does not know them yet.
    #[inline]
    fn teach_names(&self, node: &ResourceNode) {
        if let Some(names) = self.param_names
            && !node.knows_param_names()
        {
            let names: Vec<Option<&str>> = names.iter().copied().map(Some).collect();
            crate::registry::learn_param_names(node, &names);
        }
    }

    /// Runs the slot chain like [`enter`](Self::enter), but a call whose throttling turn is not
    /// yet due **awaits** it on a timer (a tokio timer with the default `tokio` feature) instead
    /// of sleeping the thread, so an executor's worker stays free for other tasks meanwhile.
    ///
    /// The future is `Send` and borrows nothing (the resource is resolved when this is called).
    /// Dropping it while it waits gives back everything the checks reserved for the call.
    ///
    /// ```
    /// # async fn handler() -> Result<(), sentinel_runtime::BlockError> {
    /// use sentinel_runtime::EntryBuilder;
    /// let entry = EntryBuilder::new("doc-async").enter_async().await?;
    /// // ... the guarded work ...
    /// drop(entry);
    /// # Ok(())
    /// # }
    /// ```
    pub fn enter_async(
        self,
    ) -> impl std::future::Future<Output = Result<Entry, BlockError>> + Send + 'static + use<> {
        let node = crate::registry::node_by_name(self.resource);
        self.teach_names(node);
        let (count, params) = (self.count, self.params);
        async move {
            let reservation = reserve_with(node, count, false, &params.view())?;
            wait_turn(&reservation).await;
            Ok(reservation.into_entry())
        }
    }
}
