//! The tower layer in front of real axum, hyper and tonic servers on 127.0.0.1:0; the client
//! layer and the reqwest middleware in front of real downstreams (`outbound_*`).

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Tests that count the process's resources hold this alone; tests that make resources without
/// the mock clock's lock (which the counting tests hold too) hold it shared, so that no count
/// sees another test's resources appear. (tokio's lock: it is held across `.await`s.)
static RESOURCES: RwLock<()> = RwLock::const_new(());

/// For a test that makes resources without `MockClock::install()`.
async fn making_resources() -> RwLockReadGuard<'static, ()> {
    RESOURCES.read().await
}

/// For a test that counts every resource of the process (after `MockClock::install()`).
async fn counting_resources() -> RwLockWriteGuard<'static, ()> {
    RESOURCES.write().await
}

mod outbound_abandoned;
mod outbound_grpc;
mod outbound_reqwest;
mod outbound_support;
mod outbound_tower;
mod tower_clients;
mod tower_edges;
mod tower_layer;
mod tower_names;
mod tower_origin_flow;
mod tower_replies;
mod tower_service;
mod tower_standards;
mod tower_tonic;
