//! Two attributes on one function would nest (the second guarding the body inside the first):
//! refused, however the second is spelled.
use sentinel_runtime::{sentinel, BlockError};

#[sentinel(qps = 10)]
#[sentinel(concurrency = 2)]
fn twice() -> Result<(), BlockError> {
    Ok(())
}

#[sentinel(qps = 10)]
#[sentinel_runtime::sentinel(concurrency = 2)]
fn by_path() -> Result<(), BlockError> {
    Ok(())
}

mod renamed {
    use sentinel_runtime::sentinel as guard;
    use sentinel_runtime::BlockError;

    #[sentinel_runtime::sentinel(qps = 10)]
    #[guard(concurrency = 2)]
    fn under_another_name() -> Result<(), BlockError> {
        Ok(())
    }
}

fn main() {}
