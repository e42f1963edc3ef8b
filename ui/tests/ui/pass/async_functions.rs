//! `async fn` with async and plain fallbacks, async methods, and a `Send` future.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(resource = "pass-async", concurrency = 2, fallback = fetch_busy)]
async fn fetch(id: u32) -> String {
    tokio::task::yield_now().await;
    format!("item {id}")
}

async fn fetch_busy(id: u32, _: BlockError) -> String {
    format!("busy {id}")
}

#[sentinel(resource = "pass-async-plain", qps = 5, fallback = plain_busy)]
pub async fn plain(id: u32) -> u32 {
    id
}

fn plain_busy(_: u32, _: BlockError) -> u32 {
    0
}

#[sentinel(resource = "pass-async-result")]
async fn load(path: &str) -> std::io::Result<usize> {
    Ok(path.len())
}

struct Client;

impl Client {
    #[sentinel(resource = "pass-async-method", fallback = Self::call_busy)]
    async fn call(&self, n: u8) -> u8 {
        n
    }

    async fn call_busy(&self, _: u8, _: BlockError) -> u8 {
        0
    }
}

fn assert_send<F: std::future::Future + Send>(f: F) -> F {
    f
}

#[tokio::main(flavor = "current_thread")]
pub async fn main() {
    assert_eq!(assert_send(fetch(1)).await, "item 1");
    assert_eq!(plain(2).await, 2);
    assert_eq!(load("abc").await.unwrap(), 3);
    assert_eq!(Client.call(4).await, 4);
    let handle = tokio::spawn(fetch(3)); // spawnable: the future is Send
    assert_eq!(handle.await.unwrap(), "item 3");
}
