//! Rule files (JSON, YAML, TOML, Sentinel's JSON) and the cluster rules they carry.

mod cluster_rule_sets;
mod rule_file_durations;
mod rule_files;
mod rule_files_adaptive;
mod rule_files_cluster;
mod sentinel_validity;
