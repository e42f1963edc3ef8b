//! The etcd source's change messages: a [`Listener`] holding a watch of the document's key
//! (etcd's watch API, a stream of JSON messages), telling the watcher of each change and of
//! each new watch.

use std::time::Duration;

use super::etcd_api::{self, WatchEvent, WatchMessage};
use super::etcd_http::Endpoint;
use super::listener::{End, Listen, Listener, Turn};
use super::rule_source::Changes;

/// Watches `key` on the first of `endpoints` that answers (in turn after a failure), telling
/// `changes` of every change.
pub(super) fn start(
    endpoints: Vec<Endpoint>,
    key: Vec<u8>,
    timeout: Duration,
    changes: Changes,
) -> std::io::Result<Listener> {
    let watch = KeyWatch {
        request: etcd_api::watch_request(&key).to_string().into_bytes(),
        timeout,
    };
    Listener::start("sentinel-etcd-watch", watch, endpoints, changes)
}

struct KeyWatch {
    request: Vec<u8>,
    timeout: Duration,
}

impl Listen for KeyWatch {
    type Endpoint = Endpoint;

    /// Watches on `endpoint` until told to stop or the watch is lost.
    fn listen(&self, endpoint: &Endpoint, turn: &mut Turn<'_>) -> End {
        let stream = endpoint.stream(
            etcd_api::WATCH,
            &self.request,
            self.timeout,
            turn.stop_flag(),
        );
        let body = match stream {
            Ok((200, body)) => body,
            Ok(_) | Err(_) => return End::Lost,
        };
        let messages = serde_json::Deserializer::from_reader(body).into_iter::<WatchMessage>();
        for message in messages {
            if turn.stopping() {
                return End::Stopped;
            }
            let Ok(message) = message else {
                return End::Lost;
            };
            let told = match message.event() {
                WatchEvent::Created => turn.listening(),
                WatchEvent::Changed => turn.changed(),
                WatchEvent::Quiet => true,
                WatchEvent::Ended(_) => return End::Lost,
            };
            if !told {
                return End::Stopped;
            }
        }
        End::Lost
    }
}
