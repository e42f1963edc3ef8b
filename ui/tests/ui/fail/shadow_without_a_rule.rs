//! `shadow = true` makes the attribute's rules shadow rules: without one it would do nothing.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(resource = "shadow-alone", shadow = true)]
fn nothing_to_shadow() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(resource = "shadow-params", params = [user], inbound = true, shadow = false)]
fn only_parameters(user: u64) -> Result<u64, BlockError> {
    Ok(user)
}

fn main() {
    let _ = (nothing_to_shadow(), only_parameters(1));
}
