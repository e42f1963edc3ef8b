//! The guide's Rust snippets (`docs/*.md`), compiled and run as doc-tests of this package, which
//! turns on every feature of the runtime (the README's own are doc-tests of `sentinel-runtime`).
//! Nothing else: the package's tests are its binaries.

macro_rules! chapters {
    ($($name:ident = $file:literal),* $(,)?) => {$(
        #[cfg(doctest)]
        #[doc = include_str!(concat!("../../docs/", $file))]
        pub struct $name;
    )*};
}

chapters!(
    Attribute = "attribute.md",
    Rules = "rules.md",
    Tower = "tower.md",
    Outbound = "outbound.md",
    Cluster = "cluster.md",
    FleetAndDashboard = "fleet-and-dashboard.md",
    Operations = "operations.md",
    SentinelParity = "sentinel-parity.md",
    RuleSources = "rule-sources.md",
);
