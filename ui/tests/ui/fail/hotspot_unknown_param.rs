use sentinel_runtime::{sentinel, BlockError};

#[sentinel(hotspot(param = usr_id, qps = 10))]
fn by_user(user_id: u64) -> Result<u64, BlockError> {
    Ok(user_id)
}

#[sentinel(params = [user_id, tenant], hotspot(param = region, concurrency = 2))]
fn by_region(user_id: u64, region: &str) -> Result<u64, BlockError> {
    Ok(user_id + region.len() as u64)
}

#[sentinel(params = [user_id])]
fn no_arguments() -> Result<(), BlockError> {
    Ok(())
}

fn main() {}
