//! One instance of a service for the cluster's rate sweep (`tests/cluster/cluster_sweep.rs`):
//! starts a cluster, loads one global cluster rule per point of the sweep (a flow rule, or a
//! hotspot rule whose two values `a` and `b` are each offered the point's rate), waits for `go`
//! on stdin, offers every point's calls at its steady rate from one thread (the k-th call of a
//! point at `(k + phase) / rate` seconds after `go`), and reports on stdout:
//!
//! - `ready` once the rules are loaded and the cluster connected,
//! - at the end, for each point, `point <i> offered=<n> admitted=<n> first=<0|1>
//!   ticks=<admitted in each 100 ms since go, comma-separated> made=<calls made in each 100 ms
//!   since go> reasons=<why each kind
//!   of refusal, `;`-separated, with its count>`, then `done`.
//!
//! Arguments: `--redis URL`, `--namespace NS`, `--threshold R` (every rule's, per second; a
//! hotspot rule's per value), `--secs S`, `--phase P` (0..1: where this instance's calls fall
//! in each point's interval, so that the instances of a fleet interleave), and `--point
//! flow|hot:RATE` once per point (the calls a second this instance offers; per value for a
//! hotspot rule).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sentinel_runtime::cluster::{Cluster, ClusterState, ClusterThreshold};
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::EntryBuilder;

/// One point of the sweep in this instance.
struct Point {
    resource: &'static str,
    hot: bool,
    /// Calls a second (per value for a hotspot rule).
    rate: f64,
    offered: u64,
    admitted: u64,
    first: Option<bool>,
    ticks: Vec<u64>,
    /// Calls made in each 100 ms since go (a thread that waited for a core makes its calls
    /// late, together).
    made: Vec<u64>,
    reasons: BTreeMap<String, u64>,
}

const VALUES: [&str; 2] = ["a", "b"];

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("error {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let (mut url, mut namespace, mut threshold, mut secs, mut phase) =
        (String::new(), String::from("sweep"), 100.0, 3.0, 0.5);
    let mut points = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--redis" => url = value,
            "--namespace" => namespace = value,
            "--threshold" => threshold = number(&value)?,
            "--secs" => secs = number(&value)?,
            "--phase" => phase = number(&value)?,
            "--point" => {
                let (kind, rate) = value.split_once(':').ok_or("--point kind:rate")?;
                let resource: &'static str =
                    Box::leak(format!("sweep-{}", points.len()).into_boxed_str());
                points.push(Point {
                    resource,
                    hot: kind == "hot",
                    rate: number(rate)?,
                    offered: 0,
                    admitted: 0,
                    first: None,
                    ticks: vec![0; (secs * 10.0).ceil() as usize + 1],
                    made: vec![0; (secs * 10.0).ceil() as usize + 1],
                    reasons: BTreeMap::new(),
                });
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let cluster = Cluster::redis(url)
        .namespace(namespace)
        .start()
        .map_err(|e| e.to_string())?;
    let flow: Vec<FlowRule> = points
        .iter()
        .filter(|p| !p.hot)
        .map(|p| FlowRule::qps(p.resource, threshold).cluster(ClusterThreshold::Global))
        .collect();
    let hot: Vec<HotspotRule> = points
        .iter()
        .filter(|p| p.hot)
        .map(|p| HotspotRule::qps(p.resource, 0, threshold).cluster(ClusterThreshold::Global))
        .collect();
    rules::load_flow_rules(flow).map_err(|e| e.to_string())?;
    rules::load_hotspot_rules(hot).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster.status().state != ClusterState::Connected {
        if Instant::now() > deadline {
            return Err("not connected within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    println!("ready");
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() || line.trim() != "go" {
        return Err("no go".into());
    }
    offer(&mut points, secs, phase);
    let mut out = std::io::stdout().lock();
    for (i, p) in points.iter().enumerate() {
        let ticks: Vec<String> = p.ticks.iter().map(u64::to_string).collect();
        let made: Vec<String> = p.made.iter().map(u64::to_string).collect();
        let reasons: Vec<String> = p.reasons.iter().map(|(r, n)| format!("{r}={n}")).collect();
        let _ = writeln!(
            out,
            "point {i} offered={} admitted={} first={} ticks={} made={} reasons={}",
            p.offered,
            p.admitted,
            u8::from(p.first.unwrap_or(true)),
            ticks.join(","),
            made.join(","),
            reasons.join(";").replace(' ', "_"),
        );
    }
    let _ = writeln!(out, "done");
    let _ = out.flush();
    drop(cluster);
    Ok(())
}

/// Makes each point's calls on schedule for `secs` (a call late on its time is made at once).
fn offer(points: &mut [Point], secs: f64, phase: f64) {
    let start = Instant::now();
    // The next call of each point: its index and when it is due (s after `start`).
    let calls_per_sec = |p: &Point| p.rate * if p.hot { VALUES.len() as f64 } else { 1.0 };
    let mut next: Vec<(u64, f64)> = points
        .iter()
        .map(|p| (0, phase / calls_per_sec(p)))
        .collect();
    loop {
        let Some((i, &(k, due))) = next
            .iter()
            .enumerate()
            .filter(|(_, (_, due))| *due < secs)
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        else {
            return;
        };
        let wait = due - start.elapsed().as_secs_f64();
        if wait > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(wait));
        }
        let p = &mut points[i];
        let result = if p.hot {
            EntryBuilder::new(p.resource)
                .param(VALUES[(k % VALUES.len() as u64) as usize])
                .enter()
        } else {
            EntryBuilder::new(p.resource).enter()
        };
        p.offered += 1;
        let at = start.elapsed().as_secs_f64();
        if let Some(t) = p.made.get_mut((at * 10.0) as usize) {
            *t += 1;
        }
        let ok = result.is_ok();
        p.first.get_or_insert(ok);
        match result {
            Ok(_entry) => {
                p.admitted += 1;
                if let Some(t) = p.ticks.get_mut((at * 10.0) as usize) {
                    *t += 1;
                }
            }
            Err(e) => {
                *p.reasons
                    .entry(e.reason().unwrap_or("none").to_owned())
                    .or_default() += 1
            }
        }
        next[i] = (k + 1, (k as f64 + 1.0 + phase) / calls_per_sec(p));
    }
}
