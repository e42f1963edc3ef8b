//! The fleet as one: `cargo run -p sentinel-integration --example fleet`.
//!
//! Starts a `redis-server` on a free loopback port (it must be on PATH: `apt-get install
//! redis-server`), keeps the fleet's rule document in it, and runs three instances of a service:
//! this process (with the dashboard) and two more processes of this program. Every instance
//! watches the document (`rules::watch_source`) and shares one global limit through the cluster.
//! Then it edits the document as the dashboard's editor does (`put` with the version read), and
//! prints the fleet's view (`cluster::fleet`) before and after: three instances, one rules
//! version, the resource's traffic summed over the fleet. Last it stops one instance and shows
//! the fleet without it. The dashboard's address is printed: its fleet panel shows the same.

#[path = "support/local_redis.rs"]
mod local_redis;

use local_redis::Kill;

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use sentinel_runtime::cluster::{self, Cluster, Fleet};
use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::entry;
use sentinel_runtime::rules::{self, source::RedisSource};

const RESOURCE: &str = "GET /orders";
const KEY: &str = "fleet-example-rules";
const NAMESPACE: &str = "fleet-example";

fn document(threshold: u32) -> String {
    format!(
        "{{\"flow\": [{{\"resource\": \"{RESOURCE}\", \"threshold\": {threshold}, \"cluster\": \"global\"}}]}}"
    )
}

/// One instance: watches the fleet's rules, joins the cluster, calls the resource 100 times a
/// second until `secs` have passed.
fn serve(url: &str, secs: u64) -> Result<(RedisSource, Cluster, impl Drop), String> {
    let source = RedisSource::new(url, KEY).map_err(|e| e.to_string())?;
    let watcher = rules::watch_source(source.clone()).map_err(|e| e.to_string())?;
    let cluster = Cluster::redis(url)
        .namespace(NAMESPACE)
        .start()
        .map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            drop(entry(RESOURCE));
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    Ok((source, cluster, watcher))
}

fn show(what: &str, fleet: Option<Fleet>) {
    let Some(fleet) = fleet else {
        println!("{what}: no view yet");
        return;
    };
    println!("{what}: {} instances", fleet.instances.len());
    for i in &fleet.instances {
        println!(
            "  {} ({} pid {:>7})  rules v{}  {:<9} {:>6.0} pass/s  seen {} ms ago",
            i.name,
            i.host,
            i.pid,
            i.rules_source_version.unwrap_or(0),
            i.cluster_state,
            i.pass_qps,
            i.last_seen_ms
        );
    }
    for r in fleet.resources.iter().filter(|r| r.resource == RESOURCE) {
        println!(
            "  {RESOURCE}: {:.0} pass/s, {:.0} blocked/s over {} instances",
            r.pass_qps, r.block_qps, r.instances
        );
    }
}

/// Waits (at most `limit`) for the fleet's view to satisfy `done`.
fn wait_for(limit: Duration, done: impl Fn(&Fleet) -> bool) -> Option<Fleet> {
    let end = Instant::now() + limit;
    loop {
        let view = cluster::fleet();
        if view.as_ref().is_some_and(&done) || Instant::now() > end {
            return view;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--instance" {
        return match serve(&args[2], 20) {
            Ok(_running) => {
                std::thread::sleep(Duration::from_secs(20));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("instance: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (_redis, url) = match local_redis::start() {
        Ok(started) => started,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let Ok(first) = RedisSource::new(&url, KEY).and_then(|s| s.put(&document(1000), None)) else {
        eprintln!("cannot write the fleet's rules");
        return ExitCode::FAILURE;
    };
    let Ok(me) = std::env::current_exe() else {
        eprintln!("cannot find this program to start its instances");
        return ExitCode::FAILURE;
    };
    let mut others = Vec::new();
    for _ in 0..2 {
        match Command::new(&me).args(["--instance", &url]).spawn() {
            Ok(child) => others.push(Kill(child)),
            Err(e) => {
                eprintln!("cannot start an instance: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let (source, _cluster, _watcher) = match serve(&url, 20) {
        Ok(running) => running,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let dashboard = Dashboard::new().rules_source(source.clone()).start();
    if let Ok(dash) = &dashboard {
        println!(
            "dashboard: {} (its fleet panel shows the view below)",
            dash.url()
        );
    }
    let view = wait_for(Duration::from_secs(10), |f| f.instances.len() == 3);
    show("the fleet", view.clone());
    let before = view.and_then(|f| f.instances.first().map(|i| i.rules_version.clone()));

    println!("\nediting the fleet's rules (as the dashboard's editor does): 1000/s -> 500/s");
    if let Err(e) = source.put(&document(500), Some(first)) {
        eprintln!("the edit was refused: {e}");
        return ExitCode::FAILURE;
    }
    let view = wait_for(Duration::from_secs(5), |f| {
        f.instances.len() == 3
            && f.instances
                .iter()
                .all(|i| Some(&i.rules_version) != before.as_ref())
    });
    show("the fleet, one new rules version everywhere", view);
    println!(
        "a stale edit: {}",
        match source.put(&document(1), Some(first)) {
            Ok(_) => "written (unexpected)".to_owned(),
            Err(e) => format!("refused: {e}"),
        }
    );

    println!("\nstopping one instance");
    others.truncate(1);
    let view = wait_for(Duration::from_secs(8), |f| f.instances.len() == 2);
    show("the fleet without it", view);
    ExitCode::SUCCESS
}
