//! [`Tickets`]: what each kind's check leaves with an admitted call until its exit (its
//! [`Kind::Ticket`]), one field per kind from the table of kinds, and the exit hook that hands
//! each set ticket back to its kind ([`Kind::on_exit`]).

use super::call::Exit;
use super::chain::Chain;
use super::kind::Kind;
use super::table::kinds_table;

/// Defines [`Tickets`] from the table of kinds.
macro_rules! define_tickets {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// Each kind's ticket for one call (`()`, no space, for the kinds that keep none).
        #[derive(Clone, Copy, Debug, Default)]
        pub(crate) struct Tickets {
            $( pub(crate) $name: <$kind as Kind>::Ticket, )*
        }

        impl Tickets {
            /// Whether any kind left a ticket (not its default): the entry then holds them to
            /// its exit, which hands them to [`exit`](Self::exit). A unit ticket is never set,
            /// so this is a test of the kinds that keep one.
            #[inline(always)]
            pub(crate) fn any(&self) -> bool {
                false $( || self.$name != <<$kind as Kind>::Ticket>::default() )*
            }

            /// The exit of the call: each kind whose ticket is set learns it, with `chain`'s
            /// checks (the part, enforced or shadow, that admitted the call).
            #[cold]
            pub(crate) fn exit(&self, chain: &Chain, exit: &Exit) {
                $(
                    if self.$name != <<$kind as Kind>::Ticket>::default() {
                        <$kind as Kind>::on_exit(&chain.$name, self.$name, exit);
                    }
                )*
            }
        }
    };
}

kinds_table!(define_tickets);
