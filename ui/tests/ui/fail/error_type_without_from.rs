use sentinel_runtime::sentinel;

#[sentinel(qps = 10)]
fn parse(s: &str) -> Result<u8, String> {
    s.parse().map_err(|_| "bad".to_owned())
}

fn main() {}
