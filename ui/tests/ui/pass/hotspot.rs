use sentinel_runtime::{sentinel, BlockError};

#[sentinel(
    resource = "ui-hot",
    hotspot(param = user_id, qps = 10, burst = 5, window = "1s", max_wait = "100ms", capacity = 50000),
    hotspot(param = user_id, concurrency = 2),
    hotspot(param = user_id, qps = 100, burst = 9, window = "1m", strict = true)
)]
fn per_user(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

#[sentinel(params = [user_id, region], hotspot(param = tenant, qps = 0))]
fn params(user_id: &str, region: String, tenant: (u8, char), other: f64) -> Result<f64, BlockError> {
    Ok(user_id.len() as f64 + region.len() as f64 + f64::from(tenant.0) + other)
}

struct Service;

impl Service {
    #[sentinel(hotspot(param = key, qps = 1, window = "24h"), fallback = Self::busy)]
    async fn get(&self, key: &[u8]) -> usize {
        key.len()
    }

    async fn busy(&self, _key: &[u8], _e: BlockError) -> usize {
        0
    }
}

#[sentinel(params = [a, b, c, d, e, f, g, h])]
fn eight(a: u8, b: u8, c: u8, d: u8, e: u8, f: u8, g: u8, h: u8) -> Result<u8, BlockError> {
    Ok(a + b + c + d + e + f + g + h)
}

pub fn main() {
    let _ = per_user(1);
    let _ = params("u", "eu".to_owned(), (1, 'x'), 0.5);
    let _ = Service.get(b"k");
    let _ = eight(1, 1, 1, 1, 1, 1, 1, 1);
}
