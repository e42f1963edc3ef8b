//! Cluster flow rules of one resource and window (hotspot rules: and parameter) would share one
//! limit in the cluster's store: a set that has two is refused by name, whichever way it is
//! loaded.

use std::time::Duration;

use sentinel_runtime::cluster::ClusterThreshold;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule, RuleSet};

use crate::serial;

#[test]
fn two_cluster_rules_of_one_resource_and_window_are_refused_naming_cluster() {
    let _serial = serial();
    let error = rules::load_flow_rules(vec![
        FlowRule::qps("cl-sets-a", 100.0).cluster(ClusterThreshold::Global),
        FlowRule::qps("cl-sets-a", 50.0).cluster(ClusterThreshold::PerInstance),
    ])
    .expect_err("two cluster rules share one limit");
    assert_eq!(error.field(), "cluster");
    assert_eq!(error.resource(), "cl-sets-a");
    assert!(error.to_string().contains("same window"), "{error}");
    assert!(rules::flow_rules()
        .iter()
        .all(|r| r.resource != "cl-sets-a"));

    let mut set = RuleSet::default();
    set.flow = vec![
        FlowRule::qps("cl-sets-b", 100.0).cluster(ClusterThreshold::Global),
        FlowRule::qps("cl-sets-b", 10.0).cluster(ClusterThreshold::Global),
    ];
    let error = rules::load(set).expect_err("the same in a whole set");
    let entry = &error.entries()[0];
    assert_eq!(entry.field.as_deref(), Some("cluster"));
    assert_eq!(entry.index, Some(1));
}

#[test]
fn cluster_rules_of_different_windows_or_beside_local_rules_load() {
    let _serial = serial();
    rules::load_flow_rules(vec![
        FlowRule::qps("cl-sets-c", 100.0).cluster(ClusterThreshold::Global),
        FlowRule::qps("cl-sets-c", 3000.0)
            .window(Duration::from_secs(60), 60)
            .cluster(ClusterThreshold::Global),
        FlowRule::qps("cl-sets-c", 80.0),
        FlowRule::qps("cl-sets-d", 100.0).cluster(ClusterThreshold::Global),
    ])
    .expect("one cluster rule per resource and window");
    assert_eq!(rules::flow_rules().len(), 4);
    rules::load_flow_rules(vec![]).expect("cleared");
}

#[test]
fn two_cluster_hotspot_rules_of_one_parameter_and_window_are_refused_naming_cluster() {
    let _serial = serial();
    let error = rules::load_hotspot_rules(vec![
        HotspotRule::qps("cl-sets-h", 0, 10.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps("cl-sets-h", 0, 5.0).cluster(ClusterThreshold::Global),
    ])
    .expect_err("two cluster rules share each value's limit");
    assert_eq!(error.field(), "cluster");
    assert!(
        error.to_string().contains("same parameter and window"),
        "{error}"
    );

    rules::load_hotspot_rules(vec![
        HotspotRule::qps("cl-sets-h", 0, 10.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps("cl-sets-h", 1, 10.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps_by_name("cl-sets-h", "user", 10.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps_by_name("cl-sets-h", "tenant", 10.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps("cl-sets-h", 0, 300.0)
            .window(Duration::from_secs(60))
            .cluster(ClusterThreshold::Global),
        HotspotRule::qps("cl-sets-h", 0, 20.0),
    ])
    .expect("one cluster rule per parameter and window");
    rules::load_hotspot_rules(vec![]).expect("cleared");
}
