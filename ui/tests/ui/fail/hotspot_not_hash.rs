use sentinel_runtime::{sentinel, BlockError};

struct Order {
    id: u64,
}

#[sentinel(hotspot(param = price, qps = 10))]
fn by_price(price: f64) -> Result<f64, BlockError> {
    Ok(price)
}

#[sentinel(params = [user_id, order])]
async fn by_order(user_id: u64, order: Order) -> Result<u64, BlockError> {
    Ok(user_id + order.id)
}

fn main() {}
