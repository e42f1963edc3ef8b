//! The YAML document of a known attack: one 100 KiB resource name anchored once and aliased
//! 4 000 times: 234 KB of text that reads as 400 MB of names.

/// The name's length: 100 KiB.
pub const NAME_BYTES: usize = 100 << 10;
/// How many rules alias it.
pub const ALIASES: usize = 4_000;

/// The document: a flow rule naming `&n` (the long name), then `ALIASES` rules naming `*n`.
pub fn expanding_yaml() -> String {
    let mut doc = format!(
        "flow:\n  - resource: &n {}\n    threshold: 1\n",
        "x".repeat(NAME_BYTES)
    );
    for _ in 0..ALIASES {
        doc.push_str("  - {resource: *n, threshold: 1}\n");
    }
    doc
}
