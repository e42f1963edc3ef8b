//! [`Reservation`]: a call admitted by every check, perhaps waiting for its throttling turn.

use std::sync::Arc;

use super::guard::{Ending, Entry};
use super::record::count_pass;
use crate::clock;
use crate::kinds::{Admission, Chain, ShadowPass};
use crate::node::ResourceNode;
use crate::slot::SlotList;
use crate::sync::thread_slot;

/// Waits, without blocking the executor's thread, for a reserved call's throttling turn (at once
/// if it has none). Under a [`MockClock`](crate::clock::MockClock) the mock clock then moves to
/// the turn.
pub(crate) async fn wait_turn(reservation: &Reservation) {
    let wait = reservation.wait_nanos();
    if wait > 0 {
        crate::timer::sleep(std::time::Duration::from_nanos(wait)).await;
        clock::catch_up_mock(reservation.turn());
    }
}

/// Sleeps this thread until a throttled call's turn, then enters it.
#[cold]
#[inline(never)]
pub(super) fn wait_for_turn(waiting: Waiting) -> Entry {
    clock::sleep_until(waiting.admission.turn);
    Reservation(Inner::Waiting(Box::new(waiting))).into_entry()
}

/// A call admitted by every check, not yet entered: it may have to wait for its throttling turn
/// first. Dropped without [`into_entry`](Reservation::into_entry) (an async caller's future
/// dropped while waiting), it gives back everything the checks reserved.
#[derive(Debug)]
#[must_use = "a Reservation is given back when dropped"]
pub struct Reservation(pub(super) Inner);

#[derive(Debug)]
pub(super) enum Inner {
    /// No wait: the entry is made.
    Ready(Entry),
    /// A throttling turn to wait for (rare: boxed, so that the common reservation moves as the
    /// small entry it holds).
    Waiting(Box<Waiting>),
}

#[derive(Debug)]
pub(super) struct Waiting {
    pub(super) node: &'static ResourceNode,
    /// The checks that admitted the call, held so that a dropped wait gives back to them.
    pub(super) chain: Arc<Chain>,
    pub(super) count: u32,
    pub(super) admission: Admission,
    /// The custom slots that admitted the call, asked to cancel it if the wait is dropped.
    pub(super) slots: Option<SlotList>,
    /// How its entry's exit learns of a panic (a guarded sync call or not, held by a future or
    /// not).
    pub(super) ending: Ending,
    /// The call entered: nothing to give back.
    pub(super) entered: bool,
    /// What the chain's shadow part decided (and holds) for the call.
    pub(super) shadow: ShadowPass,
}

impl Waiting {
    pub(super) fn new(
        node: &'static ResourceNode,
        chain: Arc<Chain>,
        count: u32,
        (admission, slots): (Admission, Option<SlotList>),
        ending: Ending,
    ) -> Waiting {
        Waiting {
            node,
            chain,
            count,
            admission,
            slots,
            ending,
            entered: false,
            shadow: ShadowPass::default(),
        }
    }

    /// The waiting call with what the chain's shadow part decided for it.
    pub(super) fn with_shadow(mut self, shadow: ShadowPass) -> Waiting {
        self.shadow = shadow;
        self
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.entered {
            return;
        }
        crate::kinds::cancel(
            self.node.target(),
            &self.chain,
            self.node.counter(),
            self.count,
            std::mem::take(&mut self.admission),
            self.slots.take(),
            std::mem::take(&mut self.shadow),
        );
    }
}

impl Reservation {
    /// How long from now the caller must wait for its throttling turn, in nanoseconds (0: pass
    /// now).
    #[inline]
    pub fn wait_nanos(&self) -> u64 {
        match self.turn() {
            0 => 0,
            turn => turn.saturating_sub(clock::precise_nanos()),
        }
    }

    /// When the caller's turn comes, on the runtime's precise clock (0: at once).
    #[inline]
    pub fn turn(&self) -> u64 {
        match &self.0 {
            Inner::Ready(_) => 0,
            Inner::Waiting(w) => w.admission.turn,
        }
    }

    /// The call passes now: counted as a pass, and guarded by the returned [`Entry`].
    #[inline(always)]
    pub fn into_entry(self) -> Entry {
        match self.0 {
            Inner::Ready(entry) => entry,
            // Out of line: the common reservation (no wait) is only its entry.
            Inner::Waiting(mut w) => enter_after_wait(&mut w),
        }
    }
}

/// The entry of a reservation that waited for its throttling turn: its pass counted now (the
/// wait, dropped after, then gives nothing back).
#[cold]
#[inline(never)]
pub(super) fn enter_after_wait(w: &mut Waiting) -> Entry {
    w.entered = true;
    let now = clock::now_nanos().max(w.admission.at);
    count_pass(
        w.node,
        thread_slot(),
        now,
        w.count,
        w.admission.inbound != 0,
    );
    let mut admission = std::mem::take(&mut w.admission);
    admission.at = now;
    let mut entry = Entry::new(w.node, w.count, &mut admission, w.ending, || {
        Some(Arc::clone(&w.chain))
    });
    let shadow = std::mem::take(&mut w.shadow);
    if !shadow.is_empty() {
        entry.hold_shadow(shadow, || Arc::clone(&w.chain));
    }
    entry
}
