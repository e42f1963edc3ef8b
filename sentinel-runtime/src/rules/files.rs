//! Rule files: a [`RuleSet`] in JSON, YAML or TOML (with our names or Sentinel Java's), read by
//! [`RuleSet::from_path`] and friends and kept loaded by [`watch_file`](super::watch_file).
//!
//! Everything here needs the default feature **`rule-files`** (serde, serde_json,
//! serde_yaml_ng, toml and notify); without it, [`RuleSet`], [`load`](super::load) and
//! [`current`](super::current) remain.
//!
//! # The format
//!
//! A file is a map of rule kinds, each a list of rules: `flow`, `circuit_breaker` (or
//! Sentinel's name `degrade`), `hotspot` (or Sentinel's name `paramFlow`), `system` and
//! `authority`. A kind left out loads as empty, so **loading a file replaces every kind** (a
//! file without `system` clears the process-wide system rules); an unknown kind is refused. An
//! empty file (or one of only comments) is refused; an explicitly empty set clears every rule:
//! `{}` (JSON, YAML) or `flow = []` (TOML, which has no way to write an empty map). A kind with
//! no value (`flow:` in YAML) is refused too: a file cut short must not clear rules.
//!
//! Every rule is read and checked on its own: a file with bad rules is refused with **every**
//! bad rule listed (kind, position, resource (system rules have none), the field as the file
//! spells it, and the line where the rule starts); a syntax error is refused with its own line
//! and column. Unknown fields are refused by name, never ignored, and so is a field given twice.
//!
//! ## Flow rules ([`FlowRule`])
//!
//! | field | value | default |
//! |---|---|---|
//! | `resource` | the resource's name | required |
//! | `metric` | `qps` (passes per window) or `concurrency` (calls inside at once) | `qps` |
//! | `threshold` | number, `0..=2147483647` | required |
//! | `window` | duration: the QPS window | `1s` |
//! | `sample_count` | buckets in the window, dividing its milliseconds | `10` |
//! | `strict` | `true`: any interval of the window's length holds at most `threshold` | `false` |
//! | `warm_up` | `{ period: <duration>, cold_factor: <number > 1> }` (`cold_factor` default 3) | none |
//! | `max_wait` | duration: pace calls instead of rejecting, queueing each at most this | none |
//! | `relate` | another resource whose passes per second are counted instead | none |
//!
//! A flow rule with `metric: adaptive_concurrency` is an adaptive concurrency limit
//! ([`FlowRule::adaptive_concurrency`]): its `threshold` is not used (write the initial limit,
//! e.g. `20`), and its settings are an optional map `adaptive` with the fields of
//! [`AdaptiveConcurrency`](super::AdaptiveConcurrency) (`initial_limit`, `min_limit`,
//! `max_limit`, `smoothing`, `queue_size`, `long_window`, `rtt_tolerance`, `sample_window` (a
//! duration), `min_samples`, `timeout` (a duration)), each defaulting to Gradient2's.
//!
//! ## Circuit-breaker rules ([`CircuitBreakerRule`])
//!
//! | field | value | default |
//! |---|---|---|
//! | `resource` | the resource's name | required |
//! | `strategy` | `{ type: error_ratio, threshold: <0..=1> }`, `{ type: error_count, threshold: <n> }` or `{ type: slow_request_ratio, max_rt: <duration>, threshold: <0..=1> }` | required |
//! | `recovery` | duration the breaker stays open before probing | required |
//! | `min_requests` | no decision below this many calls in the window | `5` |
//! | `window` | duration: the statistics window | `1s` |
//! | `sample_count` | buckets in the window | `10` |
//! | `probes` | calls admitted half-open | `1` |
//!
//! ## System rules ([`SystemRule`])
//!
//! Process-wide limits on inbound entries; each field is optional, at least one is required.
//!
//! | field | value |
//! |---|---|
//! | `cpu_usage` | `0..=1` of the process's cores (a fraction: `80` is refused) |
//! | `load_per_core` | the 1-minute load average per core, positive |
//! | `avg_rt` | duration, at most `1m`: the inbound calls' average response time |
//! | `concurrency` | inbound calls inside at once |
//! | `qps` | inbound passes per second |
//!
//! ## Authority rules ([`AuthorityRule`])
//!
//! | field | value | default |
//! |---|---|---|
//! | `resource` | the resource's name | required |
//! | `strategy` | `allow` (only the listed origins pass) or `deny` | required |
//! | `origins` | a list of origins (trimmed) | required |
//! | `allow_missing` | `true`: a call without an origin passes an allow-list | `false` |
//!
//! ```
//! # use sentinel_runtime::rules::{AuthorityRule, RuleSet, SystemRule};
//! let set = RuleSet::from_yaml(r#"
//! system:
//!   - { cpu_usage: 0.8, concurrency: 500 }
//! authority:
//!   - { resource: admin, strategy: allow, origins: [ops, billing] }
//! "#)?;
//! assert_eq!(set.system, vec![SystemRule::new().cpu_usage(0.8).concurrency(500)]);
//! assert_eq!(set.authority, vec![AuthorityRule::allow("admin", ["ops", "billing"])]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! ## Hotspot rules ([`HotspotRule`])
//!
//! | field | value | default |
//! |---|---|---|
//! | `resource` | the resource's name | required |
//! | `param_index` | which parameter of the entry, `0..8` (0 is the first) | required |
//! | `metric` | `qps` (calls per window, per value) or `concurrency` (calls inside, per value) | `qps` |
//! | `threshold` | number, `0..=2147483647`, per value | required |
//! | `burst` | extra calls a value may make at once from idle (QPS) | `0` |
//! | `window` | duration, whole milliseconds, at most `24h` (QPS) | `1s` |
//! | `max_wait` | duration, at most `1h`: wait for a value's slot instead of rejecting (QPS) | none |
//! | `strict` | `true`: any interval of the window's length admits at most `threshold` calls of a value (QPS; see [`HotspotRule::strict`]) | `false` |
//! | `capacity` | how many values the rule tracks, `1..=16777216` | `16384` |
//! | `exceptions` | a list of `{ value: "<string>", threshold: <number> }` | none |
//!
//! An exception's `value` is always a **string**, hashed as a `&str`: it matches a parameter
//! passed as a `&str` or a `String` ([`EntryBuilder::param`](crate::EntryBuilder::param)`("vip")`,
//! or an attribute argument of either type), never a number (`"42"` does not match `42u64`;
//! write `42` unquoted and the rule is refused). Only the values' hashes are kept, so a set whose
//! hotspot rules have exceptions cannot be written back (`to_json` and friends return an error).
//!
//! ```
//! # use sentinel_runtime::rules::{HotspotRule, RuleSet};
//! # use std::time::Duration;
//! let set = RuleSet::from_yaml(r#"
//! hotspot:
//!   - resource: api
//!     param_index: 0
//!     threshold: 10
//!     burst: 5
//!     exceptions: [{ value: vip-7, threshold: 100 }]
//!   - resource: login
//!     param_index: 1
//!     threshold: 5
//!     window: 1m
//!     max_wait: 200ms
//!     capacity: 50000
//!   - resource: reports
//!     param_index: 0
//!     metric: concurrency
//!     threshold: 2
//! "#)?;
//! assert_eq!(set.hotspot, vec![
//!     HotspotRule::qps("api", 0, 10.0).burst(5).exception("vip-7", 100.0),
//!     HotspotRule::qps("login", 1, 5.0)
//!         .window(Duration::from_secs(60))
//!         .throttle(Duration::from_millis(200))
//!         .capacity(50_000),
//!     HotspotRule::concurrency("reports", 0, 2),
//! ]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! The defaults are the builders' ([`FlowRule::qps`], [`CircuitBreakerRule::error_ratio`],
//! [`HotspotRule::qps`], ...).
//!
//! **Durations** are strings with a unit, `ns`, `us` (`µs`), `ms`, `s`, `m` (`min`), `h` or `d`:
//! `"500ms"`, `"1s"`, `"1.5s"`, `"1m"`, `"1h"`, `"1m30s"`; or an integer number of
//! milliseconds (`500`). Serialized rules write the largest exact unit.
//!
//! ## Example: YAML
//!
//! ```
//! # use sentinel_runtime::rules::{AuthorityRule, CircuitBreakerRule, FlowRule, RuleSet, SystemRule};
//! # use std::time::Duration;
//! let yaml = r#"
//! ## Rules for the shop.
//! flow:
//!   - resource: orders
//!     threshold: 100           # passes per second
//!   - resource: search
//!     threshold: 200
//!     warm_up: { period: 10s, cold_factor: 3 }
//!   - resource: mailer
//!     threshold: 20
//!     max_wait: 500ms          # pace calls, queueing each at most 500 ms
//!   - resource: report
//!     threshold: 10
//!     window: 1m
//!     sample_count: 60
//!     strict: true
//!   - resource: db
//!     metric: concurrency
//!     threshold: 8
//!   - resource: reads
//!     threshold: 50
//!     relate: writes
//! circuit_breaker:
//!   - resource: payments
//!     strategy: { type: error_ratio, threshold: 0.5 }
//!     min_requests: 10
//!     window: 10s
//!     recovery: 5s
//!     probes: 3
//!   - resource: inventory
//!     strategy: { type: slow_request_ratio, max_rt: 200ms, threshold: 0.6 }
//!     recovery: 30s
//!   - resource: ledger
//!     strategy: { type: error_count, threshold: 5 }
//!     recovery: 1m
//! system:                      # process-wide, on inbound entries
//!   - cpu_usage: 0.8           # of the process's cores, 0..=1
//!     avg_rt: 200ms
//!   - concurrency: 500
//!     qps: 2000
//!   - load_per_core: 1.5
//! authority:
//!   - resource: admin
//!     strategy: allow          # only these origins; a call without one is denied
//!     origins: [ops, billing]
//!   - resource: status
//!     strategy: allow
//!     origins: [ops]
//!     allow_missing: true      # ... unless this says otherwise
//!   - resource: search
//!     strategy: deny
//!     origins: [crawler]
//! "#;
//! let set = RuleSet::from_yaml(yaml)?;
//!
//! let (ms, secs) = (Duration::from_millis, Duration::from_secs);
//! assert_eq!(set.flow, vec![
//!     FlowRule::qps("orders", 100.0),
//!     FlowRule::qps("search", 200.0).warm_up(secs(10), 3.0),
//!     FlowRule::qps("mailer", 20.0).throttle(ms(500)),
//!     FlowRule::qps("report", 10.0).window(secs(60), 60).strict(true),
//!     FlowRule::concurrency("db", 8),
//!     FlowRule::qps("reads", 50.0).relate("writes"),
//! ]);
//! assert_eq!(set.circuit_breaker, vec![
//!     CircuitBreakerRule::error_ratio("payments", 0.5)
//!         .min_requests(10)
//!         .window(secs(10), 10)
//!         .recovery(secs(5))
//!         .probes(3),
//!     CircuitBreakerRule::slow_request_ratio("inventory", ms(200), 0.6).recovery(secs(30)),
//!     CircuitBreakerRule::error_count("ledger", 5).recovery(secs(60)),
//! ]);
//! assert_eq!(set.system, vec![
//!     SystemRule::new().cpu_usage(0.8).avg_rt(ms(200)),
//!     SystemRule::new().concurrency(500).qps(2000.0),
//!     SystemRule::new().load_per_core(1.5),
//! ]);
//! assert_eq!(set.authority, vec![
//!     AuthorityRule::allow("admin", ["ops", "billing"]),
//!     AuthorityRule::allow("status", ["ops"]).allow_missing_origin(true),
//!     AuthorityRule::deny("search", ["crawler"]),
//! ]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! ## Example: JSON
//!
//! JSON rule files may have `/* */` and `//` comments.
//!
//! ```
//! # use sentinel_runtime::rules::{AuthorityRule, CircuitBreakerRule, FlowRule, RuleSet, SystemRule};
//! # use std::time::Duration;
//! let json = r#"{
//!   // Rules for the shop.
//!   "flow": [
//!     { "resource": "orders", "threshold": 100 },
//!     { "resource": "search", "threshold": 200, "warm_up": { "period": "10s", "cold_factor": 3 } },
//!     { "resource": "mailer", "threshold": 20, "max_wait": "500ms" },
//!     { "resource": "report", "threshold": 10, "window": "1m", "sample_count": 60, "strict": true },
//!     { "resource": "db", "metric": "concurrency", "threshold": 8 },
//!     { "resource": "reads", "threshold": 50, "relate": "writes" }
//!   ],
//!   "circuit_breaker": [
//!     {
//!       "resource": "payments",
//!       "strategy": { "type": "error_ratio", "threshold": 0.5 },
//!       "min_requests": 10, "window": "10s", "recovery": "5s", "probes": 3
//!     },
//!     {
//!       "resource": "inventory",
//!       "strategy": { "type": "slow_request_ratio", "max_rt": "200ms", "threshold": 0.6 },
//!       "recovery": "30s"
//!     },
//!     { "resource": "ledger", "strategy": { "type": "error_count", "threshold": 5 }, "recovery": 60000 }
//!   ],
//!   "system": [
//!     { "cpu_usage": 0.8, "avg_rt": "200ms" },
//!     { "concurrency": 500, "qps": 2000 },
//!     { "load_per_core": 1.5 }
//!   ],
//!   "authority": [
//!     { "resource": "admin", "strategy": "allow", "origins": ["ops", "billing"] },
//!     { "resource": "status", "strategy": "allow", "origins": ["ops"], "allow_missing": true },
//!     { "resource": "search", "strategy": "deny", "origins": ["crawler"] }
//!   ]
//! }"#;
//! let set = RuleSet::from_json(json)?;
//! # let (ms, secs) = (Duration::from_millis, Duration::from_secs);
//! # assert_eq!(set.flow, vec![
//! #     FlowRule::qps("orders", 100.0),
//! #     FlowRule::qps("search", 200.0).warm_up(secs(10), 3.0),
//! #     FlowRule::qps("mailer", 20.0).throttle(ms(500)),
//! #     FlowRule::qps("report", 10.0).window(secs(60), 60).strict(true),
//! #     FlowRule::concurrency("db", 8),
//! #     FlowRule::qps("reads", 50.0).relate("writes"),
//! # ]);
//! assert_eq!(set.circuit_breaker[2], CircuitBreakerRule::error_count("ledger", 5).recovery(secs(60)));
//! # assert_eq!(set.circuit_breaker.len(), 3);
//! assert_eq!(set.system[0], SystemRule::new().cpu_usage(0.8).avg_rt(ms(200)));
//! # assert_eq!(set.system, vec![
//! #     SystemRule::new().cpu_usage(0.8).avg_rt(ms(200)),
//! #     SystemRule::new().concurrency(500).qps(2000.0),
//! #     SystemRule::new().load_per_core(1.5),
//! # ]);
//! assert_eq!(set.authority[0], AuthorityRule::allow("admin", ["ops", "billing"]));
//! # assert_eq!(set.authority, vec![
//! #     AuthorityRule::allow("admin", ["ops", "billing"]),
//! #     AuthorityRule::allow("status", ["ops"]).allow_missing_origin(true),
//! #     AuthorityRule::deny("search", ["crawler"]),
//! # ]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! ## Example: TOML
//!
//! ```
//! # use sentinel_runtime::rules::{AuthorityRule, CircuitBreakerRule, FlowRule, RuleSet, SystemRule};
//! # use std::time::Duration;
//! let toml = r#"
//! ## Rules for the shop.
//! [[flow]]
//! resource = "orders"
//! threshold = 100
//!
//! [[flow]]
//! resource = "search"
//! threshold = 200
//! warm_up = { period = "10s", cold_factor = 3 }
//!
//! [[flow]]
//! resource = "mailer"
//! threshold = 20
//! max_wait = "500ms"
//!
//! [[flow]]
//! resource = "report"
//! threshold = 10
//! window = "1m"
//! sample_count = 60
//! strict = true
//!
//! [[flow]]
//! resource = "db"
//! metric = "concurrency"
//! threshold = 8
//!
//! [[flow]]
//! resource = "reads"
//! threshold = 50
//! relate = "writes"
//!
//! [[circuit_breaker]]
//! resource = "payments"
//! strategy = { type = "error_ratio", threshold = 0.5 }
//! min_requests = 10
//! window = "10s"
//! recovery = "5s"
//! probes = 3
//!
//! [[circuit_breaker]]
//! resource = "inventory"
//! strategy = { type = "slow_request_ratio", max_rt = "200ms", threshold = 0.6 }
//! recovery = "30s"
//!
//! [[circuit_breaker]]
//! resource = "ledger"
//! strategy = { type = "error_count", threshold = 5 }
//! recovery = "1m"
//!
//! [[system]]
//! cpu_usage = 0.8
//! avg_rt = "200ms"
//!
//! [[system]]
//! concurrency = 500
//! qps = 2000
//!
//! [[system]]
//! load_per_core = 1.5
//!
//! [[authority]]
//! resource = "admin"
//! strategy = "allow"
//! origins = ["ops", "billing"]
//!
//! [[authority]]
//! resource = "status"
//! strategy = "allow"
//! origins = ["ops"]
//! allow_missing = true
//!
//! [[authority]]
//! resource = "search"
//! strategy = "deny"
//! origins = ["crawler"]
//! "#;
//! let set = RuleSet::from_toml(toml)?;
//! # let (ms, secs) = (Duration::from_millis, Duration::from_secs);
//! assert_eq!(set.flow[1], FlowRule::qps("search", 200.0).warm_up(secs(10), 3.0));
//! # assert_eq!(set.flow, vec![
//! #     FlowRule::qps("orders", 100.0),
//! #     FlowRule::qps("search", 200.0).warm_up(secs(10), 3.0),
//! #     FlowRule::qps("mailer", 20.0).throttle(ms(500)),
//! #     FlowRule::qps("report", 10.0).window(secs(60), 60).strict(true),
//! #     FlowRule::concurrency("db", 8),
//! #     FlowRule::qps("reads", 50.0).relate("writes"),
//! # ]);
//! # assert_eq!(set.circuit_breaker, vec![
//! #     CircuitBreakerRule::error_ratio("payments", 0.5)
//! #         .min_requests(10)
//! #         .window(secs(10), 10)
//! #         .recovery(secs(5))
//! #         .probes(3),
//! #     CircuitBreakerRule::slow_request_ratio("inventory", ms(200), 0.6).recovery(secs(30)),
//! #     CircuitBreakerRule::error_count("ledger", 5).recovery(secs(60)),
//! # ]);
//! assert_eq!(set.system[1], SystemRule::new().concurrency(500).qps(2000.0));
//! # assert_eq!(set.system, vec![
//! #     SystemRule::new().cpu_usage(0.8).avg_rt(ms(200)),
//! #     SystemRule::new().concurrency(500).qps(2000.0),
//! #     SystemRule::new().load_per_core(1.5),
//! # ]);
//! assert_eq!(set.authority[1], AuthorityRule::allow("status", ["ops"]).allow_missing_origin(true));
//! # assert_eq!(set.authority, vec![
//! #     AuthorityRule::allow("admin", ["ops", "billing"]),
//! #     AuthorityRule::allow("status", ["ops"]).allow_missing_origin(true),
//! #     AuthorityRule::deny("search", ["crawler"]),
//! # ]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! # Sentinel Java's names
//!
//! Rules written for Sentinel can be brought as they are: put Sentinel's `FlowRule.json` array
//! under `flow`, its `DegradeRule.json` array under `degrade`, `ParamFlowRule.json` under
//! `paramFlow`, `SystemRule.json` under `system` and `AuthorityRule.json` under `authority` (a
//! file whose top level is an array is refused, since it does not say its kind). A rule is read
//! with Sentinel's names when it has any field only Sentinel uses (`count`, `grade`,
//! `controlBehavior`, `timeWindow`, `paramIdx`, ...; for system rules `highestSystemLoad`,
//! `highestCpuUsage`, `avgRt`, `maxThread`, `resource` or `limitApp`; for authority rules
//! `limitApp`); it then uses Sentinel's names only (one of ours in it is refused by name). Both
//! namings may be mixed in one file, rule by rule.
//!
//! Flow rules (`flow`):
//!
//! | Sentinel | here |
//! |---|---|
//! | `resource` | `resource` (required) |
//! | `count` | `threshold` (required) |
//! | `grade`: `1` QPS (default), `0` thread count | `metric`: `qps`, `concurrency` |
//! | `controlBehavior`: `0` reject (default), `1` warm up, `2` rate limiter, `3` both | `warm_up` and/or `max_wait` (QPS rules only) |
//! | `warmUpPeriodSec` (default 10) | `warm_up.period` (cold factor 3, Sentinel's default) |
//! | `maxQueueingTimeMs` (default 500) | `max_wait` |
//! | `strategy`: `0` direct (default), `1` relate with `refResource`; `2` chain is refused | `relate` |
//! | `limitApp`: only `"default"`; origins are refused | |
//! | `clusterMode`: only `false`; `clusterConfig` is refused | |
//!
//! Degrade rules (`degrade` or `circuit_breaker`), each counted in one bucket over
//! `statIntervalMs` as Sentinel does:
//!
//! | Sentinel | here |
//! |---|---|
//! | `grade` `0` (default): `count` is the max response time in ms, `slowRatioThreshold` the ratio (default 1) | `slow_request_ratio` |
//! | `grade` `1`: `count` is the error ratio | `error_ratio` |
//! | `grade` `2`: `count` is the error count | `error_count` |
//! | `timeWindow`: seconds open (required) | `recovery` |
//! | `minRequestAmount` (default 5) | `min_requests` |
//! | `statIntervalMs` (default 1000) | `window` (one bucket) |
//! | `passCount`: deprecated in Sentinel, accepted and ignored | |
//!
//! System rules (`system`), from Sentinel's `SystemRule.json`. Sentinel writes `-1` for a limit
//! it leaves unset: **any negative value reads as unset** (the field stays `None`).
//!
//! | Sentinel | here |
//! |---|---|
//! | `highestCpuUsage` (0..1, kept as it is) | `cpu_usage` |
//! | `highestSystemLoad`: the whole machine's 1-minute load | `load_per_core`: divided by the cores when read (below) |
//! | `avgRt` (ms) | `avg_rt` |
//! | `maxThread` | `concurrency` |
//! | `qps` | `qps` |
//! | `resource`, `limitApp` (`"default"` only): accepted, unused (a system rule is process-wide) | |
//!
//! Sentinel's `highestSystemLoad` is the whole machine's load, ours is per core: it is divided
//! by [`std::thread::available_parallelism()`] (1 if unknown) of the process reading the file,
//! so `"highestSystemLoad": 8.0` read on 4 cores is `load_per_core: 2.0`. The file is read where
//! it is loaded: a file moved to a host with other cores gives another per-core limit, as
//! Sentinel's whole-machine limit meant.
//!
//! Authority rules (`authority`), from Sentinel's `AuthorityRule.json`:
//!
//! | Sentinel | here |
//! |---|---|
//! | `resource` | `resource` (required) |
//! | `limitApp`: origins separated by commas (required) | `origins`, split on commas and trimmed (`"a, b"` lists `a` and `b`) |
//! | `strategy`: `0` or `"White"` (default), `1` or `"Black"` (any case) | `allow`, `deny` |
//!
//! **A rule read with Sentinel's names keeps our semantics**: a call without an origin is
//! denied by an allow-list (`allow_missing` stays `false`), where Sentinel lets it through,
//! which bypasses the list. Sentinel has no field for `allow_missing`; write the rule with our
//! names to set it.
//!
//! ```
//! # use sentinel_runtime::rules::{AuthorityRule, RuleSet, SystemRule};
//! # use std::time::Duration;
//! let set = RuleSet::from_json(r#"{
//!   "system": [
//!     { "highestSystemLoad": 8.0, "highestCpuUsage": 0.9, "avgRt": -1, "maxThread": 500,
//!       "qps": -1 }
//!   ],
//!   "authority": [
//!     { "resource": "admin", "limitApp": "ops, billing", "strategy": 0 },
//!     { "resource": "search", "limitApp": "crawler", "strategy": "Black" }
//!   ]
//! }"#)?;
//! let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
//! assert_eq!(set.system, vec![
//!     SystemRule::new().load_per_core(8.0 / cores).cpu_usage(0.9).concurrency(500),
//! ]);
//! assert_eq!(set.authority, vec![
//!     AuthorityRule::allow("admin", ["ops", "billing"]),
//!     AuthorityRule::deny("search", ["crawler"]),
//! ]);
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! Param-flow rules (`paramFlow` or `hotspot`), Sentinel's `ParamFlowRule`:
//!
//! | Sentinel | here |
//! |---|---|
//! | `resource` | `resource` (required) |
//! | `paramIdx` (required; negative, from the end, is refused) | `param_index` |
//! | `count` | `threshold` (required) |
//! | `grade`: `1` QPS (default), `0` thread count | `metric`: `qps`, `concurrency` |
//! | `durationInSec` (default 1; QPS only) | `window` |
//! | `burstCount` (default 0; QPS only) | `burst` |
//! | `controlBehavior`: `0` reject (default), `2` rate limiter (QPS only); `1` is refused | `max_wait` with `2` |
//! | `maxQueueingTimeMs` (default 0) | `max_wait` |
//! | `paramFlowItemList`: `[{ object, count, classType }]` | `exceptions`: `object` is the value, `count` its threshold; `classType` must be `java.lang.String` (or `String`, or absent): other types are refused, since values are matched as strings |
//! | `limitApp`: only `"default"` | |
//! | `clusterMode`: only `false`; `clusterConfig` is refused | |
//!
//! ```
//! # use sentinel_runtime::rules::{HotspotRule, RuleSet};
//! # use std::time::Duration;
//! let set = RuleSet::from_json(r#"{
//!   "paramFlow": [
//!     { "resource": "api", "paramIdx": 0, "count": 10, "grade": 1, "durationInSec": 1,
//!       "burstCount": 5, "controlBehavior": 0, "limitApp": "default", "clusterMode": false,
//!       "paramFlowItemList": [{ "object": "vip-7", "count": 100, "classType": "java.lang.String" }] },
//!     { "resource": "login", "paramIdx": 1, "count": 5, "controlBehavior": 2,
//!       "maxQueueingTimeMs": 200 }
//!   ]
//! }"#)?;
//! assert_eq!(set.hotspot, vec![
//!     HotspotRule::qps("api", 0, 10.0).burst(5).exception("vip-7", 100.0),
//!     HotspotRule::qps("login", 1, 5.0).throttle(Duration::from_millis(200)),
//! ]);
//! let err = RuleSet::from_json(r#"{"paramFlow": [{ "resource": "api", "paramIdx": 0, "count": 1,
//!   "paramFlowItemList": [{ "object": "7", "count": 2, "classType": "int" }] }]}"#).unwrap_err();
//! assert_eq!(err.entries()[0].field.as_deref(), Some("paramFlowItemList[0].classType"));
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```
//!
//! `warmUpPeriodSec`, `maxQueueingTimeMs` and `slowRatioThreshold` are written by Sentinel's own
//! serialisers on every rule; where their behaviour is not selected they are accepted at their
//! defaults (10, 500, 1) and refused with any other value, which Sentinel would ignore.
//!
//! ```
//! # use sentinel_runtime::rules::{CircuitBreakerRule, FlowRule, RuleSet};
//! # use std::time::Duration;
//! let json = r#"/**
//!  * Copyright 1999-2019 Alibaba Group Holding Ltd.
//!  *
//!  * Licensed under the Apache License, Version 2.0 (the "License");
//!  */
//! {
//!   "flow": [
//!     { "resource": "orders", "count": 100.0, "grade": 1, "limitApp": "default",
//!       "strategy": 0, "controlBehavior": 0 },
//!     { "resource": "search", "count": 200, "controlBehavior": 1, "warmUpPeriodSec": 10 },
//!     { "resource": "mailer", "count": 20, "controlBehavior": 2, "maxQueueingTimeMs": 500 },
//!     { "resource": "db", "count": 8, "grade": 0 },
//!     { "resource": "reads", "count": 50, "strategy": 1, "refResource": "writes" }
//!   ],
//!   "degrade": [
//!     { "resource": "payments", "count": 0.5, "grade": 1, "timeWindow": 5,
//!       "minRequestAmount": 10, "statIntervalMs": 10000 },
//!     { "resource": "inventory", "count": 200.0, "grade": 0, "slowRatioThreshold": 0.6,
//!       "passCount": 0, "timeWindow": 30 },
//!     { "resource": "ledger", "count": 5, "grade": 2, "timeWindow": 60 }
//!   ]
//! }"#;
//! let set = RuleSet::from_json(json)?;
//!
//! let (ms, secs) = (Duration::from_millis, Duration::from_secs);
//! assert_eq!(set.flow, vec![
//!     FlowRule::qps("orders", 100.0),
//!     FlowRule::qps("search", 200.0).warm_up(secs(10), 3.0),
//!     FlowRule::qps("mailer", 20.0).throttle(ms(500)),
//!     FlowRule::concurrency("db", 8),
//!     FlowRule::qps("reads", 50.0).relate("writes"),
//! ]);
//! assert_eq!(set.circuit_breaker, vec![
//!     CircuitBreakerRule::error_ratio("payments", 0.5)
//!         .min_requests(10)
//!         .window(secs(10), 1)
//!         .recovery(secs(5)),
//!     CircuitBreakerRule::slow_request_ratio("inventory", ms(200), 0.6)
//!         .window(secs(1), 1)
//!         .recovery(secs(30)),
//!     CircuitBreakerRule::error_count("ledger", 5).window(secs(1), 1).recovery(secs(60)),
//! ]);
//!
//! // What is not supported is refused by name, with the line where its rule starts.
//! let err = RuleSet::from_json(r#"{
//!   "flow": [
//!     { "resource": "orders", "count": 100 },
//!     { "resource": "checkout", "count": 10, "strategy": 2, "refResource": "entry" }
//!   ]
//! }"#).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "invalid rule set: line 4, column 5: flow[1] (resource `checkout`): field `strategy` \
//!      is 2 (chain): limiting by calling chain is not supported (0 direct or 1 relate)"
//! );
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```

use std::fmt;
use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::authority::AuthorityRule;
use super::breaker::CircuitBreakerRule;
use super::flow::{FlowMetric, FlowRule};
use super::hotspot::{HotspotMetric, HotspotRule};
use super::node::{Node, NodeError};
use super::sentinel_format;
use super::set::{self, RuleSet, RuleSetError, RuleSetErrorEntry};
use super::system::SystemRule;

// ----- what the rule types' serde attributes refer to ------------------------------------------

/// Durations in rule files: a string with a unit (`"500ms"`, `"1s"`, `"1m30s"`) or integer
/// milliseconds.
pub(crate) mod duration {
    use std::fmt;
    use std::time::Duration;

    use serde::de::{self, Deserializer, Visitor};
    use serde::Serializer;

    const NANOS_PER_SEC: u128 = 1_000_000_000;

    /// Parses `"500ms"`, `"1.5s"`, `"1m30s"`, `"2 h"`: numbers (with an optional fraction),
    /// each followed by its unit.
    pub(crate) fn parse(text: &str) -> Result<Duration, String> {
        let bad = |why: &str| {
            Err(format!(
                "must be a duration such as \"500ms\", \"1s\", \"1m\" or \"1h\" (or integer \
                 milliseconds), got {text:?}: {why}"
            ))
        };
        let mut rest = text.trim();
        if rest.is_empty() {
            return bad("empty");
        }
        let mut nanos: u128 = 0;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            let number = &rest[..number_len];
            rest = rest[number_len..].trim_start();
            let unit_len = rest
                .find(|c: char| !c.is_alphabetic())
                .unwrap_or(rest.len());
            let unit = &rest[..unit_len];
            rest = rest[unit_len..].trim_start();
            let scale: u128 = match unit {
                "ns" => 1,
                "us" | "µs" | "μs" => 1_000,
                "ms" => 1_000_000,
                "s" | "sec" => NANOS_PER_SEC,
                "m" | "min" => 60 * NANOS_PER_SEC,
                "h" => 3_600 * NANOS_PER_SEC,
                "d" => 86_400 * NANOS_PER_SEC,
                "" if number.is_empty() => return bad("expected a number"),
                "" => return bad("a number needs a unit (ns, us, ms, s, m, h or d)"),
                _ => return bad("unknown unit (ns, us, ms, s, m, h or d)"),
            };
            let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
            if (whole.is_empty() && fraction.is_empty())
                || fraction.contains('.')
                || whole.len() > 30
                || fraction.len() > 18
            {
                return bad("not a number");
            }
            let whole: u128 = if whole.is_empty() {
                0
            } else {
                match whole.parse() {
                    Ok(n) => n,
                    Err(_) => return bad("not a number"),
                }
            };
            let mut part = match whole.checked_mul(scale) {
                Some(n) => n,
                None => return bad("too long"),
            };
            if !fraction.is_empty() {
                let digits: u128 = match fraction.parse() {
                    Ok(n) => n,
                    Err(_) => return bad("not a number"),
                };
                let denominator = 10u128.pow(fraction.len() as u32);
                let scaled = digits * scale;
                if !scaled.is_multiple_of(denominator) {
                    return bad("finer than a nanosecond");
                }
                part += scaled / denominator;
            }
            nanos = match nanos.checked_add(part) {
                Some(n) => n,
                None => return bad("too long"),
            };
        }
        match u64::try_from(nanos / NANOS_PER_SEC) {
            Ok(secs) => Ok(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32)),
            Err(_) => bad("too long"),
        }
    }

    /// The largest unit that is exact: `"500ms"`, `"10s"`, `"1m"`, `"90s"`, `"1h"`.
    pub(crate) fn format(d: Duration) -> String {
        let nanos = d.as_nanos();
        let units: [(u128, &str); 6] = [
            (3_600 * NANOS_PER_SEC, "h"),
            (60 * NANOS_PER_SEC, "m"),
            (NANOS_PER_SEC, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ];
        if nanos == 0 {
            return "0ms".to_owned();
        }
        for (scale, unit) in units {
            if nanos.is_multiple_of(scale) {
                return format!("{}{unit}", nanos / scale);
            }
        }
        format!("{nanos}ns")
    }

    struct DurationVisitor;

    impl Visitor<'_> for DurationVisitor {
        type Value = Duration;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration such as \"500ms\", \"1s\", \"1m\" or integer milliseconds")
        }

        fn visit_u64<E: de::Error>(self, ms: u64) -> Result<Duration, E> {
            Ok(Duration::from_millis(ms))
        }

        fn visit_i64<E: de::Error>(self, ms: i64) -> Result<Duration, E> {
            match u64::try_from(ms) {
                Ok(ms) => Ok(Duration::from_millis(ms)),
                Err(_) => Err(E::custom(format!(
                    "must be a positive duration, got {ms} ms"
                ))),
            }
        }

        fn visit_f64<E: de::Error>(self, ms: f64) -> Result<Duration, E> {
            Err(E::custom(format!(
                "must be integer milliseconds or a string with a unit (\"1.5s\"), got {ms}"
            )))
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
            parse(text).map_err(E::custom)
        }
    }

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(DurationVisitor)
    }

    /// The same, for an optional duration (`null` or absent: none).
    pub(crate) mod option {
        use super::*;

        struct OptionVisitor;

        impl<'de> Visitor<'de> for OptionVisitor {
            type Value = Option<Duration>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"500ms\", or null")
            }

            fn visit_none<E: de::Error>(self) -> Result<Option<Duration>, E> {
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Option<Duration>, E> {
                Ok(None)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<Duration>, D::Error> {
                super::deserialize(d).map(Some)
            }
        }

        pub(crate) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(&format(*d)),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            d.deserialize_option(OptionVisitor)
        }
    }
}

/// A hotspot rule's exceptions in files: a list of `{ value: "<string>", threshold: <number> }`.
/// Each value is hashed as a string (`&str`), so it matches a parameter passed as a `&str` or a
/// `String` (`.param("vip")`, an attribute argument of either type), never a number: `"42"`
/// does not match `42u64`. Only the hashes are kept, so a rule with exceptions cannot be written
/// back to a file.
pub(crate) mod hotspot_exceptions {
    use serde::de::Deserializer;
    use serde::ser::{self, Serializer};
    use serde::Deserialize;

    use crate::rules::hotspot::HotspotException;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Written {
        value: String,
        threshold: f64,
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<HotspotException>, D::Error> {
        let written = Vec::<Written>::deserialize(d)?;
        Ok(written
            .into_iter()
            .map(|w| HotspotException {
                value_hash: crate::param::hash(w.value.as_str()),
                threshold: w.threshold,
            })
            .collect())
    }

    pub(crate) fn serialize<S: Serializer>(
        _exceptions: &[HotspotException],
        _s: S,
    ) -> Result<S::Ok, S::Error> {
        Err(ser::Error::custom(
            "a hotspot rule's exceptions keep only the hashes of their values, which cannot be \
             written to a rule file",
        ))
    }
}

/// The builders' defaults, for fields a file leaves out.
pub(crate) fn default_flow_metric() -> FlowMetric {
    FlowMetric::Qps
}

pub(crate) fn default_flow_window() -> Duration {
    FlowRule::qps("", 0.0).window
}

pub(crate) fn default_flow_sample_count() -> u32 {
    FlowRule::qps("", 0.0).sample_count
}

/// Sentinel's default cold factor.
pub(crate) fn default_cold_factor() -> f64 {
    3.0
}

pub(crate) fn default_hotspot_metric() -> HotspotMetric {
    HotspotMetric::Qps
}

pub(crate) fn default_hotspot_window() -> Duration {
    HotspotRule::qps("", 0, 0.0).window
}

pub(crate) fn default_hotspot_capacity() -> usize {
    HotspotRule::qps("", 0, 0.0).capacity
}

fn breaker_defaults() -> CircuitBreakerRule {
    CircuitBreakerRule::error_count("", 1)
}

pub(crate) fn default_breaker_min_requests() -> u32 {
    breaker_defaults().min_requests
}

pub(crate) fn default_breaker_window() -> Duration {
    breaker_defaults().window
}

pub(crate) fn default_breaker_sample_count() -> u32 {
    breaker_defaults().sample_count
}

pub(crate) fn default_breaker_probes() -> u32 {
    breaker_defaults().probes
}

// ----- formats -----------------------------------------------------------------------------------

/// A rule file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
    Toml,
}

impl Format {
    /// The format a file's extension names: `.json`, `.yaml` / `.yml`, `.toml`.
    pub(crate) fn of(path: &Path) -> Result<Format, RuleSetError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("json") => Ok(Format::Json),
            Some("yaml" | "yml") => Ok(Format::Yaml),
            Some("toml") => Ok(Format::Toml),
            _ => Err(RuleSetError::whole(
                "the file's extension does not say its format: use .json, .yaml, .yml or .toml",
            )
            .in_file(path)),
        }
    }
}

/// The rule kinds a file can hold: their names in errors and their keys in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RuleKind {
    Flow,
    CircuitBreaker,
    Hotspot,
    System,
    Authority,
}

impl RuleKind {
    fn name(self) -> &'static str {
        match self {
            RuleKind::Flow => set::FLOW,
            RuleKind::CircuitBreaker => set::CIRCUIT_BREAKER,
            RuleKind::Hotspot => set::HOTSPOT,
            RuleKind::System => set::SYSTEM,
            RuleKind::Authority => set::AUTHORITY,
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            RuleKind::Flow => &["flow"],
            RuleKind::CircuitBreaker => &["circuit_breaker", "degrade"],
            RuleKind::Hotspot => &["hotspot", "paramFlow"],
            RuleKind::System => &["system"],
            RuleKind::Authority => &["authority"],
        }
    }

    fn of(name: &str) -> RuleKind {
        match name {
            set::FLOW => RuleKind::Flow,
            set::HOTSPOT => RuleKind::Hotspot,
            set::SYSTEM => RuleKind::System,
            set::AUTHORITY => RuleKind::Authority,
            _ => RuleKind::CircuitBreaker,
        }
    }
}

const EMPTY: &str = "the file has no rules (it is empty or only comments): an empty file never \
                     clears the rules in force; to clear them, load an explicitly empty set (`{}`, \
                     or `flow = []` in TOML)";

const TOP_LEVEL_LIST: &str = "the top level is a list, which does not say its kind: a rule file \
                              is a map of kinds, so put Sentinel's FlowRule.json list under \
                              `flow`, its DegradeRule.json list under `degrade`, \
                              ParamFlowRule.json under `paramFlow`, SystemRule.json under \
                              `system` and AuthorityRule.json under `authority`";

/// A parsed document: the kinds it lists, each as unread rules.
enum RawDoc {
    /// No document at all (an empty YAML file, or `null`).
    Empty,
    Fields(RawFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFields {
    #[serde(default, deserialize_with = "rule_list")]
    flow: Option<Vec<Node>>,
    #[serde(default, alias = "degrade", deserialize_with = "rule_list")]
    circuit_breaker: Option<Vec<Node>>,
    #[serde(default, alias = "paramFlow", deserialize_with = "rule_list")]
    hotspot: Option<Vec<Node>>,
    #[serde(default, deserialize_with = "rule_list")]
    system: Option<Vec<Node>>,
    #[serde(default, deserialize_with = "rule_list")]
    authority: Option<Vec<Node>>,
}

impl RawFields {
    fn lists_no_kind(&self) -> bool {
        self.flow.is_none()
            && self.circuit_breaker.is_none()
            && self.hotspot.is_none()
            && self.system.is_none()
            && self.authority.is_none()
    }
}

/// A kind's list of rules: a list (`null`, as from `flow:` with nothing after it, is refused).
fn rule_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Node>>, D::Error> {
    match Node::deserialize(d)? {
        Node::Seq(rules) => Ok(Some(rules)),
        Node::Null => Err(de::Error::custom(
            "a rule kind with no value: list its rules, or write `[]` to clear that kind",
        )),
        _ => Err(de::Error::custom("a rule kind must be a list of rules")),
    }
}

impl<'de> Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawDoc, D::Error> {
        struct DocVisitor;
        impl<'de> Visitor<'de> for DocVisitor {
            type Value = RawDoc;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a map of rule kinds (`flow`, `circuit_breaker`, `hotspot`, `system`, \
                     `authority`)",
                )
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_none<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<RawDoc, A::Error> {
                Err(de::Error::custom(TOP_LEVEL_LIST))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawDoc, A::Error> {
                RawFields::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawDoc::Fields)
            }
        }
        d.deserialize_any(DocVisitor)
    }
}

/// Reads a rule set from any serde format (with our names or Sentinel's, rule by rule), and
/// checks every rule: the error lists every bad rule (without lines: use
/// [`RuleSet::from_json`] and friends for those).
impl<'de> Deserialize<'de> for RuleSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RuleSet, D::Error> {
        match RawDoc::deserialize(d)? {
            RawDoc::Empty => Err(de::Error::custom(EMPTY)),
            RawDoc::Fields(fields) => {
                let (set, problems) = read_rules(fields);
                if problems.is_empty() {
                    Ok(set)
                } else {
                    let entries: Vec<String> =
                        problems.into_iter().map(|p| p.entry.to_string()).collect();
                    Err(de::Error::custom(entries.join("; ")))
                }
            }
        }
    }
}

// ----- reading rules -----------------------------------------------------------------------------

/// A bad rule, by kind and position in the file's list of that kind.
struct Problem {
    kind: RuleKind,
    index: usize,
    entry: RuleSetErrorEntry,
}

fn resource_of(node: &Node) -> Option<String> {
    match node.get("resource") {
        Some(Node::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

fn node_problem(kind: RuleKind, index: usize, resource: Option<String>, e: &NodeError) -> Problem {
    let message = match e.field() {
        Some(_) => e.message().to_owned(),
        None => format!("the rule {}", e.message()),
    };
    Problem {
        kind,
        index,
        entry: RuleSetErrorEntry {
            kind: Some(kind.name()),
            index: Some(index),
            resource,
            field: e.field(),
            message,
            ..RuleSetErrorEntry::whole("")
        },
    }
}

/// How a rule was written, to name its fields as the file does.
#[derive(Clone, Copy)]
enum Naming {
    Ours,
    Sentinel,
}

/// Reads one rule with our names or, if it has a field only Sentinel uses, Sentinel's.
fn read_rule<R>(
    kind: RuleKind,
    index: usize,
    node: Node,
    is_sentinel: fn(&Node) -> Option<&'static str>,
    ours: fn(Node) -> Result<R, NodeError>,
    sentinel: fn(Node) -> Result<R, NodeError>,
) -> Result<(R, Naming), Box<Problem>> {
    // A system rule is process-wide: it names no resource (Sentinel's unused `resource` aside).
    let resource = match kind {
        RuleKind::System => None,
        _ => resource_of(&node),
    };
    let (result, naming) = match is_sentinel(&node) {
        Some(key) => {
            let result = sentinel(node).map_err(|mut e| {
                if e.is_unknown_field() {
                    e.add_to_message(&format!(
                        "; this rule is read with Sentinel's names, since it has `{key}` (use \
                         one naming per rule)"
                    ));
                }
                e
            });
            (result, Naming::Sentinel)
        }
        None => (ours(node), Naming::Ours),
    };
    match result {
        Ok(rule) => Ok((rule, naming)),
        Err(e) => Err(Box::new(node_problem(kind, index, resource, &e))),
    }
}

/// Reads and checks every rule of every kind: the set of the rules that read, and every problem.
fn read_rules(fields: RawFields) -> (RuleSet, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut set = RuleSet::new();
    // For each rule read: its position in the file's list, and its naming.
    let mut flow_at = Vec::new();
    let mut breaker_at = Vec::new();
    for (i, node) in fields.flow.unwrap_or_default().into_iter().enumerate() {
        match read_rule(
            RuleKind::Flow,
            i,
            node,
            sentinel_format::sentinel_flow_key,
            FlowRule::deserialize,
            sentinel_format::flow_rule,
        ) {
            Ok((rule, naming)) => {
                set.flow.push(rule);
                flow_at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    for (i, node) in fields
        .circuit_breaker
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        match read_rule(
            RuleKind::CircuitBreaker,
            i,
            node,
            sentinel_format::sentinel_degrade_key,
            CircuitBreakerRule::deserialize,
            sentinel_format::degrade_rule,
        ) {
            Ok((rule, naming)) => {
                set.circuit_breaker.push(rule);
                breaker_at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    let mut hotspot_at = Vec::new();
    for (i, node) in fields.hotspot.unwrap_or_default().into_iter().enumerate() {
        match read_rule(
            RuleKind::Hotspot,
            i,
            node,
            sentinel_format::sentinel_param_flow_key,
            HotspotRule::deserialize,
            sentinel_format::param_flow_rule,
        ) {
            Ok((rule, naming)) => {
                set.hotspot.push(rule);
                hotspot_at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    let mut system_at = Vec::new();
    for (i, node) in fields.system.unwrap_or_default().into_iter().enumerate() {
        match read_rule(
            RuleKind::System,
            i,
            node,
            sentinel_format::sentinel_system_key,
            SystemRule::deserialize,
            sentinel_format::system_rule,
        ) {
            Ok((rule, naming)) => {
                set.system.push(rule);
                system_at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    let mut authority_at = Vec::new();
    for (i, node) in fields.authority.unwrap_or_default().into_iter().enumerate() {
        match read_rule(
            RuleKind::Authority,
            i,
            node,
            sentinel_format::sentinel_authority_key,
            authority_rule,
            sentinel_format::authority_rule,
        ) {
            Ok((rule, naming)) => {
                set.authority.push(rule);
                authority_at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    for (kind, j, e) in set::problems(&set) {
        let kind = RuleKind::of(kind);
        let (index, naming) = match kind {
            RuleKind::Flow => flow_at[j],
            RuleKind::CircuitBreaker => breaker_at[j],
            RuleKind::Hotspot => hotspot_at[j],
            RuleKind::System => system_at[j],
            RuleKind::Authority => authority_at[j],
        };
        let field = match (kind, naming) {
            (RuleKind::Flow, Naming::Sentinel) => sentinel_format::flow_field(e.field()),
            (RuleKind::CircuitBreaker, Naming::Sentinel) => {
                sentinel_format::degrade_field(&set.circuit_breaker[j], e.field())
            }
            (RuleKind::Flow, Naming::Ours) => match e.field() {
                "warm_up" => "warm_up.period",
                "cold_factor" => "warm_up.cold_factor",
                other => other,
            },
            (RuleKind::CircuitBreaker, Naming::Ours) => match e.field() {
                "threshold" => "strategy.threshold",
                "max_rt" => "strategy.max_rt",
                other => other,
            },
            (RuleKind::Hotspot, Naming::Sentinel) => sentinel_format::param_flow_field(e.field()),
            (RuleKind::Hotspot, Naming::Ours) => e.field(),
            (RuleKind::System, Naming::Sentinel) => sentinel_format::system_field(e.field()),
            (RuleKind::Authority, Naming::Sentinel) => sentinel_format::authority_field(e.field()),
            (RuleKind::System | RuleKind::Authority, Naming::Ours) => e.field(),
        };
        let mut entry = RuleSetErrorEntry::from_rule_error(kind.name(), index, &e);
        entry.field = Some(field.to_owned());
        if kind == RuleKind::System {
            entry.resource = None;
        }
        problems.push(Problem { kind, index, entry });
    }
    problems.sort_by_key(|p| (p.kind.name(), p.index));
    (set, problems)
}

/// Reads an authority rule with our names; origins are trimmed, as the constructors do.
fn authority_rule(node: Node) -> Result<AuthorityRule, NodeError> {
    let mut rule = AuthorityRule::deserialize(node)?;
    for origin in &mut rule.origins {
        *origin = origin.trim().to_owned();
    }
    Ok(rule)
}

// ----- text to rule set, with lines --------------------------------------------------------------

/// Parses and checks a rule file's text.
pub(crate) fn parse(text: &str, format: Format) -> Result<RuleSet, RuleSetError> {
    let stripped;
    let text = match format {
        Format::Json => {
            stripped = strip_json_comments(text)?;
            stripped.as_str()
        }
        Format::Yaml | Format::Toml => text,
    };
    if text.trim().is_empty() {
        return Err(RuleSetError::whole(EMPTY));
    }
    let fields = match parse_doc(text, format)? {
        RawDoc::Empty => return Err(RuleSetError::whole(EMPTY)),
        RawDoc::Fields(fields) if format == Format::Toml && fields.lists_no_kind() => {
            return Err(RuleSetError::whole(EMPTY))
        }
        RawDoc::Fields(fields) => fields,
    };
    let (set, problems) = read_rules(fields);
    if problems.is_empty() {
        return Ok(set);
    }
    let mut entries: Vec<RuleSetErrorEntry> = problems
        .into_iter()
        .map(|p| {
            let location = locate(text, format, p.kind, p.index);
            p.entry.at(location)
        })
        .collect();
    entries.sort_by_key(|e| (e.line, e.column));
    Err(RuleSetError::new(entries))
}

fn syntax_error(mut message: String, location: Option<(usize, usize)>) -> RuleSetError {
    if message.contains("duplicate field `circuit_breaker`") {
        message.push_str(" (`degrade` is another name for it: use one)");
    }
    if message.contains("duplicate field `hotspot`") {
        message.push_str(" (`paramFlow` is another name for it: use one)");
    }
    RuleSetError::new(vec![RuleSetErrorEntry::whole(message).at(location)])
}

/// Drops the " at line L column C" the parsers put in their messages (the entry has it).
fn without_location(message: String, line: usize, column: usize) -> String {
    message.replacen(&format!(" at line {line} column {column}"), "", 1)
}

fn parse_doc(text: &str, format: Format) -> Result<RawDoc, RuleSetError> {
    match format {
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let (line, column) = (e.line(), e.column());
            syntax_error(
                without_location(e.to_string(), line, column),
                Some((line, column)),
            )
        }),
        Format::Yaml => serde_yaml_ng::from_str(text).map_err(|e| {
            let location = e.location().map(|l| (l.line(), l.column()));
            let message = match location {
                Some((line, column)) => without_location(e.to_string(), line, column),
                None => e.to_string(),
            };
            syntax_error(message, location)
        }),
        Format::Toml => toml::from_str(text).map_err(|e| {
            let location = e.span().map(|span| line_column(text, span.start));
            syntax_error(e.message().trim_end().to_owned(), location)
        }),
    }
}

/// The line and column (from 1; the column counts characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset);
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Blanks out `/* */` and `//` comments (outside strings), keeping every newline so lines and
/// the positions on them stay where they were.
fn strip_json_comments(text: &str) -> Result<String, RuleSetError> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] != b'\r' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let start = i;
                out[i] = b' ';
                out[i + 1] = b' ';
                i += 2;
                loop {
                    if i + 1 >= bytes.len() {
                        let location = Some(line_column(text, start));
                        return Err(syntax_error(
                            "a `/*` comment is never closed with `*/`".to_owned(),
                            location,
                        ));
                    }
                    if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                        out[i] = b' ';
                        out[i + 1] = b' ';
                        i += 2;
                        break;
                    }
                    if bytes[i] != b'\n' && bytes[i] != b'\r' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    // Only whole comments (from an ASCII `/` to an ASCII newline or `*/`) became spaces.
    String::from_utf8(out)
        .map_err(|_| RuleSetError::whole("the file is not valid UTF-8 after its comments"))
}

/// Where rule `index` of `kind` starts in `text` (which parsed): found by reading the text again
/// and failing on purpose at that rule, so the format's parser says where it is.
fn locate(text: &str, format: Format, kind: RuleKind, index: usize) -> Option<(usize, usize)> {
    let probe = Probe {
        keys: kind.keys(),
        index,
    };
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let e = probe.deserialize(&mut de).err()?;
            json_value_start(text, e.line(), e.column())
        }
        Format::Yaml => {
            let e = probe
                .deserialize(serde_yaml_ng::Deserializer::from_str(text))
                .err()?;
            e.location().map(|l| (l.line(), l.column()))
        }
        Format::Toml => {
            let de = toml::Deserializer::parse(text).ok()?;
            let e = probe.deserialize(de).err()?;
            e.span().map(|span| line_column(text, span.start))
        }
    }
}

/// serde_json reports an error in a map after the whitespace that follows its `{`; the rule
/// starts at that `{`.
fn json_value_start(text: &str, line: usize, column: usize) -> Option<(usize, usize)> {
    if line == 0 {
        return None;
    }
    let line_start = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum::<usize>();
    let reported = floor_char_boundary(text, line_start + column);
    let bytes = text.as_bytes();
    for from in [reported, reported.saturating_sub(1)] {
        let mut i = from;
        while i > 0 && bytes[i - 1].is_ascii_whitespace() {
            i -= 1;
        }
        if i > 0 && bytes[i - 1] == b'{' {
            return Some(line_column(text, i - 1));
        }
    }
    Some((line, column.max(1)))
}

/// Reads a document, skipping everything but the list of `keys`, and fails at its item `index`.
struct Probe {
    keys: &'static [&'static str],
    index: usize,
}

impl<'de> DeserializeSeed<'de> for Probe {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Probe {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a rule file")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if self.keys.contains(&key.as_str()) {
                return map.next_value_seed(ProbeList(self.index));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

struct ProbeList(usize);

impl<'de> DeserializeSeed<'de> for ProbeList {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ProbeList {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of rules")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for _ in 0..self.0 {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element::<Stop>().map(drop)
    }
}

/// Fails on whatever value it is given: the error carries the value's position.
struct Stop;

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Stop, D::Error> {
        struct StopVisitor;
        impl Visitor<'_> for StopVisitor {
            type Value = Stop;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("nothing (locating a rule)")
            }
        }
        d.deserialize_any(StopVisitor)
    }
}

// ----- the public constructors --------------------------------------------------------------------

impl RuleSet {
    /// Reads and checks a rule set in JSON (with `/* */` and `//` comments allowed), with our
    /// names or Sentinel's: see [the format](crate::rules::files).
    ///
    /// Every rule is checked, as [`load`](crate::rules::load) would: the error lists every bad
    /// rule with the line where it starts, or the syntax error with its line and column.
    pub fn from_json(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Json)
    }

    /// Reads and checks a rule set in YAML, as [`RuleSet::from_json`] does.
    pub fn from_yaml(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Yaml)
    }

    /// Reads and checks a rule set in TOML, as [`RuleSet::from_json`] does.
    pub fn from_toml(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Toml)
    }

    /// Reads and checks a rule file, its format from its extension (`.json`, `.yaml`, `.yml`,
    /// `.toml`); the error names the file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<RuleSet, RuleSetError> {
        let path = path.as_ref();
        let format = Format::of(path)?;
        let text = fs::read_to_string(path)
            .map_err(|e| RuleSetError::whole(format!("cannot read the file: {e}")).in_file(path))?;
        parse(&text, format).map_err(|e| e.in_file(path))
    }

    /// The set as pretty JSON, in our names (durations as `"500ms"`).
    pub fn to_json(&self) -> Result<String, RuleSetError> {
        serde_json::to_string_pretty(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }

    /// The set as YAML, in our names.
    pub fn to_yaml(&self) -> Result<String, RuleSetError> {
        serde_yaml_ng::to_string(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }

    /// The set as TOML, in our names.
    pub fn to_toml(&self) -> Result<String, RuleSetError> {
        toml::to_string(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }
}

/// Reads, checks and loads a rule file: [`RuleSet::from_path`], then
/// [`load`](crate::rules::load). On any error nothing changes.
pub fn load_file(path: impl AsRef<Path>) -> Result<(), RuleSetError> {
    let path = path.as_ref();
    set::load(RuleSet::from_path(path)?).map_err(|e| e.in_file(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        let ms = Duration::from_millis;
        for (text, expected) in [
            ("500ms", ms(500)),
            ("1s", ms(1_000)),
            ("1.5s", ms(1_500)),
            (".5s", ms(500)),
            ("1m", ms(60_000)),
            ("1h", ms(3_600_000)),
            ("1d", ms(86_400_000)),
            ("1m30s", ms(90_000)),
            ("1h 30m", ms(5_400_000)),
            ("2 min", ms(120_000)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("7ns", Duration::from_nanos(7)),
            (" 0s ", Duration::ZERO),
        ] {
            assert_eq!(duration::parse(text), Ok(expected), "{text}");
        }
        for bad in [
            "",
            "5",
            "ms",
            "1x",
            "1.2.3s",
            "-1s",
            "1.0000000001ns",
            "1e3ms",
            "99999999999999999999d",
        ] {
            assert!(duration::parse(bad).is_err(), "{bad:?} should be refused");
        }
        for (d, text) in [
            (ms(500), "500ms"),
            (ms(1_000), "1s"),
            (ms(90_000), "90s"),
            (ms(60_000), "1m"),
            (ms(7_200_000), "2h"),
            (Duration::ZERO, "0ms"),
            (Duration::from_micros(1_500), "1500us"),
            (Duration::from_nanos(3), "3ns"),
        ] {
            assert_eq!(duration::format(d), text);
            assert_eq!(duration::parse(text), Ok(d));
        }
    }

    #[test]
    fn comments_are_blanked_outside_strings_only() {
        let text = "/* a\n * b */ {\"a\": \"x//y /* z */\", // c\n \"b\": 1 /* d */}\n// e";
        let out = strip_json_comments(text).unwrap();
        assert_eq!(
            out,
            "    \n        {\"a\": \"x//y /* z */\",     \n \"b\": 1        }\n    "
        );
        assert_eq!(out.len(), text.len());
        let escaped = r#"{"a": "q\"//not a comment"}"#;
        assert_eq!(strip_json_comments(escaped).unwrap(), escaped);
        let err = strip_json_comments("{\n /* open").unwrap_err();
        assert_eq!(err.entries()[0].line, Some(2));
    }

    #[test]
    fn rules_are_located_where_they_start_in_every_format() {
        let json = "{\n \"x\": 1,\n \"flow\": [\n  {\"a\": 1},\n\n  {\n \"b\": 2}, {\"c\":3}]}";
        let at = |i| locate(json, Format::Json, RuleKind::Flow, i);
        assert_eq!(
            (at(0), at(1), at(2), at(3)),
            (Some((4, 3)), Some((6, 3)), Some((7, 11)), None)
        );

        let yaml = "x: 1\ndegrade:\n  - a: 1\n\n  - b: 2\n    c: 3\n  - {e: 5}\n";
        let at = |i| locate(yaml, Format::Yaml, RuleKind::CircuitBreaker, i);
        assert_eq!(
            (at(0), at(1), at(2), at(3)),
            (Some((3, 5)), Some((5, 5)), Some((7, 5)), None)
        );

        let toml = "x = 1\n\n[[flow]]\na = 1\n\n[[flow]]\n# c\nb = 2\n";
        let at = |i| locate(toml, Format::Toml, RuleKind::Flow, i);
        assert_eq!((at(0), at(1), at(2)), (Some((3, 1)), Some((6, 1)), None));
    }

    #[test]
    fn every_bad_rule_is_listed_with_its_line_and_field() {
        let yaml = "\
flow:
  - resource: ok
    threshold: 1
  - resource: negative
    threshold: -1
  - resource: typo
    threshhold: 1
circuit_breaker:
  - resource: no-recovery
    strategy: { type: error_count, threshold: 3 }
  - resource: bad-rt
    strategy: { type: slow_request_ratio, max_rt: 0ms, threshold: 0.5 }
    recovery: 1s
";
        let err = RuleSet::from_yaml(yaml).unwrap_err();
        let found: Vec<(Option<usize>, Option<&str>, Option<&str>)> = err
            .entries()
            .iter()
            .map(|e| (e.line, e.resource.as_deref(), e.field.as_deref()))
            .collect();
        assert_eq!(
            found,
            vec![
                (Some(4), Some("negative"), Some("threshold")),
                (Some(6), Some("typo"), Some("threshhold")),
                (Some(9), Some("no-recovery"), Some("recovery")),
                (Some(11), Some("bad-rt"), Some("strategy.max_rt")),
            ]
        );
    }

    #[test]
    fn empty_documents_are_refused_and_explicit_empty_sets_accepted() {
        for (text, format) in [
            ("", Format::Json),
            ("  /* only a comment */ \n", Format::Json),
            ("null", Format::Json),
            ("", Format::Yaml),
            ("# only a comment\n", Format::Yaml),
            ("~", Format::Yaml),
            ("", Format::Toml),
            ("# only a comment\n", Format::Toml),
        ] {
            let err = parse(text, format).unwrap_err();
            assert!(err.to_string().contains("no rules"), "{text:?}: {err}");
        }
        for (text, format) in [
            ("{}", Format::Json),
            ("{}", Format::Yaml),
            ("flow: []", Format::Yaml),
            ("flow = []", Format::Toml),
        ] {
            assert_eq!(parse(text, format), Ok(RuleSet::new()), "{text:?}");
        }
        let err = parse("flow:\n", Format::Yaml).unwrap_err();
        assert!(err.to_string().contains("`[]`"), "{err}");
        let err = parse("[{\"resource\": \"a\", \"count\": 1}]", Format::Json).unwrap_err();
        assert!(err.to_string().contains("under `flow`"), "{err}");
    }

    #[test]
    fn sets_round_trip_through_every_format() {
        let mut set = RuleSet::new();
        set.flow = vec![
            FlowRule::qps("a", 10.5)
                .warm_up(Duration::from_secs(10), 2.0)
                .throttle(Duration::from_millis(20)),
            FlowRule::concurrency("b", 3),
            FlowRule::qps("c", 1.0)
                .window(Duration::from_secs(60), 6)
                .strict(true),
            FlowRule::qps("d", 1.0).relate("a"),
        ];
        set.circuit_breaker = vec![
            CircuitBreakerRule::slow_request_ratio("a", Duration::from_millis(150), 0.3)
                .recovery(Duration::from_secs(90)),
            CircuitBreakerRule::error_count("b", 4)
                .recovery(Duration::from_secs(1))
                .probes(2)
                .min_requests(3),
        ];
        set.system = vec![
            SystemRule::new()
                .cpu_usage(0.75)
                .avg_rt(Duration::from_micros(1_500)),
            SystemRule::new()
                .load_per_core(2.5)
                .concurrency(40)
                .qps(0.0),
        ];
        set.authority = vec![
            AuthorityRule::allow("a", ["x", "y"]).allow_missing_origin(true),
            AuthorityRule::deny("b", ["z"]),
        ];
        assert_eq!(RuleSet::from_json(&set.to_json().unwrap()), Ok(set.clone()));
        assert_eq!(RuleSet::from_yaml(&set.to_yaml().unwrap()), Ok(set.clone()));
        assert_eq!(RuleSet::from_toml(&set.to_toml().unwrap()), Ok(set.clone()));
        let empty = RuleSet::new();
        assert_eq!(
            RuleSet::from_toml(&empty.to_toml().unwrap()),
            Ok(empty.clone())
        );
        assert_eq!(RuleSet::from_json(&empty.to_json().unwrap()), Ok(empty));
        // The generic serde path reads the same.
        let generic: RuleSet = serde_json::from_str(&set.to_json().unwrap()).unwrap();
        assert_eq!(generic, set);
    }
}
