//! Tests that need a process of their own: a custom slot stays registered for the process's life,
//! the first call of a process must be its first, the clock pushed to the end of its range is
//! felt by every later reading, a system rule's count of calls inside starts once, and memory
//! tests read the resident set of their process.
//!
//! They share one test binary (one build and one link instead of one each), and each test runs
//! alone in a child process of it: the test itself is `#[ignore]`d, so the parent never runs it,
//! and its wrapper below starts this binary again with `--exact <test> --ignored`, checks that
//! exactly that test ran and passed, and prints the child's output. A test added to a module here
//! needs its line in [`own_process!`]: `every_ignored_test_has_a_wrapper` fails otherwise.

// Support code shared by several modules (declared once: a file may be one module only).
#[path = "../support/block_prefix.rs"]
mod block_prefix;
#[path = "../common/mod.rs"]
mod common;
#[path = "../support/throttled.rs"]
mod throttled;

mod clock_resumes;
mod cold_start;
mod custom_slot;
mod custom_slot_cancel_list;
mod custom_slot_cancel_once;
mod custom_slot_cancel_snapshot;
mod custom_slot_first;
mod custom_slot_late;
mod custom_slot_nested;
mod custom_slot_order;
mod hardening_memory;
mod hardening_reload_memory;
mod hotspot_memory;
mod rule_document_memory;
mod system_rule_seed;

/// Declares, for each `module { test, ... }`, a wrapper `own_process::module::test` that runs
/// `module::test` alone in a child process, and the list the completeness check reads.
macro_rules! own_process {
    ($($module:ident { $($test:ident),+ $(,)? })+) => {
        /// The wrappers, one per test of the modules above, and the child's side.
        mod own_process {
            /// Every test that runs in a process of its own, as `module::test`.
            pub const TESTS: &[&str] = &[$($(concat!(stringify!($module), "::", stringify!($test)),)+)+];

            $(
                mod $module {
                    $(
                        #[test]
                        fn $test() {
                            super::run_alone(concat!(stringify!($module), "::", stringify!($test)));
                        }
                    )+
                }
            )+

            /// Set in the child's environment to the test it runs.
            const CHILD: &str = "SENTINEL_OWN_PROCESS";

            /// Called first by every test of the modules above: it must run in a child started by
            /// [`run_alone`], never beside other tests (as `cargo test -- --include-ignored` would
            /// run it).
            pub fn assert_alone() {
                assert!(
                    std::env::var_os(CHILD).is_some(),
                    "this test needs a process of its own: run it through its wrapper \
                     (`cargo test --test isolated`), not with --ignored or --include-ignored"
                );
            }

            /// Runs `test` alone in a child process of this binary; fails unless exactly that test
            /// ran there and passed.
            pub fn run_alone(test: &str) {
                let exe = std::env::current_exe().expect("the test binary's path");
                let out = std::process::Command::new(exe)
                    .args([test, "--exact", "--ignored", "--test-threads=1", "--nocapture"])
                    .env(CHILD, test)
                    .output()
                    .expect("start the test binary again");
                let stdout = String::from_utf8_lossy(&out.stdout);
                let stderr = String::from_utf8_lossy(&out.stderr);
                // Shown with the parent's own output (on failure, or with --nocapture).
                println!("--- {test}, in its own process ---\n{stdout}{stderr}");
                assert!(out.status.success(), "{test} failed in its own process ({})", out.status);
                assert!(
                    stdout.contains("test result: ok. 1 passed; 0 failed"),
                    "{test}: the child did not run exactly this one test"
                );
            }

            /// Every ignored test of this binary is one of [`TESTS`], and the other way round, so
            /// that no test of these modules is left unrun.
            #[test]
            fn every_ignored_test_has_a_wrapper() {
                let exe = std::env::current_exe().expect("the test binary's path");
                let out = std::process::Command::new(exe)
                    .args(["--list", "--ignored"])
                    .output()
                    .expect("list this binary's tests");
                let listed = String::from_utf8_lossy(&out.stdout);
                let mut ignored: Vec<&str> = listed
                    .lines()
                    .filter_map(|l| l.strip_suffix(": test"))
                    .collect();
                let mut wrapped = TESTS.to_vec();
                ignored.sort_unstable();
                wrapped.sort_unstable();
                assert_eq!(ignored, wrapped, "tests without a wrapper, or wrappers without a test");
            }
        }
    };
}

own_process! {
    clock_resumes { time_moves_again_after_a_mock_advanced_by_duration_max_is_dropped }
    cold_start { the_first_call_of_a_process_with_threads_pays_no_one_time_set_up }
    custom_slot {
        custom_slots_run_in_order_and_a_later_block_cancels_earlier_reservations,
        a_probe_blocked_by_a_later_slot_gives_its_place_back,
    }
    custom_slot_cancel_list { a_slot_registered_while_a_call_waits_is_not_asked_to_cancel_it }
    custom_slot_cancel_once { a_call_given_up_is_cancelled_once_at_the_slots_that_admitted_it }
    custom_slot_cancel_snapshot { a_dropped_wait_asks_the_slots_that_admitted_the_call_and_only_them }
    custom_slot_first { a_slot_registered_while_the_registry_is_first_made_runs_on_every_later_entry }
    custom_slot_late { a_slot_registered_late_runs_on_every_resource_made_before_during_and_after }
    custom_slot_nested { a_slot_entering_a_new_resource_while_slots_are_registered_does_not_deadlock }
    custom_slot_order { custom_slots_run_between_the_authority_and_system_checks_by_their_order }
    hardening_memory {
        a_million_distinct_names_grow_rss_by_less_than_64_mb,
        after_the_flood_all_lists_at_most_the_cap_and_overflow_counts_the_rest,
        after_the_flood_defined_and_rule_named_resources_get_their_node_and_rules,
        lowering_and_raising_the_cap_works_as_documented,
    }
    hardening_reload_memory { a_hundred_thousand_reloads_grow_rss_by_less_than_16_mb_and_do_not_slow_down }
    hotspot_memory { ten_million_values_stay_within_the_table }
    rule_document_memory {
        a_yaml_document_aliasing_a_long_name_is_refused_within_64_mb,
        the_same_document_put_through_a_dashboard_is_refused_with_422_within_64_mb,
    }
    system_rule_seed { a_system_concurrency_rule_loaded_while_inbound_calls_are_inside_counts_them }
}
