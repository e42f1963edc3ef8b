//! A service struct with guarded methods, and a guarded generic function:
//! `cargo run --example methods`.

use std::collections::HashMap;

use sentinel_runtime::rules::{self, FlowRule};
use sentinel_runtime::{metrics, sentinel, BlockError};

enum ServiceError {
    Busy(BlockError),
    NotFound(String),
}

impl From<BlockError> for ServiceError {
    fn from(e: BlockError) -> Self {
        ServiceError::Busy(e)
    }
}

struct UserService {
    users: HashMap<u32, String>,
}

impl UserService {
    /// Returns a `Result`: a blocked call comes back as `ServiceError::Busy`.
    #[sentinel(resource = "users.get", qps = 3)]
    fn get(&self, id: u32) -> Result<&str, ServiceError> {
        self.users
            .get(&id)
            .map(String::as_str)
            .ok_or_else(|| ServiceError::NotFound(format!("no user {id}")))
    }

    /// A `&mut self` method with a `Self::` fallback.
    #[sentinel(resource = "users.rename", qps = 1, fallback = Self::rename_later)]
    fn rename(&mut self, id: u32, name: &str) -> bool {
        self.users.insert(id, name.to_owned()).is_some()
    }

    fn rename_later(&mut self, id: u32, _name: &str, err: BlockError) -> bool {
        println!("  rename of {id} deferred: {err}");
        false
    }
}

/// A generic function: one resource for every instantiation.
#[sentinel(resource = "largest", qps = 2, fallback = largest_busy)]
fn largest<T: PartialOrd + Copy>(items: &[T]) -> Option<T> {
    items.iter().copied().fold(None, |m, x| {
        if m.is_some_and(|m| m >= x) {
            m
        } else {
            Some(x)
        }
    })
}

fn largest_busy<T: PartialOrd + Copy>(_: &[T], _: BlockError) -> Option<T> {
    None
}

fn main() {
    let mut service = UserService {
        users: HashMap::from([(1, "ada".to_owned()), (2, "bob".to_owned())]),
    };
    println!("get (qps = 3):");
    for id in [1, 2, 3, 1] {
        match service.get(id) {
            Ok(name) => println!("  user {id}: {name}"),
            Err(ServiceError::NotFound(why)) => {
                println!("  user {id}: {why} (counted as an error)")
            }
            Err(ServiceError::Busy(e)) => println!("  user {id}: {e}"),
        }
    }
    println!("rename (qps = 1, fallback = Self::rename_later):");
    println!("  renamed: {}", service.rename(1, "ada l."));
    println!("  renamed: {}", service.rename(2, "robert"));

    println!("largest (generic, qps = 2):");
    println!("  {:?}", largest(&[3, 9, 4]));
    println!("  {:?}", largest(&[1.5, 0.5]));
    println!(
        "  {:?} (blocked: the fallback answered)",
        largest(&['a', 'z'])
    );

    println!("raising users.get to qps = 100 at run time:");
    rules::load_flow_rules(vec![FlowRule::qps("users.get", 100.0)]).expect("a valid rule");
    println!("  user 2: {:?}", service.get(2).map_err(|_| "busy"));

    for (name, stats) in metrics::all() {
        println!(
            "{name:>14}: pass {} block {} error {}",
            stats.pass_qps, stats.block_qps, stats.error_qps
        );
    }
}
