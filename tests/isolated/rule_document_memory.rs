//! A small YAML document that expands to 400 MB once its aliases are read (one 100 KiB name
//! aliased 4 000 times) is refused, naming the budget on what a document expands to, and
//! reading it grows the process's peak resident set (VmHWM) by less than 64 MB: parsed alone,
//! and sent as a dashboard's rules `PUT`.
//!
//! In processes of their own, so that the peak belongs to the reading alone.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use sentinel_runtime::dashboard::Dashboard;
use sentinel_runtime::rules::files::MAX_EXPANDED_BYTES;
use sentinel_runtime::rules::{self, RuleSet};

#[path = "../support/expanding_yaml.rs"]
mod expanding_yaml;
use expanding_yaml::expanding_yaml;

/// Reading the document may grow the peak resident set by less than this.
const LIMIT_KB: u64 = 64 * 1024;

/// A field of /proc/self/status, in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("/proc/self/status has {field}"));
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("a number of kB")
}

/// The peak resident set so far.
fn peak_kb() -> u64 {
    status_kb("VmHWM:")
}

fn limit_named(text: &str) -> bool {
    text.contains(&format!("{} MiB", MAX_EXPANDED_BYTES >> 20))
}

#[test]
#[ignore = "needs a process of its own: run through its wrapper"]
fn a_yaml_document_aliasing_a_long_name_is_refused_within_64_mb() {
    crate::own_process::assert_alone();
    let doc = expanding_yaml();
    let before = peak_kb();
    let result = RuleSet::from_yaml(&doc);
    let grown = peak_kb().saturating_sub(before);
    println!(
        "document {} bytes; peak resident set grew by {grown} kB",
        doc.len()
    );
    let err = match result {
        Ok(set) => panic!(
            "read as {} rules (grown {grown} kB): the document was not refused",
            set.flow.len()
        ),
        Err(e) => e.to_string(),
    };
    assert!(limit_named(&err), "the error names the limit: {err}");
    assert!(
        grown < LIMIT_KB,
        "reading grew the peak resident set by {grown} kB"
    );
}

#[test]
#[ignore = "needs a process of its own: run through its wrapper"]
fn the_same_document_put_through_a_dashboard_is_refused_with_422_within_64_mb() {
    crate::own_process::assert_alone();
    let token = "isolated-expanding-yaml-token";
    let dash = Dashboard::new()
        .bind("127.0.0.1:0".parse().expect("an address"))
        .token(token)
        .start()
        .expect("the dashboard");
    let addr = dash.local_addr();
    let exchange = |req: String| -> String {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("a timeout");
        stream.write_all(req.as_bytes()).expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("the answer");
        answer
    };
    let head = |method: &str, extra: &str, len: usize| {
        format!(
            "{method} /api/rules HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Authorization: Bearer {token}\r\n{extra}Content-Length: {len}\r\n\r\n"
        )
    };
    let got = exchange(head("GET", "", 0));
    let etag = got
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .expect("an ETag")
        .trim()
        .to_owned();
    let doc = expanding_yaml();
    let before = peak_kb();
    let put = exchange(
        head(
            "PUT",
            &format!("Content-Type: application/yaml\r\nIf-Match: {etag}\r\n"),
            doc.len(),
        ) + &doc,
    );
    let grown = peak_kb().saturating_sub(before);
    println!("PUT answered ({grown} kB peak growth): {:.300}", put);
    assert!(put.starts_with("HTTP/1.1 422"), "{:.300}", put);
    assert!(
        limit_named(&put),
        "the answer names the limit: {:.300}",
        put
    );
    assert!(
        grown < LIMIT_KB,
        "the PUT grew the peak resident set by {grown} kB"
    );
    assert!(rules::flow_rules().is_empty(), "nothing applied");
}
