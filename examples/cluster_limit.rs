//! One limit across three processes: `cargo run -p sentinel-integration --example cluster_limit`.
//!
//! Starts a `redis-server` on a free loopback port (it must be on PATH: `apt-get install
//! redis-server`), then three instances of this program, each offering 300 calls a second to a
//! resource with one global cluster rule of 300/s. Each second it prints what each instance
//! admitted and the total: about 300 in all (the first second also spends the rule's burst),
//! where three local rules would admit 900.

#[path = "support/local_redis.rs"]
mod local_redis;

use local_redis::Kill;

use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use sentinel_runtime::cluster::{Cluster, ClusterThreshold};
use sentinel_runtime::entry;
use sentinel_runtime::rules::{self, FlowRule};

const THRESHOLD: f64 = 300.0;
const OFFER_PER_SECOND: u64 = 300;
const SECONDS: u64 = 5;
const INSTANCES: usize = 3;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--instance" {
        return instance(&args[2]);
    }
    let (_redis, url) = match local_redis::start() {
        Ok(started) => started,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "redis-server at {url}; {INSTANCES} instances offer {OFFER_PER_SECOND}/s each to one \
         global rule of {THRESHOLD}/s"
    );
    let Ok(me) = std::env::current_exe() else {
        eprintln!("cannot find this program to start its instances");
        return ExitCode::FAILURE;
    };
    let mut children = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..INSTANCES {
        let child = Command::new(&me)
            .args(["--instance", &url])
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("cannot start an instance");
            return ExitCode::FAILURE;
        };
        let Some(stdout) = child.stdout.take() else {
            return ExitCode::FAILURE;
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send((i, line));
            }
        });
        children.push(Kill(child));
    }
    drop(tx);
    // Each instance prints `second admitted` once a second; print a row once all have.
    let mut table = vec![[None; INSTANCES]; SECONDS as usize];
    let mut printed = 0;
    println!(
        "second  {}  total",
        (1..=INSTANCES)
            .map(|i| format!("instance {i}"))
            .collect::<Vec<_>>()
            .join("  ")
    );
    while let Ok((i, line)) = rx.recv_timeout(Duration::from_secs(SECONDS + 10)) {
        if let Some(error) = line.strip_prefix("error ") {
            eprintln!("instance {}: {error}", i + 1);
            return ExitCode::FAILURE;
        }
        let mut words = line
            .split_whitespace()
            .map(|w| w.parse::<u64>().unwrap_or(0));
        let (Some(second), Some(admitted)) = (words.next(), words.next()) else {
            continue;
        };
        if let Some(row) = table.get_mut(second as usize - 1) {
            row[i] = Some(admitted);
        }
        while printed < table.len() && table[printed].iter().all(Option::is_some) {
            let row: Vec<u64> = table[printed].iter().map(|n| n.unwrap_or(0)).collect();
            let cells: Vec<String> = row.iter().map(|n| format!("{n:>10}")).collect();
            println!(
                "{:>6}  {}  {:>5}",
                printed + 1,
                cells.join("  "),
                row.iter().sum::<u64>()
            );
            printed += 1;
        }
        if printed == table.len() {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// One instance: joins the cluster, offers calls, prints `second admitted` each second.
fn instance(url: &str) -> ExitCode {
    let cluster = match Cluster::redis(url).namespace("example").start() {
        Ok(cluster) => cluster,
        Err(e) => {
            println!("error {e}");
            return ExitCode::FAILURE;
        }
    };
    let rule = FlowRule::qps("checkout", THRESHOLD).cluster(ClusterThreshold::Global);
    if let Err(e) = rules::load_flow_rules(vec![rule]) {
        println!("error {e}");
        return ExitCode::FAILURE;
    }
    let start = Instant::now();
    let (mut offered, mut admitted, mut second) = (0u64, 0u64, 1u64);
    while second <= SECONDS {
        let elapsed = start.elapsed();
        if elapsed >= Duration::from_secs(second) {
            println!("{second} {admitted}");
            admitted = 0;
            second += 1;
            continue;
        }
        let due = (elapsed.as_secs_f64() * OFFER_PER_SECOND as f64) as u64;
        while offered < due {
            offered += 1;
            if entry("checkout").is_ok() {
                admitted += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(cluster);
    ExitCode::SUCCESS
}
