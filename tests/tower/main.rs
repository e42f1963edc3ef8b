//! The tower layer in front of real axum, hyper and tonic servers on 127.0.0.1:0.

mod tower_clients;
mod tower_edges;
mod tower_layer;
mod tower_names;
mod tower_origin_flow;
mod tower_replies;
mod tower_service;
mod tower_tonic;
