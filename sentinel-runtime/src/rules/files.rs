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
//! spells it, and the field's line and column; a field the file lacks, at its rule's line),
//! the first 100 in file order and the others counted; a syntax error is refused with its own
//! line and column. Unknown fields are refused by name, never ignored, and so is a field given
//! twice. A file nested more than 64 levels deep is refused before it is parsed.
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
//! `max_limit`, `smoothing`, `queue_size`, `rtt_tolerance`, `sample_window` (a duration),
//! `min_samples`, `timeout` (a duration), `min_rtt_interval` (a duration), `min_rtt_jitter`,
//! `probe_limit`, `probe_samples`), each defaulting to the struct's default.
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
//! | `origins` | a list of origins (trimmed; matched against a call's origin, also trimmed, ignoring ASCII case) | required |
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
//! write `42` unquoted and the rule is refused). The text is kept, so the set writes back as it
//! was read. An exception given in code by a value of another type
//! ([`HotspotRule::exception`]) keeps only its hash, and is written
//! `{ value_hash: "<16 hex digits>", hash_key: "<8 hex digits>", threshold: <number> }`: the
//! hash key is drawn at random per process, so only the process that wrote it reads it back;
//! any other refuses it, naming `value_hash` (give the `value` as text instead; for a string in
//! code use [`HotspotRule::exception_str`], which keeps the text).
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
//! `"500ms"`, `"1s"`, `"1.5s"`, `"1m"`, `"1h"`, `"1m30s"`, `"1_500ms"`; or an integer number of
//! milliseconds (`500`). The attribute reads the same strings the same way (one grammar); a
//! duration beyond the range is refused, never wrapped. Serialized rules write the largest
//! exact unit.
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
//! | `controller` (Sentinel's shaping object, written as `null` by its datasource tests): ignored | |
//!
//! Degrade rules (`degrade` or `circuit_breaker`), each counted in one bucket over
//! `statIntervalMs` as Sentinel does:
//!
//! | Sentinel | here |
//! |---|---|
//! | `grade` `0` (default): `count` is the max response time in ms (rounded to whole ms), `slowRatioThreshold` the ratio (default 1) | `slow_request_ratio` (the ratio converted: below) |
//! | `grade` `1`: `count` is the error ratio | `error_ratio` (converted: below) |
//! | `grade` `2`: `count` is the error count | `error_count` (converted: below) |
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
//! | `count` (whole calls: the fraction is dropped, as Sentinel does) | `threshold` (required) |
//! | `grade`: `1` QPS (default), `0` thread count | `metric`: `qps`, `concurrency` |
//! | `durationInSec` (default 1; QPS only) | `window` |
//! | `burstCount` (default 0; QPS only; with `controlBehavior` `2` only 0, which Sentinel ignores there) | `burst` |
//! | `controlBehavior`: `0` reject (default), `2` rate limiter (QPS only); `1` is refused | `2`: a threshold per millisecond and `max_wait` (converted: below) |
//! | `maxQueueingTimeMs` (default 0) | `max_wait` (converted: below) |
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
//!     // The rate limiter: 5 a second is one call each 200 ms from the first call.
//!     HotspotRule::qps("login", 1, 5.0 / 1_000.0)
//!         .window(Duration::from_millis(1))
//!         .throttle(Duration::from_millis(200) - Duration::from_nanos(1)),
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
//! ## What Sentinel's fields mean here
//!
//! A rule read with Sentinel's names does what it did in Sentinel. Where our rule counts
//! differently, the converter changes the value so that the behaviour stays Sentinel's; every
//! such field is here:
//!
//! | Sentinel | Sentinel's meaning | read as |
//! |---|---|---|
//! | degrade `grade` `2`, `count` | opens when the errors are **more than** `count` | `error_count: floor(count) + 1` (ours opens at the threshold); `count` up to 4294967294 |
//! | degrade `grade` `1`, `count` | opens when the error ratio is **more than** `count` | `error_ratio`: the least `f64` above `count` (`0.5` reads as `0.5000000000000001`: both divide the same counts, so they decide alike); `1.0`, which never opens in Sentinel, is refused |
//! | degrade `grade` `0`, `slowRatioThreshold` | opens when the slow ratio is **more than** it, or equal at exactly 1 | below 1: the least `f64` above it; 1: kept |
//! | degrade `grade` `0`, `count` | max response time: `Math.round(count)` ms, a call slower than it is slow | `max_rt` in whole ms (ours times calls in microseconds, Sentinel in whole ms) |
//! | paramFlow `count`, `paramFlowItemList[].count` | whole calls (`(long) count`, `Integer`) | the fraction dropped |
//! | paramFlow `controlBehavior` `2` | a value's first call passes at once, each next one `durationInSec / count` later (a burst of one) | `threshold: count / (1000 x durationInSec)` per `window: 1ms` (and each exception's likewise): the same spacing, one call from idle (above 1000 calls a second, one millisecond's worth); Sentinel rounds the spacing to whole ms, here it is exact to the nanosecond |
//! | paramFlow `maxQueueingTimeMs` | waits while the wait is **less than** it | `max_wait`: one nanosecond less |
//! | system `highestSystemLoad` | the whole machine's load | divided by the cores (above) |
//! | authority `limitApp` | origins separated by commas | split and trimmed (above) |
//!
//! Sentinel's writers give some values differently; in Sentinel's names (only):
//!
//! * **Numbers may be strings**, as fastjson reads them: `"count": "0.0"` reads as `0.0`
//!   (a string holding a finite number, spaces around it allowed).
//! * **Fields with no meaning here are ignored**: `controller` (flow rules), `passCount`
//!   (degrade rules, deprecated in Sentinel), `resource` and `limitApp` `"default"` on system
//!   rules, and `regex` when `false` (Sentinel 1.8.7 writes it on every rule; `true`, a resource
//!   name as a regular expression, is refused).
//!
//! Our own names stay strict: a number is a number, and a field we do not know is refused.
//!
//! Where the behaviour itself differs by design, it is not converted: a QPS limit admits
//! exactly the threshold (Sentinel's concurrent check-then-add may admit more), a hotspot value
//! is limited by GCRA (a burst of `count + burstCount` from idle, then `count` per
//! `durationInSec` evenly spaced) instead of Sentinel's bucket refilled once per duration, and
//! warm-up admits at least one call a second where Sentinel's cold rate would admit none.
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
//! // Sentinel opens above `count`, ours at the threshold: each reads as the least value above.
//! assert_eq!(set.circuit_breaker, vec![
//!     CircuitBreakerRule::error_ratio("payments", 0.5_f64.next_up())
//!         .min_requests(10)
//!         .window(secs(10), 1)
//!         .recovery(secs(5)),
//!     CircuitBreakerRule::slow_request_ratio("inventory", ms(200), 0.6_f64.next_up())
//!         .window(secs(1), 1)
//!         .recovery(secs(30)),
//!     CircuitBreakerRule::error_count("ledger", 6).window(secs(1), 1).recovery(secs(60)),
//! ]);
//!
//! // What is not supported is refused by name, at the field's line and column.
//! let err = RuleSet::from_json(r#"{
//!   "flow": [
//!     { "resource": "orders", "count": 100 },
//!     { "resource": "checkout", "count": 10, "strategy": 2, "refResource": "entry" }
//!   ]
//! }"#).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "invalid rule set: line 4, column 44: flow[1] (resource `checkout`): field `strategy` \
//!      is 2 (chain): limiting by calling chain is not supported (0 direct or 1 relate)"
//! );
//! # Ok::<(), sentinel_runtime::rules::RuleSetError>(())
//! ```

use std::fmt;
use std::fs;
use std::path::Path;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::authority::AuthorityRule;
use super::circuit_breaker::CircuitBreakerRule;
use super::flow::{FlowMetric, FlowRule};
use super::format::Format;
use super::hotspot::{HotspotMetric, HotspotRule};
use super::locate::{self, Located, Pos};
use super::node::{Node, NodeError};
use super::report;
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

    /// Parses `"500ms"`, `"1.5s"`, `"1m30s"`, `"2 h"`, `"1d"`, `"1_500ms"`: the attribute's
    /// grammar (`sentinel_duration`), one implementation for both, every step checked.
    pub(crate) fn parse(text: &str) -> Result<Duration, String> {
        sentinel_duration::parse(text).map_err(|why| {
            format!(
                "must be a duration such as \"500ms\", \"1s\", \"1m30s\" or \"1h\" (or integer \
                 milliseconds), got {text:?}: {why}"
            )
        })
    }

    /// The largest unit that is exact: `"500ms"`, `"10s"`, `"1m"`, `"90s"`, `"1h"`.
    pub(crate) fn format(d: Duration) -> String {
        sentinel_duration::format(d)
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
/// does not match `42u64`. An exception known only by its hash (given in code with
/// [`HotspotRule::exception`](crate::rules::HotspotRule::exception)) is written as
/// `{ value_hash: "<16 hex digits>", hash_key: "<8 hex digits>", threshold }`; it reads back in
/// the process that wrote it (same `hash_key`), and is refused, naming `value_hash`, by any
/// other (the hash key is drawn at random per process).
pub(crate) mod hotspot_exceptions {
    use serde::de::{self, Deserializer};
    use serde::ser::Serializer;
    use serde::{Deserialize, Serialize};

    use crate::rules::hotspot::HotspotException;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Read {
        #[serde(default)]
        value: Option<String>,
        #[serde(default)]
        value_hash: Option<String>,
        #[serde(default)]
        hash_key: Option<String>,
        threshold: f64,
    }

    #[derive(Serialize)]
    struct Written<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        value_hash: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        hash_key: Option<String>,
        threshold: f64,
    }

    fn read(r: Read) -> Result<HotspotException, String> {
        match (r.value, r.value_hash) {
            (Some(value), None) => {
                if r.hash_key.is_some() {
                    return Err("an exception with a `value` takes no `hash_key`".to_owned());
                }
                Ok(HotspotException::from_str_value(&value, r.threshold))
            }
            (None, Some(hash)) => {
                let value_hash = u64::from_str_radix(&hash, 16)
                    .ok()
                    .filter(|_| hash.len() == 16)
                    .ok_or_else(|| {
                        format!("`value_hash` is `{hash}`: expected 16 hexadecimal digits")
                    })?;
                let ours = format!("{:08x}", crate::param::key_check());
                if r.hash_key.as_deref() != Some(ours.as_str()) {
                    return Err(format!(
                        "`value_hash` was written by another process (its `hash_key` is {}, this \
                         process's is `{ours}`): values are hashed with a key drawn per process, \
                         so give the exception's `value` as text instead",
                        r.hash_key
                            .map_or_else(|| "missing".to_owned(), |k| format!("`{k}`")),
                    ));
                }
                Ok(HotspotException {
                    value_hash,
                    threshold: r.threshold,
                    value: None,
                })
            }
            (Some(_), Some(_)) => {
                Err("an exception has either a `value` or a `value_hash`, not both".to_owned())
            }
            (None, None) => Err("an exception needs a `value`".to_owned()),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<HotspotException>, D::Error> {
        Vec::<Read>::deserialize(d)?
            .into_iter()
            .map(|r| read(r).map_err(de::Error::custom))
            .collect()
    }

    pub(crate) fn serialize<S: Serializer>(
        exceptions: &[HotspotException],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let key = format!("{:08x}", crate::param::key_check());
        s.collect_seq(exceptions.iter().map(|e| match &e.value {
            Some(value) => Written {
                value: Some(value),
                value_hash: None,
                hash_key: None,
                threshold: e.threshold,
            },
            None => Written {
                value: None,
                value_hash: Some(format!("{:016x}", e.value_hash)),
                hash_key: Some(key.clone()),
                threshold: e.threshold,
            },
        }))
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

/// The format a file's extension names (`.json`, `.yaml` / `.yml`, `.toml`), or an error that
/// says which extensions are known.
pub(crate) fn format_of(path: &Path) -> Result<Format, RuleSetError> {
    Format::of(path).ok_or_else(|| {
        RuleSetError::whole(
            "the file's extension does not say its format: use .json, .yaml, .yml or .toml",
        )
        .in_file(path)
    })
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
    locate::check_depth(text, format).map_err(RuleSetError::whole)?;
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
    Err(located_error(text, format, problems))
}

/// At most this many problems of a file are listed (in file order); the others are counted in
/// a last entry.
pub(crate) const MAX_LISTED: usize = 100;

/// The problems of a file that parsed, each at its field's line and column (or its rule's, for
/// a field not in the file): every position found in one pass over the text.
fn located_error(text: &str, format: Format, problems: Vec<Problem>) -> RuleSetError {
    let tree = locate::tree(text, format);
    let mut located: Vec<(Located, Problem)> = problems
        .into_iter()
        .map(|p| {
            let at = tree.as_ref().map_or_else(Located::default, |tree| {
                tree.locate(p.kind.keys(), p.index, p.entry.field.as_deref())
            });
            (at, p)
        })
        .collect();
    located.sort_by_key(|(at, p)| (at.best().is_none(), at.best(), p.kind.name(), p.index));
    let omitted = located.len().saturating_sub(MAX_LISTED);
    located.truncate(MAX_LISTED);
    let mut positions: Vec<Pos> = located
        .iter()
        .flat_map(|(at, _)| [at.rule, at.field])
        .flatten()
        .collect();
    positions.sort_unstable();
    positions.dedup();
    let resolved = locate::line_columns(text, &positions);
    let find = |pos: Option<Pos>| {
        let i = positions.binary_search(&pos?).ok()?;
        resolved.get(i).copied()
    };
    let mut entries: Vec<RuleSetErrorEntry> = located
        .into_iter()
        .map(|(at, p)| {
            let mut entry = p.entry.at(find(at.best()));
            entry.rule_line = find(at.rule).map(|(line, _)| line);
            entry
        })
        .collect();
    if omitted > 0 {
        entries.push(RuleSetErrorEntry::whole(format!(
            "and {omitted} more problems (only the first {MAX_LISTED} are listed)"
        )));
    }
    RuleSetError::new(entries)
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
    #[cfg(test)]
    tests::count_parse();
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

// ----- the public constructors --------------------------------------------------------------------

impl RuleSet {
    /// Reads and checks a rule set in JSON (with `/* */` and `//` comments allowed), with our
    /// names or Sentinel's: see [the format](crate::rules::files).
    ///
    /// Every rule is checked, as [`load`](crate::rules::load) would: the error lists every bad
    /// rule at its field's line and column (the first 100 in file order, the others counted),
    /// or the syntax error with its line and column.
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
        let (text, format) = read_file(path)?;
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
///
/// Every load is counted in [`metrics::rule_loads`](crate::metrics::rule_loads) (kind
/// `rule_set`) and sets the file's result in [`metrics::rule_files`](crate::metrics::rule_files);
/// with the `tracing` feature it gives an event on target `sentinel`: `rules loaded` (with the
/// `file`, its content's `version` and the number of `rules`) or `rules refused, the previous
/// stay in force` (with the `file`, the first problem's `line`, `column` and `field`, the
/// number of `problems` and the whole `error`), whatever refused it: the file unreadable, its
/// syntax, a bad rule or a budget.
pub fn load_file(path: impl AsRef<Path>) -> Result<(), RuleSetError> {
    let path = path.as_ref();
    let (result, version, rules) = match read_file(path) {
        Err(e) => (Err(e), None, 0),
        Ok((text, format)) => {
            let version = report::content_version(text.as_bytes());
            match parse(&text, format) {
                Err(e) => (Err(e.in_file(path)), Some(version), 0),
                Ok(set) => {
                    let rules = rule_count(&set);
                    let result = set::load_uncounted(set).map_err(|e| e.in_file(path));
                    (result, Some(version), rules)
                }
            }
        }
    };
    report::file_load(path, version, rules, result)
}

/// How many rules a set has, of every kind.
pub(crate) fn rule_count(set: &RuleSet) -> usize {
    set.flow.len()
        + set.circuit_breaker.len()
        + set.hotspot.len()
        + set.system.len()
        + set.authority.len()
}

/// A rule file's text and format (from its extension); errors name the file.
fn read_file(path: &Path) -> Result<(String, Format), RuleSetError> {
    let format = format_of(path)?;
    let text = fs::read_to_string(path)
        .map_err(|e| RuleSetError::whole(format!("cannot read the file: {e}")).in_file(path))?;
    Ok((text, format))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// How many times this thread handed a rule file's text to a parser.
        static PARSES: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn count_parse() {
        PARSES.with(|p| p.set(p.get() + 1));
    }

    thread_local! {
        /// How many bytes of text this thread walked to turn positions into lines and columns.
        static SCANNED: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn count_scanned(bytes: usize) {
        SCANNED.with(|s| s.set(s.get() + bytes));
    }

    /// The parses `f` made on this thread.
    fn parses_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
        let before = PARSES.with(Cell::get);
        let out = f();
        (out, PARSES.with(Cell::get) - before)
    }

    /// A file of `n` flow rules, each with a bad `threshold`, in `format`.
    fn many_bad_rules(n: usize, format: Format) -> String {
        let mut text = String::new();
        match format {
            Format::Json => {
                text.push_str("{\"flow\": [\n");
                for i in 0..n {
                    let sep = if i + 1 == n { "" } else { "," };
                    text.push_str(&format!(
                        "  {{\"resource\": \"r{i}\",\n   \"threshold\": -1}}{sep}\n"
                    ));
                }
                text.push_str("]}\n");
            }
            Format::Yaml => {
                text.push_str("flow:\n");
                for i in 0..n {
                    text.push_str(&format!("  - resource: r{i}\n    threshold: -1\n"));
                }
            }
            Format::Toml => {
                for i in 0..n {
                    text.push_str(&format!(
                        "[[flow]]\nresource = \"r{i}\"\nthreshold = -1\n\n"
                    ));
                }
            }
        }
        text
    }

    #[test]
    fn many_bad_rules_are_located_in_one_pass_over_the_text() {
        for format in [Format::Json, Format::Yaml, Format::Toml] {
            for n in [10, 1_000] {
                let text = many_bad_rules(n, format);
                let scanned_before = SCANNED.with(Cell::get);
                let (result, parses) = parses_of(|| parse(&text, format));
                let scanned = SCANNED.with(Cell::get) - scanned_before;
                let err = result.expect_err("every rule is bad");
                // Once to read the rules, once to locate them all: never once per bad rule.
                assert!(
                    parses <= 2,
                    "{format:?}, {n} bad rules: the text was parsed {parses} times"
                );
                assert!(
                    scanned <= text.len(),
                    "{format:?}, {n} bad rules: {scanned} bytes walked for lines in {}",
                    text.len()
                );
                let first = &err.entries()[0];
                assert_eq!(
                    (first.line, first.field.as_deref(), first.index),
                    (Some(3), Some("threshold"), Some(0)),
                    "{format:?}: {err}"
                );
                // At most MAX_LISTED problems are listed, in file order; the rest are counted.
                let listed = n.min(MAX_LISTED);
                assert_eq!(err.entries().len(), listed + usize::from(n > MAX_LISTED));
                assert_eq!(err.entries()[listed - 1].index, Some(listed - 1));
                if n > MAX_LISTED {
                    let last = err.entries().last().map(|e| e.message.as_str());
                    assert_eq!(
                        last,
                        Some("and 900 more problems (only the first 100 are listed)")
                    );
                }
            }
        }
    }

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

    /// The grammar's table, read as the rule files read a duration field: every string means
    /// what it means to the attribute (its crate runs the same table), and integers are
    /// milliseconds.
    #[test]
    fn the_duration_table_reads_as_in_the_attribute() {
        for &(text, expected) in sentinel_duration::cases::CASES {
            let read = duration::deserialize(serde_json::Value::from(text));
            assert_eq!(read.as_ref().ok(), expected.as_ref(), "{text:?}: {read:?}");
            if let Err(e) = read {
                assert!(e.to_string().contains(&format!("got {text:?}")), "{e}");
            }
        }
        for (ms, expected) in [
            (0, Duration::ZERO),
            (1_500, Duration::from_millis(1_500)),
            (u64::MAX, Duration::from_millis(u64::MAX)),
        ] {
            let read = duration::deserialize(serde_json::Value::from(ms));
            assert_eq!(read.ok(), Some(expected), "{ms}");
        }
        assert!(duration::deserialize(serde_json::Value::from(-1)).is_err());
        assert!(duration::deserialize(serde_json::Value::from(1.5)).is_err());
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

    type LineColumn = Option<(usize, usize)>;

    /// Where rule `index` of `kind` is in `text`, and its `field`, as lines and columns.
    fn at(
        text: &str,
        format: Format,
        kind: RuleKind,
        index: usize,
        field: Option<&str>,
    ) -> (LineColumn, LineColumn) {
        let found =
            locate::tree(text, format)
                .expect("the text parses")
                .locate(kind.keys(), index, field);
        let one = |pos: Option<Pos>| pos.map(|p| locate::line_columns(text, &[p])[0]);
        (one(found.rule), one(found.field))
    }

    #[test]
    fn rules_and_fields_are_located_in_every_format() {
        let json = "{\n \"x\": 1,\n \"flow\": [\n  {\"a\": 1},\n\n  {\n \"b\": {\"c\": [0, 2]}}, {\"c\":3}]}";
        let rule = |i| at(json, Format::Json, RuleKind::Flow, i, None).0;
        assert_eq!(
            (rule(0), rule(1), rule(2), rule(3)),
            (Some((4, 3)), Some((6, 3)), Some((7, 23)), None)
        );
        let field = |f| at(json, Format::Json, RuleKind::Flow, 1, Some(f)).1;
        assert_eq!(field("b"), Some((7, 2)));
        assert_eq!(field("b.c"), Some((7, 8)));
        assert_eq!(field("b.c[1]"), Some((7, 17)));
        assert_eq!(field("b.missing"), Some((7, 2)), "the deepest part found");
        assert_eq!(field("missing"), None);

        let yaml = "x: 1\ndegrade:\n  - a: 1\n\n  - b: 2\n    c: {d: [5, 6]}\n  - {e: 5}\n";
        let rule = |i| at(yaml, Format::Yaml, RuleKind::CircuitBreaker, i, None).0;
        assert_eq!(
            (rule(0), rule(1), rule(2), rule(3)),
            (Some((3, 5)), Some((5, 5)), Some((7, 6)), None)
        );
        let field = |f| at(yaml, Format::Yaml, RuleKind::CircuitBreaker, 1, Some(f)).1;
        assert_eq!(field("c"), Some((6, 5)));
        assert_eq!(field("c.d"), Some((6, 9)));
        assert_eq!(field("c.d[1]"), Some((6, 16)));

        let toml = "x = 1\n\n[[flow]]\na = 1\n\n[[flow]]\n# c\nb = 2\nc = { d = [1, 2] }\n";
        let rule = |i| at(toml, Format::Toml, RuleKind::Flow, i, None).0;
        assert_eq!(
            (rule(0), rule(1), rule(2)),
            (Some((3, 1)), Some((6, 1)), None)
        );
        let field = |f| at(toml, Format::Toml, RuleKind::Flow, 1, Some(f)).1;
        assert_eq!(field("b"), Some((8, 1)));
        assert_eq!(field("c.d[1]"), Some((9, 15)));
    }

    #[test]
    fn every_bad_rule_is_listed_at_its_field() {
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
                (Some(5), Some("negative"), Some("threshold")),
                (Some(7), Some("typo"), Some("threshhold")),
                (Some(9), Some("no-recovery"), Some("recovery")),
                (Some(12), Some("bad-rt"), Some("strategy.max_rt")),
            ]
        );
    }

    #[test]
    fn deep_nesting_is_refused_by_line_before_parsing() {
        for (text, format) in [
            (format!("{{\n\"flow\": {}", "[".repeat(1_000)), Format::Json),
            (format!("flow:\n  - {}", "- ".repeat(100_000)), Format::Yaml),
            (format!("flow:\n  - {}", "[".repeat(100_000)), Format::Yaml),
            (format!("# deep\na = {}", "[".repeat(1_000)), Format::Toml),
        ] {
            let (result, parses) = parses_of(|| parse(&text, format));
            let err = result.expect_err("too deep");
            assert_eq!(parses, 0, "{format:?}: parsed");
            assert!(
                err.to_string()
                    .contains("nested more than 64 levels deep at line 2"),
                "{format:?}: {err}"
            );
        }
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
