//! Methods with every receiver, associated functions, `Self::` fallbacks and trait impls.
use std::sync::Arc;

use sentinel_runtime::{sentinel, BlockError};

struct Service {
    name: String,
}

impl Service {
    #[sentinel(resource = "pass-new", fallback = Self::new_busy)]
    fn new(name: &str) -> Self {
        Service { name: name.to_owned() }
    }

    fn new_busy(_: &str, _: BlockError) -> Self {
        Service { name: String::new() }
    }

    #[sentinel(resource = "pass-ref", qps = 10, fallback = Self::ref_busy)]
    pub fn name(&self) -> &str {
        &self.name
    }

    fn ref_busy(&self, _: BlockError) -> &str {
        "busy"
    }

    #[sentinel(resource = "pass-mut")]
    fn rename(&mut self, to: String) -> Result<&mut String, BlockError> {
        self.name = to;
        Ok(&mut self.name)
    }

    #[sentinel(resource = "pass-owned", fallback = Self::owned_busy)]
    fn into_name(self) -> String {
        self.name
    }

    fn owned_busy(self, _: BlockError) -> String {
        String::new()
    }

    #[sentinel(resource = "pass-arc", fallback = Self::arc_busy)]
    fn shared(self: Arc<Self>) -> usize {
        self.name.len()
    }

    fn arc_busy(self: Arc<Self>, _: BlockError) -> usize {
        0
    }
}

trait Named {
    fn label(&self) -> String;
}

impl Named for Service {
    #[sentinel(resource = "pass-trait", fallback = label_busy)]
    fn label(&self) -> String {
        format!("<{}>", self.name)
    }
}

fn label_busy(_: &Service, _: BlockError) -> String {
    String::new()
}

struct Wrapper<T>(T);

impl<T: Clone> Wrapper<T> {
    #[sentinel(resource = "pass-generic-impl", fallback = Self::get_busy)]
    fn get(&self) -> Option<T> {
        Some(self.0.clone())
    }

    fn get_busy(&self, _: BlockError) -> Option<T> {
        None
    }
}

pub fn main() {
    let mut s = Service::new("a");
    assert_eq!(s.name(), "a");
    s.rename("b".to_owned()).unwrap().push('c');
    assert_eq!(s.label(), "<bc>");
    assert_eq!(Arc::new(Service::new("xyz")).shared(), 3);
    assert_eq!(s.into_name(), "bc");
    assert_eq!(Wrapper(4).get(), Some(4));
}
