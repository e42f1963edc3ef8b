//! Per-user limits with a hotspot rule: `cargo run --example per_user_limits`.
//!
//! One function is guarded per user id: each user may make 5 calls a second (plus a burst of 2
//! from idle), and the "vip" user 20. Four users call at different rates for three seconds; each
//! second prints, per user, how many calls passed and how many were blocked.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sentinel_runtime::rules::{self, HotspotRule};
use sentinel_runtime::{BlockError, EntryBuilder};

/// The guarded work: one call on behalf of `user`.
fn fetch_profile(user: &str) -> Result<String, BlockError> {
    let _entry = EntryBuilder::new("profiles").param(user).enter()?;
    Ok(format!("profile of {user}"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    rules::load_hotspot_rules(vec![HotspotRule::qps("profiles", 0, 5.0)
        .burst(2)
        .exception("vip", 20.0)])?;
    // (user, calls per second)
    let users = [("alice", 3u32), ("bob", 10), ("mallory", 50), ("vip", 30)];
    println!("each user: 5 calls/s (+2 burst from idle); vip: 20 calls/s\n");
    let start = Instant::now();
    for second in 1..=3u32 {
        let mut seen: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
        // 100 ticks of 10 ms; each user calls on the ticks its rate asks for.
        for tick in 0..100u32 {
            for (user, rate) in users {
                let calls = (tick + 1) * rate / 100 - tick * rate / 100;
                for _ in 0..calls {
                    let tally = seen.entry(user).or_default();
                    match fetch_profile(user) {
                        Ok(_) => tally.0 += 1,
                        Err(_) => tally.1 += 1,
                    }
                }
            }
            let due = Duration::from_millis(u64::from((second - 1) * 1_000 + (tick + 1) * 10));
            std::thread::sleep(due.saturating_sub(start.elapsed()));
        }
        println!("second {second}:");
        for (user, (passed, blocked)) in &seen {
            println!("  {user:8} passed {passed:3}  blocked {blocked:3}");
        }
    }
    Ok(())
}
