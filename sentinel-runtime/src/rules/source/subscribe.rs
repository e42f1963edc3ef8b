//! The Redis source's change messages: a [`Listener`] subscribed to the document's channel,
//! telling the watcher of each message and of each new subscription.

use std::time::Duration;

use super::listener::{End, Listen, Listener, Turn, TICK};
use super::rule_source::Changes;

/// Subscribes to `channel` on the first of `nodes` that answers (in turn after a failure),
/// telling `changes` of every message.
pub(super) fn start(
    nodes: Vec<redis::Client>,
    channel: String,
    timeout: Duration,
    changes: Changes,
) -> std::io::Result<Listener> {
    let subscription = Subscription { channel, timeout };
    Listener::start("sentinel-rule-subscriber", subscription, nodes, changes)
}

struct Subscription {
    channel: String,
    timeout: Duration,
}

impl Listen for Subscription {
    type Endpoint = redis::Client;

    fn listen(&self, node: &redis::Client, turn: &mut Turn<'_>) -> End {
        match self.subscribed(node, turn) {
            Ok(()) => End::Stopped,
            Err(_) => End::Lost,
        }
    }
}

impl Subscription {
    /// Listens on `node` until told to stop (`Ok`) or the connection fails.
    fn subscribed(&self, node: &redis::Client, turn: &mut Turn<'_>) -> redis::RedisResult<()> {
        let mut conn = node.get_connection_with_timeout(self.timeout)?;
        conn.set_write_timeout(Some(self.timeout))?;
        let mut pubsub = conn.as_pubsub();
        pubsub.set_read_timeout(Some(self.timeout))?;
        pubsub.subscribe(&self.channel)?;
        pubsub.set_read_timeout(Some(TICK))?;
        if !turn.listening() {
            return Ok(());
        }
        loop {
            if turn.stopping() {
                return Ok(());
            }
            match pubsub.get_message() {
                Ok(_) => {
                    if !turn.changed() {
                        return Ok(());
                    }
                }
                Err(e) if e.is_timeout() => {}
                Err(e) => return Err(e),
            }
        }
    }
}
