//! The lease scripts on a real `redis-server` (reached through a Unix socket in a temporary
//! directory: no port to race for): one call of [`lease_batch`] answers what one [`LEASE`] call
//! a key, in turn, answers. Skipped without `redis-server` on `PATH`, unless
//! `SENTINEL_REQUIRE_SERVERS=1`.

use ::redis::{Connection, Script};

use super::scripts::{lease_batch, EPOCH, LEASE};
use super::test_server::Server;

/// One lease asked: the key's hash tag, its name in the tag, the tokens wanted, the epoch this
/// instance last saw in its bucket (`"0"`, or `"1"`: an epoch the store no longer holds), until
/// when it must exist, and the tokens to charge.
struct Ask {
    tag: &'static str,
    key: &'static str,
    want: u64,
    epoch_seen: &'static str,
    alive_until: u64,
    charge: u64,
}

const fn ask(tag: &'static str, key: &'static str, want: u64, epoch_seen: &'static str) -> Ask {
    Ask {
        tag,
        key,
        want,
        epoch_seen,
        alive_until: 0,
        charge: 0,
    }
}

/// Emission interval and tolerance (µs): 50 tokens of burst, one every 100 ms (so that the
/// calls one by one, a moment apart, see no token come back in between).
const INTERVAL: &str = "100000.000000";
const TOLERANCE: &str = "5000000.000000";
const THRESHOLD: &str = "1000";

/// What the answers hold that does not depend on the microsecond each call ran at: tokens
/// granted, lost (0/1), thresholds disagree (0/1), and whether the key lives on (until > 0).
fn stable(answer: &[String]) -> (String, String, String, bool) {
    (
        answer[0].clone(),
        answer[2].clone(),
        answer[5].clone(),
        answer[4] != "0",
    )
}

/// Prepares namespace `ns` as an instance that connected finds it: the epochs of tags `a` and
/// `b` written (an hour back: their idle keys grant their burst), tag `c`'s missing; a state key
/// with another threshold; a key this instance wrote and the store lost.
fn prepare(conn: &mut Connection, ns: &str) {
    for tag in ["a", "b"] {
        let epoch: String = Script::new(EPOCH)
            .key(format!("{ns}:epoch:{{{tag}}}"))
            .arg(3_600_000_000u64)
            .invoke(conn)
            .expect("the epoch script runs");
        assert!(!epoch.is_empty());
    }
    let _: () = ::redis::cmd("SET")
        .arg(format!("{ns}:disagrees:{{b}}"))
        .arg("0 999")
        .query(conn)
        .expect("SET");
}

fn asks() -> Vec<Ask> {
    let mut asks = vec![
        ask("a", "one", 10, "0"),
        ask("b", "two", 80, "0"),
        ask("a", "three", 5, "0"),
        // The bucket's epoch is gone (flushed, evicted): lost, for both of its keys.
        ask("c", "four", 10, "1"),
        ask("c", "five", 10, "1"),
        // Another instance's threshold.
        ask("b", "disagrees", 3, "0"),
    ];
    // Calls admitted locally meanwhile, charged.
    asks.push(Ask {
        charge: 20,
        ..ask("b", "charged", 50, "0")
    });
    // A key this instance knows must exist for another hour, missing: lost, and spent now.
    asks.push(Ask {
        alive_until: u64::MAX / 2,
        ..ask("a", "evicted", 7, "0")
    });
    asks
}

#[test]
fn a_batch_answers_what_one_call_a_key_answers() {
    let Some(server) = Server::start("scripts") else {
        return;
    };
    let mut conn = server.connect();
    let asks = asks();

    // One call of the batch script, in namespace `batch`.
    prepare(&mut conn, "batch");
    let script = Script::new(&lease_batch());
    let mut batch = script.prepare_invoke();
    batch.arg(INTERVAL).arg(TOLERANCE).arg(THRESHOLD);
    for a in &asks {
        batch
            .key(format!("batch:{}:{{{}}}", a.key, a.tag))
            .key(format!("batch:epoch:{{{}}}", a.tag))
            .arg(a.want)
            .arg(a.epoch_seen)
            .arg(a.alive_until)
            .arg(a.charge);
    }
    let batched: Vec<String> = batch.invoke(&mut conn).expect("the batch script runs");
    assert_eq!(batched.len(), asks.len() * 6, "{batched:?}");

    // One call of the lease script a key, in turn, in namespace `one`.
    prepare(&mut conn, "one");
    let lease = Script::new(LEASE);
    let mut one_by_one = Vec::new();
    for a in &asks {
        let answer: Vec<String> = lease
            .key(format!("one:{}:{{{}}}", a.key, a.tag))
            .key(format!("one:epoch:{{{}}}", a.tag))
            .arg(INTERVAL)
            .arg(TOLERANCE)
            .arg(a.want)
            .arg(a.epoch_seen)
            .arg(a.alive_until)
            .arg(a.charge)
            .arg(THRESHOLD)
            .invoke(&mut conn)
            .expect("the lease script runs");
        one_by_one.push(answer);
    }

    let batched: Vec<_> = batched.chunks(6).map(stable).collect();
    let one_by_one: Vec<_> = one_by_one.iter().map(|a| stable(a)).collect();
    assert_eq!(batched, one_by_one);
    // And the answers are the ones the scripts' rules give: the burst of 50 for idle keys
    // of a known bucket, none from a bucket that lost its epoch, the charge taken first.
    let granted: Vec<&str> = batched.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(granted, ["10", "50", "5", "0", "0", "3", "30", "0"]);
    let lost: Vec<&str> = batched.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(lost, ["0", "0", "0", "1", "1", "0", "0", "1"]);
    let disagree: Vec<&str> = batched.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(disagree, ["0", "0", "0", "0", "0", "1", "0", "0"]);
}
