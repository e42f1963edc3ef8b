//! A cluster rule's block is labelled as one: `BlockKind::Cluster` (`BlockError::is_cluster`),
//! and `cluster` (not the rule's own kind) in the block totals and the Prometheus label. Without a started cluster a
//! cluster rule limits locally, so no store is needed.

use sentinel_runtime::clock::MockClock;
use sentinel_runtime::cluster::ClusterThreshold;
use sentinel_runtime::rules::{self, FlowRule, HotspotRule};
use sentinel_runtime::{entry, metrics, BlockKind, EntryBuilder};

#[test]
fn a_cluster_rules_blocks_count_as_cluster_and_a_plain_rules_as_flow() {
    let _clock = MockClock::install();
    rules::load_flow_rules(vec![
        FlowRule::qps("label-cluster", 2.0).cluster(ClusterThreshold::Global),
        FlowRule::qps("label-plain", 2.0),
    ])
    .unwrap();
    for resource in ["label-cluster", "label-plain"] {
        let admitted = (0..5).filter(|_| entry(resource).is_ok()).count();
        assert_eq!(admitted, 2, "{resource}");
    }
    let err = entry("label-cluster").unwrap_err();
    assert!(err.is_cluster(), "{err}");
    assert_eq!(
        err.kind(),
        BlockKind::Cluster,
        "one kind everywhere: cluster"
    );
    assert!(!entry("label-plain").unwrap_err().is_cluster());

    let cluster = metrics::snapshot("label-cluster")
        .unwrap()
        .block_total_by_rule;
    let plain = metrics::snapshot("label-plain")
        .unwrap()
        .block_total_by_rule;
    assert_eq!((cluster.cluster, cluster.flow), (4, 0), "{cluster:?}");
    assert_eq!((plain.cluster, plain.flow), (0, 4), "{plain:?}");
    assert!(cluster.by_rule().contains(&("cluster", 4)));
    rules::load_flow_rules(vec![]).unwrap();
}

#[test]
fn a_cluster_hotspot_rules_blocks_are_of_the_cluster_kind_and_name_the_parameter() {
    let _clock = MockClock::install();
    rules::load_hotspot_rules(vec![
        HotspotRule::qps("label-hot-cluster", 0, 2.0).cluster(ClusterThreshold::Global),
        HotspotRule::qps("label-hot-plain", 0, 2.0),
    ])
    .unwrap();
    let call = |resource| EntryBuilder::new(resource).param("v").enter();
    for resource in ["label-hot-cluster", "label-hot-plain"] {
        let admitted = (0..5).filter(|_| call(resource).is_ok()).count();
        assert_eq!(admitted, 2, "{resource}");
    }
    let err = call("label-hot-cluster").unwrap_err();
    assert_eq!(err.kind(), BlockKind::Cluster, "{err}");
    assert_eq!(err.param_index(), Some(0), "{err}");
    assert_eq!(
        call("label-hot-plain").unwrap_err().kind(),
        BlockKind::HotParam
    );
    let totals = metrics::snapshot("label-hot-cluster")
        .unwrap()
        .block_total_by_rule;
    assert_eq!((totals.cluster, totals.hotspot), (4, 0), "{totals:?}");
    rules::load_hotspot_rules(vec![]).unwrap();
}
