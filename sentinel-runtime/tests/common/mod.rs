//! A `tracing` subscriber that records the events of target `sentinel` as text, shared by the
//! test files that check the library's events.
#![allow(dead_code)] // each test file uses part of it

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// One event: its message, fields and level (`level`), as text.
pub type Recorded = BTreeMap<String, String>;

/// Records every event of target `sentinel` it is given.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut Recorded);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "sentinel"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Recorded::new();
        event.record(&mut Fields(&mut fields));
        fields.insert("level".to_owned(), event.metadata().level().to_string());
        self.events().push(fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Recorder {
    fn events(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The events whose message starts with `message`.
    pub fn with(&self, message: &str) -> Vec<Recorded> {
        self.events()
            .iter()
            .filter(|e| e.get("message").is_some_and(|m| m.starts_with(message)))
            .cloned()
            .collect()
    }

    /// Forgets the events recorded so far.
    pub fn clear(&self) {
        self.events().clear();
    }
}
