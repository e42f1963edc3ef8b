//! Rule files (JSON, YAML, TOML, Sentinel's JSON) and the cluster rules they carry.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// One test at a time loads rules, across the modules: the process has one set in force, and a
/// test reads back what it loaded.
fn serial() -> MutexGuard<'static, ()> {
    static RULES: Mutex<()> = Mutex::new(());
    RULES.lock().unwrap_or_else(PoisonError::into_inner)
}

mod cluster_rule_sets;
#[cfg(unix)]
mod configmap;
mod document_budget;
mod rule_file_durations;
mod rule_files;
mod rule_files_adaptive;
mod rule_files_cluster;
mod sentinel_validity;
