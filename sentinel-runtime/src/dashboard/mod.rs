//! A live dashboard served by the process itself (feature `dashboard`): every resource's
//! traffic, circuit breakers and rules on one page, on loopback, behind a token.
//!
//! ```no_run
//! use sentinel_runtime::dashboard::Dashboard;
//!
//! let dash = Dashboard::new()                 // defaults: 127.0.0.1:8719, a random 256-bit token
//!     .bind("127.0.0.1:0".parse()?)           // any free loopback port
//!     .rules_file("rules.yaml")               // rule edits are saved there (write + rename)
//!     .start()?;
//! println!("dashboard: {}", dash.url());      // http://127.0.0.1:PORT/#token=...
//! // ... the process runs; dropping the handle stops the server.
//! drop(dash);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Dashboard::start`] works inside a tokio runtime (the server is a task of that runtime) or
//! outside one (the server runs on a thread of its own with a current-thread runtime).
//!
//! # The page
//!
//! `GET /` serves one HTML page with its script and [uPlot](https://github.com/leeoniya/uPlot)
//! (MIT, vendored: the npm package's minified build), all embedded in the binary: no CDN, no
//! outbound request of any kind. It lists every resource (the 200 busiest when there are more;
//! its search box searches all of them on the server) with pass/s beside the QPS limit in
//! force, block/s, errors/s, average response time, concurrency and its limit, and the
//! circuit breaker's state; a chart of the selected resource's last 5 minutes; the process's
//! CPU usage and load (sampled while the page is open, with or without a system rule) and the
//! system rules; breaker transitions in words, with the figure that caused them; hotspot
//! rules' most blocked values, by parameter name; the events as they happen (at most one
//! block line per resource per second, the five most blocked; block lines and the others are
//! capped apart, so a flood of blocks never pushes a breaker event out); and an editor of the
//! rules in force that never loses typed text (a newer version arriving during an edit is
//! shown beside it with a diff; Save sends the version the edit started from, and a conflict
//! keeps the text).
//!
//! # The HTTP API
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/resources` | JSON array, one object per resource (the 200 busiest; with `?search=text`, the busiest 200 of all the resources whose name contains the text, ignoring case (a malformed `%` escape in it: `400`); headers `x-sentinel-resources-total` and `x-sentinel-resources-matched`): `resource`, `pass_qps`, `qps_limit` (the smallest QPS limit in force, per second, or `null`), `block_qps`, `error_qps`, `avg_rt_ms`, `concurrency`, `concurrency_limit`, `breaker` (`"closed"`, `"open"`, `"half_open"` or `null`), `pass_total`, `block_total`, `error_total`, `complete_total`, `block_total_by_rule`, `shadow_block_total` and `shadow_block_total_by_rule` (calls shadow rules would have blocked; none was); `blocked_per_s`, `blocked_by` (kind to blocks per second), `shadow_per_s`, all over the same interval of `rates_over_s` seconds (at least one, ending now), so the kinds add up to `blocked_per_s` (`null` until the resource has a reading a second old; `block_qps` is the last second's window instead); `limits`, every flow and hotspot limit (`kind`, `metric`: `qps` per second or `concurrency` inside, `limit`, `per_value` and the `param` of a hotspot rule, `shadow`) |
//! | `GET /api/resources/{name}/history` | the last 300 seconds, one point a second: `second`, `pass`, `block`, `error`, `avg_rt_ms`, `shadow_block` (calls the resource's shadow rules would have refused; none was) |
//! | `GET /api/system` | the process's CPU usage (`cpu_usage`, 0..=1 of `effective_cores`, read from `cpu_source`) and load per core, sampled once a second while the page asks (else what the system rules' sampler read), inbound statistics, the system rules, breaker transitions since start (`breaker_transitions`) and the latest 20 (`last_transitions`), what rule watchers said lately (`rule_notices`: the latest 32 `rule_source` events' `seq`, `source` and `words`), and each hotspot rule's most blocked values in the last minute (`hotspot`: see below) |
//! | `GET /api/rules` | the rules in force in the rule-file JSON format ([`rules::files`](crate::rules::files)), with an `ETag`; with a [`rules_source`](Dashboard::rules_source), the source's document and its version (`ETag: "v<version>"`; with no document yet, the rules in force and `"v0"`), `503` if the source cannot be read; with `Accept: application/yaml`, the stored document as it is written (the source's document, or the rules file when it holds the rules in force), byte for byte with its own `Content-Type` (`application/yaml`, `application/json` or `application/toml`), comments included; with nothing stored, the rules in force as YAML (as JSON if `Accept` also names JSON) |
//! | `PUT /api/rules` | a rule set (rule-file JSON; YAML with `Content-Type: application/yaml`, TOML with `application/toml`) with `If-Match: <ETag>`, checked before the body is read into rules: `200` with `"applied"` (in force in this process when answered) and `"written"` (saved to the rules file, as sent when it is in the file's format, so a YAML document keeps its comments; with a rules source, written to it for every instance watching it to apply; `"applied": false, "written": true` when this process has not put it in force within 2 s: it does not watch the source), `422` refused with each bad field (nothing applied; also a document past the [budget on what it expands to](crate::rules::files)), `409` the ETag is stale, `428` no `If-Match` (or an empty one, or `*`, which is no version), `503` the rules source cannot be reached (nothing written) |
//! | `GET /api/fleet` | the fleet as a started cluster's store last showed it ([`cluster::fleet`](crate::cluster)), bounded (at most 100 other instances, 100 resources, about 1 MiB): `instances` (this one first: `id`, `name`, `host`, `pid`, `this_instance`, `rules_version`: the rule document's version in force there, or null without a watcher, `rules_fingerprint`, `other_rules`: other rules than this instance's, `cluster_state`, `last_seen_ms`, `pass_qps`, `block_qps`, `blocked_by`: kind to blocks/s, `breakers_open`, `ejected`: `{resource, endpoint}`, `shadow_would_block_qps`), `rules` (`version`: the newest, `instances_on`, `lagging`: names, `lagging_total`), `resources` (the fleet's `pass_qps` and `block_qps` summed over the `instances` reporting it, and its `global_limit` per second when a global cluster rule is in force here; `resources_total`), `count` (instances live in the store), `shown`, `incomplete`, `unreadable` (entries skipped), `instances_left_out`, `reading` (only this instance yet), `cluster` (this instance's state, the instances live, and `refusals`: the shared limits' refusals by cause, `budget_spent`, `lost_window`, `fallback_share`), `available` (false without the `redis` feature or before the first summary) and `reachable` (whether the store answers now) |
//! | `GET /api/events` | server-sent events: `blocks` (per second, by resource and rule kind), `breaker` (every transition, with `words`: what happened and the figure that caused it), `rule_load` (loads and refusals, by kind), `rule_source` (what a rule watcher said, numbered by `seq`: its `source` holds no document, cannot be reached, or refused a document; a document removed every rule; in `words`), `rules_saved` / `rules_refused` (edits made here) |
//!
//! History is kept for the 200 busiest resources, 300 points of one second each, in a bounded
//! ring per resource; a resource that leaves the 200 loses its ring (its last minute is still
//! read from its own statistics). Prometheus remains the long-term store.
//!
//! # Access
//!
//! * **Every path but the page needs the token in a header**: `Authorization: Bearer
//!   <token>` or `X-Sentinel-Token: <token>`; without it, `401`. The page (`/`) and its
//!   assets hold no data and are served without it.
//! * **The token is in the link's fragment** ([`DashboardHandle::url`]:
//!   `http://127.0.0.1:PORT/#token=...`), which no server sees. The page moves it to
//!   `sessionStorage` (per origin, so per port), removes it from the address bar, and sends
//!   it in a header on every call, the event stream included (read with `fetch`).
//! * **No cookie is a credential**: browsers send a host's cookies to every port of it, so
//!   any server on the same host would receive it. A cookie alone, whatever its value, gets
//!   `401` on every `/api/` path; the dashboard sets none.
//! * **Never in a query string**, where logs and histories keep it: a request with a `token`
//!   parameter, however spelled (`?TOKEN=`, `?%74oken=`), gets `400`. The builder's `Debug`
//!   form shows `token: "…"`. Only `PUT` changes anything; a `GET` never does (and a forged
//!   cross-site request cannot add a header).
//! * **DNS rebinding**: a `Host` header other than the bound address, `localhost`,
//!   `127.0.0.1` or `[::1]` (with the bound port), or a host added with
//!   [`Dashboard::allow_host`] (any port), gets `403`.
//! * Unknown paths `404`, known paths with another method `405`.
//! * Every answer has `Content-Security-Policy: default-src 'self'`, `X-Content-Type-Options:
//!   nosniff`, `X-Frame-Options: DENY` and `Referrer-Policy: no-referrer`; the API and the page
//!   have `Cache-Control: no-store`.
//! * It binds loopback only, unless [`Dashboard::allow_remote`] is called: the dashboard speaks
//!   plain HTTP, so put TLS in front of it (a reverse proxy) before exposing it.
//!
//! # Limits
//!
//! The dashboard runs inside the service's process, so it bounds what it may take from it:
//! at most [`Dashboard::max_connections`] connections (64; past the cap a connection not in a
//! request is closed: first those that never sent the token, a half-sent request before a
//! silent connection, the longest waiting first, then the token's own; the new one is closed
//! when all are in requests, so clients without the token cannot lock the user out), a
//! [`header_timeout`](Dashboard::header_timeout) (5 s from a request's first byte to the end
//! of its headers, and for a `PUT`'s body) and an [`idle_timeout`](Dashboard::idle_timeout)
//! (20 s without a request). Event streams are exempt from both timeouts and from being
//! closed to make room, and have a cap of their own, [`Dashboard::max_event_streams`] (16;
//! one more gets `503`). Idle sockets held against the dashboard's port cannot use up the
//! process's file descriptors.
//!
//! # Cost
//!
//! A sampler reads every resource's statistics once a second (on the server's runtime, never
//! on the call path): the guarded call costs the same with the dashboard on. Memory is bounded
//! by the number of tracked resources (200 rings of 300 points, about 12 KB each), whatever
//! the number of resources. `benches/dashboard_cost.rs` measures both.
//!
//! # Hotspot rules' most blocked values
//!
//! Each hotspot rule keeps the values it blocked most, in two summaries of at most 16 values
//! (the current clock minute's and the previous one's; space-saving: exact while a minute sees
//! at most 16 distinct blocked values, else an upper bound with its `error`), written only when
//! a call is blocked (never on an admitted call, and never waiting: a block that finds the
//! summary busy is counted in `missed` instead). `GET /api/system`'s `hotspot` lists, per rule,
//! `resource`, `param_index`, `param` (the parameter's name where the resource's parameters
//! are named, else null), `threshold`, `missed` and `top_blocked`: `[{ value, value_hash,
//! blocked, error }]`, most blocked first. The call path keeps only values' hashes, so `value`
//! is the text where it is known: a value the rule lists as an exception with a text, or a value
//! the tower layer supplied (a client's address, a custom parameter's string), whose text the
//! layer hands over when it blocks a request (a bounded table of at most 4 096 texts); otherwise
//! it is null and `value_hash` (16 hex digits) identifies it (values given in code by
//! `EntryBuilder::param` are typed, not text).
//!
//! A hotspot exception is shown with its value's text where the text is known (rule files,
//! [`HotspotRule::exception_str`](crate::rules::HotspotRule::exception_str)); one given in code
//! only by its hash ([`HotspotRule::exception`](crate::rules::HotspotRule::exception)) is shown
//! as `{ "value_hash": "<16 hex digits>", "hash_key": "<8 hex digits>", "threshold": .. }`,
//! which a `PUT` to the same process reads back unchanged; a `hash_key` of another process
//! (the hash key is drawn at random per process) gets a `422` naming `value_hash`.

mod api;
mod auth;
mod conn;
mod error;
mod events;
mod fleet_api;
mod handle;
mod history;
mod load;
mod page;
mod rates;
mod rules_api;
mod save;
mod server;
mod settings;
mod source_api;
mod words;

pub use error::DashboardError;
pub use handle::DashboardHandle;
pub use settings::{
    Dashboard, DEFAULT_ADDR, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_EVENT_STREAMS,
};
