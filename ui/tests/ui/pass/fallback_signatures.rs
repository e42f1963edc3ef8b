//! Fallbacks whose signature is checked as a function pointer, and those called directly where
//! no pointer type can be written: every one of them compiles and is called with the
//! function's arguments.
use std::pin::Pin;
use std::rc::Rc;

use sentinel_runtime::{sentinel, BlockError};

struct Store {
    items: Vec<u8>,
}

impl Store {
    /// A named receiver lifetime.
    #[sentinel(qps = 5, fallback = Self::slice_busy)]
    fn slice<'s>(&'s self, key: &str) -> &'s [u8] {
        let _ = key;
        &self.items
    }

    fn slice_busy<'s>(&'s self, _: &str, _: BlockError) -> &'s [u8] {
        &[]
    }

    /// An elided output lifetime, the receiver's, beside another borrowed argument.
    #[sentinel(qps = 5, fallback = Self::items_busy)]
    fn items_mut(&mut self, key: &str) -> &mut Vec<u8> {
        let _ = key;
        &mut self.items
    }

    fn items_busy<'s>(&'s mut self, _: &str, _: BlockError) -> &'s mut Vec<u8> {
        &mut self.items
    }

    /// A trait object borrowing from the receiver (no pointer type: called directly).
    #[sentinel(qps = 5, fallback = Self::iter_busy)]
    fn iter(&self, key: &str) -> Box<dyn Iterator<Item = &u8> + '_> {
        let _ = key;
        Box::new(self.items.iter())
    }

    fn iter_busy<'s>(&'s self, _: &str, _: BlockError) -> Box<dyn Iterator<Item = &'s u8> + 's> {
        Box::new(self.items.iter())
    }

    /// A hidden lifetime beside a second borrowed argument (no pointer type: called directly).
    #[allow(mismatched_lifetime_syntaxes)]
    #[sentinel(qps = 5, fallback = Self::each_busy)]
    fn each(&mut self, key: &str) -> std::slice::IterMut<u8> {
        let _ = key;
        self.items.iter_mut()
    }

    fn each_busy<'s>(&'s mut self, _: &str, _: BlockError) -> std::slice::IterMut<'s, u8> {
        self.items.iter_mut()
    }

    #[sentinel(qps = 5, fallback = Self::boxed_busy)]
    fn boxed(self: Box<Self>) -> usize {
        self.items.len()
    }

    fn boxed_busy(self: Box<Self>, _: BlockError) -> usize {
        self.items.len()
    }

    #[sentinel(qps = 5, fallback = Self::pinned_busy)]
    fn pinned(self: Pin<&mut Self>) -> usize {
        self.items.len()
    }

    fn pinned_busy(self: Pin<&mut Self>, _: BlockError) -> usize {
        self.items.len()
    }

    #[sentinel(qps = 5, fallback = Self::shared_busy)]
    fn shared(self: Rc<Self>, extra: u8) -> Self {
        Store {
            items: vec![extra; self.items.len()],
        }
    }

    fn shared_busy(self: Rc<Self>, _: u8, _: BlockError) -> Self {
        Store { items: Vec::new() }
    }
}

trait Named {
    #[sentinel(qps = 5, fallback = Self::name_busy)]
    fn name(&self, prefix: &str) -> String {
        format!("{prefix}-named")
    }

    fn name_busy(&self, prefix: &str, _: BlockError) -> String {
        prefix.to_owned()
    }
}

impl Named for Store {}

struct View<'a, T>(&'a T);

impl<'a, T: Clone> View<'a, T> {
    /// An impl's lifetime and type parameter.
    #[sentinel(qps = 5, fallback = Self::get_busy)]
    fn get(&self) -> &'a T {
        self.0
    }

    fn get_busy(&self, _: BlockError) -> &'a T {
        self.0
    }
}

/// A generic fallback, instantiated by the pointer type.
#[sentinel(qps = 5, fallback = len_busy)]
fn len<const N: usize>(xs: [u8; N]) -> usize {
    xs.len()
}

fn len_busy<const N: usize>(_: [u8; N], _: BlockError) -> usize {
    0
}

#[sentinel(qps = 5, fallback = first_busy)]
fn first<T: Clone>(xs: &[T]) -> Option<T> {
    xs.first().cloned()
}

fn first_busy<T>(_: &[T], _: BlockError) -> Option<T> {
    None
}

#[derive(Debug)]
enum Reply {
    Done(u8),
    Busy(u8, BlockError),
}

/// An enum variant is a function too.
#[sentinel(qps = 5, fallback = Reply::Busy)]
fn reply(n: u8) -> Reply {
    Reply::Done(n)
}

pub fn main() {
    let mut store = Store { items: vec![1, 2] };
    assert_eq!(store.slice("k"), &[1, 2]);
    store.items_mut("k").push(3);
    assert_eq!(store.iter("k").count(), 3);
    assert_eq!(store.each("k").count(), 3);
    assert_eq!(Pin::new(&mut store).pinned(), 3);
    assert_eq!(store.name("a"), "a-named");
    let store = Rc::new(store).shared(7);
    assert_eq!(Box::new(store).boxed(), 3);
    let x = 4;
    assert_eq!(*View(&x).get(), 4);
    assert_eq!(len([1, 2, 3]), 3);
    assert_eq!(first(&[5, 6]), Some(5));
    match reply(1) {
        Reply::Done(n) => assert_eq!(n, 1),
        Reply::Busy(n, e) => panic!("{n} blocked: {e}"),
    }
}
