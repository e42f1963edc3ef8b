use sentinel_runtime::{sentinel, BlockError};

struct Greeter;

impl Greeter {
    #[sentinel(qps = 1, fallback = Self::busy)]
    fn greet(&self, name: &str) -> String {
        format!("hello {name}")
    }

    // Forgot `&self`.
    fn busy(name: &str, _err: BlockError) -> String {
        format!("later {name}")
    }
}

fn main() {}
