//! `crate = path` for a renamed dependency.
use sentinel_runtime as flow_control;

#[flow_control::sentinel(crate = flow_control, resource = "pass-renamed", qps = 1)]
fn ping() -> Result<(), flow_control::BlockError> {
    Ok(())
}

pub fn main() {
    ping().unwrap();
}
