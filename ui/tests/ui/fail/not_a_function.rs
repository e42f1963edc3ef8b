use sentinel_runtime::sentinel;

#[sentinel(qps = 10)]
struct Orders;

trait Service {
    #[sentinel(qps = 10)]
    fn call(&self) -> Result<(), sentinel_runtime::BlockError>;
}

fn main() {}
