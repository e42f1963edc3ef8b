use sentinel_runtime::sentinel;

fn is_timeout(e: &String) -> bool {
    e == "timeout"
}

#[sentinel(is_error = is_timeout)]
fn read() -> std::io::Result<u8> {
    Ok(1)
}

fn main() {}
