//! [`Entry`], the RAII guard of an admitted call, and [`entry`] / [`EntryBuilder`] to get one:
//! how a call asks (`builder`), enters (`enter`, with the lone-gate shortcuts in `lone`), is
//! counted (`record`), may wait for its turn (`reserve`), is guarded (`guard`) and exits
//! (`exit`).

mod builder;
mod enter;
mod exit;
mod guard;
mod lone;
mod record;
mod reserve;

pub use builder::{entry, EntryBuilder};
#[cfg(feature = "tower")]
pub(crate) use enter::reserve_inbound;
pub(crate) use enter::{enter, enter_in, reserve, reserve_with};
pub use guard::Entry;
pub(crate) use reserve::wait_turn;
pub use reserve::Reservation;
