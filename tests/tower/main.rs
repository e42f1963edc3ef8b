//! The tower layer in front of real axum, hyper and tonic servers on 127.0.0.1:0; the client
//! layer and the reqwest middleware in front of real downstreams (`outbound_*`).

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
mod tower_tonic;
