// The dashboard's page: polls the API once a second, streams the events, edits the rules.
// The token comes in the link's fragment (`/#token=...`, which no server sees); it moves to
// sessionStorage (scoped to this origin, so to this port) and leaves the address bar, and
// every API call carries it in a header. No cookie is ever set or sent.
(function () {
  "use strict";
  var KEY = "sentinel-dashboard-token";
  var TOKEN = (function () {
    var m = /(?:^#|&)token=([^&]*)/.exec(location.hash), t = null;
    if (m) {
      t = decodeURIComponent(m[1]);
      try { sessionStorage.setItem(KEY, t); } catch (e) { /* private mode: this page only */ }
      history.replaceState(null, "", location.pathname);
    }
    if (!t) { try { t = sessionStorage.getItem(KEY); } catch (e) { t = null; } }
    return t || "";
  })();
  var state = { rows: [], sortKey: "traffic", sortDesc: true, filter: "", selected: null, etag: null, chart: null };

  function $(id) { return document.getElementById(id); }
  function fmt(n, d) { return (n === null || n === undefined) ? "-" : Number(n).toFixed(d === undefined ? 0 : d); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function api(path, opts) {
    opts = opts || {};
    var h = opts.headers || {};
    h["X-Sentinel-Token"] = TOKEN;
    opts.headers = h;
    opts.credentials = "omit";
    opts.cache = "no-store";
    return fetch(path, opts).then(function (r) {
      if (r.status === 401) $("status").textContent = "no access: open the link the service printed (it ends in #token=...)";
      return r;
    });
  }

  // ---- resources -------------------------------------------------------------------------
  function refresh() {
    // A filter searches every resource on the server, not only the busiest listed.
    var search = state.filter;
    api("/api/resources" + (search ? "?search=" + encodeURIComponent(search) : "")).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      var total = r.headers.get("x-sentinel-resources-total"), matched = r.headers.get("x-sentinel-resources-matched");
      return r.json().then(function (rows) { return [rows, total, matched]; });
    }).then(function (res) {
      if (search !== state.filter) return;
      var now = Date.now(), rows = res[0], total = res[1], matched = res[2];
      rows.forEach(function (row) {
        // Blocks per second, by kind (the server's table of kinds) and in all, and shadow
        // blocks per second: the server takes them over one interval, so they add up.
        row.blocked_by = row.blocked_by || {};
        row.shown_block_qps = row.blocked_per_s === null || row.blocked_per_s === undefined ? null : row.blocked_per_s;
        row.shadow_qps = row.shadow_per_s || 0;
        row.traffic = row.pass_qps + row.block_qps;
      });
      state.rows = rows;
      $("count").textContent = search
        ? matched + " of " + total + " match" + (+matched > rows.length ? " (busiest " + rows.length + " shown)" : "")
        : rows.length + (total && +total > rows.length ? " of " + total + " (busiest shown)" : " resources");
      $("status").textContent = "live, updated " + new Date().toLocaleTimeString();
      render();
      if (!state.selected && rows.length) select(rows[0].resource);
    }).catch(function (e) { $("status").textContent = "disconnected: " + e.message; });
    api("/api/system").then(function (r) { return r.json(); }).then(function (s) {
      var rules = s.rules.map(function (r) {
        var parts = [];
        if (r.cpu_usage !== null) parts.push("cpu<=" + fmt(r.cpu_usage * 100) + "%");
        if (r.load_per_core !== null) parts.push("load<=" + r.load_per_core);
        if (r.concurrency !== null) parts.push("inside<=" + r.concurrency);
        if (r.qps !== null) parts.push("qps<=" + r.qps);
        if (r.avg_rt_ms !== null) parts.push("rt<=" + r.avg_rt_ms + "ms");
        if (r.shadow === true) parts.push("(shadow: counted, never enforced)");
        return parts.join(" ");
      }).join("; ");
      // What rule watchers said before the page opened (or between two events): once each.
      (s.rule_notices || []).forEach(notice);
      var list = $("transitions"), items = s.last_transitions.slice().reverse().map(function (t) {
        return el("li", "to-" + t.to, t.resource + ": " + t.from + " -> " + t.to + ": " + (t.words || fmt(t.figure, 2)));
      });
      if (!items.length) items = [el("li", "muted", "none since the dashboard started")];
      list.replaceChildren.apply(list, items);
      var hot = $("hotspot"), rows = [];
      (s.hotspot || []).forEach(function (r) {
        var values = r.top_blocked.map(function (v) {
          return (v.value !== null ? v.value : "#" + v.value_hash) + " " + v.blocked;
        });
        var param = r.param ? r.param : "parameter #" + r.param_index;
        rows.push(el("li", values.length ? "" : "muted", r.resource + " by " + param + " (" + r.threshold +
          " per value): " + (values.length ? values.join(", ") : "none blocked")));
      });
      if (!rows.length) rows = [el("li", "muted", "no hotspot rules")];
      hot.replaceChildren.apply(hot, rows);
      var cores = s.effective_cores ? " of " + fmt(s.effective_cores, s.effective_cores % 1 ? 1 : 0) + " cores" : "";
      $("system").textContent = "CPU " + fmt(s.cpu_usage * 100, 1) + "%" + cores + (s.cpu_source ? " (" + s.cpu_source + ")" : "") +
        "  load/core " + fmt(s.load_per_core, 2) +
        "  inbound " + fmt(s.inbound.pass_qps) + "/s, inside " + s.inbound.concurrency +
        (rules ? "  system rules: " + rules : "");
    }).catch(function () {});
  }

  function render() {
    var body = document.querySelector("#resources tbody");
    var f = state.filter.toLowerCase();
    var rows = state.rows.filter(function (r) { return r.resource.toLowerCase().indexOf(f) >= 0; });
    var k = state.sortKey, sign = state.sortDesc ? -1 : 1;
    rows.sort(function (a, b) {
      var x = a[k], y = b[k];
      if (k === "blocked_by") { x = sum(x); y = sum(y); }
      if (k === "block_qps") { x = a.shown_block_qps; y = b.shown_block_qps; }
      if (x === y) return a.resource < b.resource ? -1 : 1;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) {
      var tr = el("tr");
      tr.dataset.resource = r.resource;
      if (r.resource === state.selected) tr.className = "selected";
      var name = el("td", "resource", r.resource);
      // Endpoints its outlier rules eject now.
      if (r.ejected && r.ejected.length) name.appendChild(el("div", "warn", "ejected: " + r.ejected.join(", ")));
      tr.appendChild(name);
      tr.appendChild(el("td", "num pass_qps", fmt(r.pass_qps)));
      tr.appendChild(el("td", "num qps_limit muted", limitsText(r)));
      var blocked = r.shown_block_qps;
      tr.appendChild(el("td", "num block_qps" + (blocked > 0 ? " blocking" : ""),
        blocked === null ? "-" : fmt(blocked, blocked % 1 ? 1 : 0)));
      tr.appendChild(el("td", "num blocked_by", Object.keys(r.blocked_by).map(function (k) {
        return k + " " + fmt(r.blocked_by[k], 1);
      }).join(", ")));
      tr.appendChild(el("td", "num shadow_qps" + (r.shadow_qps > 0 ? " shadow" : " muted"), fmt(r.shadow_qps, 1)));
      tr.appendChild(el("td", "num error_qps", fmt(r.error_qps)));
      tr.appendChild(el("td", "num avg_rt_ms", fmt(r.avg_rt_ms, 1)));
      tr.appendChild(el("td", "num concurrency", r.concurrency + (r.concurrency_limit !== null ? " / " + r.concurrency_limit : "")));
      var td = el("td", "breaker");
      if (r.breaker) td.appendChild(el("span", "breaker-" + r.breaker, r.breaker.replace("_", "-").toUpperCase()));
      tr.appendChild(td);
      tr.appendChild(el("td", "num pass_total", String(r.pass_total)));
      tr.appendChild(el("td", "num block_total", String(r.block_total)));
      tr.addEventListener("click", function () { select(r.resource); });
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    document.querySelectorAll("#resources th").forEach(function (th) {
      th.classList.toggle("sorted", th.dataset.key === state.sortKey);
    });
  }
  function sum(o) { var s = 0; for (var k in o) s += o[k]; return s; }
  function num(n) { return fmt(n, n % 1 ? 1 : 0); }
  // The limit/s column: the smallest enforced QPS limit, then each hotspot rule's limit per
  // value and each shadow limit, marked (concurrency limits are in "inside / limit").
  function limitsText(r) {
    var parts = r.qps_limit === null || r.qps_limit === undefined ? [] : [num(r.qps_limit)];
    (r.limits || []).forEach(function (l) {
      if (l.kind === "flow" && !l.shadow) return;
      if (l.kind === "flow" && l.metric !== "qps") return;
      var text = num(l.limit);
      if (l.per_value) text += (l.metric === "qps" ? "/s" : " inside") + " per " + (l.param || (l.param_index !== null ? "parameter #" + l.param_index : "value"));
      if (l.shadow) text = "shadow " + text;
      parts.push(text);
    });
    return parts.length ? parts.join(", ") : "-";
  }

  // ---- chart -----------------------------------------------------------------------------
  function select(name) {
    state.selected = name;
    $("chart-name").textContent = name;
    render();
    drawHistory();
  }
  function drawHistory() {
    var name = state.selected;
    if (!name) return;
    api("/api/resources/" + encodeURIComponent(name) + "/history").then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    }).then(function (h) {
      if (name !== state.selected) return;
      var pts = h.points;
      var data = [
        pts.map(function (p) { return p.second; }),
        pts.map(function (p) { return p.pass; }),
        pts.map(function (p) { return p.block; }),
        pts.map(function (p) { return p.error; }),
        pts.map(function (p) { return p.avg_rt_ms; }),
        pts.map(function (p) { return p.shadow_block || 0; })
      ];
      // Relative seconds on the x axis: the runtime clock is monotonic, not wall time.
      var last = data[0].length ? data[0][data[0].length - 1] : 0;
      data[0] = data[0].map(function (s) { return s - last; });
      var box = $("chart");
      var width = Math.max(box.clientWidth, 300);
      if (!state.chart || state.chart.width !== width) {
        if (state.chart) state.chart.destroy();
        state.chart = new uPlot({
          width: width, height: 280,
          scales: { x: { time: false }, rt: { auto: true } },
          axes: [
            { label: "seconds ago" },
            { label: "calls/s" },
            { scale: "rt", side: 1, label: "avg RT ms", grid: { show: false } }
          ],
          series: [
            {},
            { label: "pass", stroke: "#2e86de", width: 2 },
            { label: "block", stroke: "#c0392b", width: 2 },
            { label: "error", stroke: "#e67e22", width: 1 },
            { label: "RT ms", stroke: "#8e44ad", width: 1, scale: "rt" },
            { label: "shadow would block/s", stroke: "#b9770e", width: 1, dash: [6, 4] }
          ]
        }, data, box);
      } else {
        state.chart.setData(data);
      }
    }).catch(function () {});
  }

  // ---- events ----------------------------------------------------------------------------
  function describe(e) {
    switch (e.type) {
      case "blocks": return "blocked";
      case "breaker": return "breaker " + e.resource + ": " + e.from + " -> " + e.to + ": " + (e.words || fmt(e.figure, 2));
      case "rule_load": return (e.loaded ? "rules loaded: " : "rules REFUSED: ") + e.kind + " x" + e.count;
      case "rule_source": return "rules: " + e.words;
      case "rules_saved": return "rules saved from the dashboard (" + e.etag + ")";
      case "rules_refused": return "rule edit refused: " + e.error;
      case "lagged": return "(missed " + e.missed + " events)";
      default: return JSON.stringify(e);
    }
  }
  // Two lists: the events (breakers, rule loads, sources and edits) above, the block lines
  // (at most one per resource per second, the 5 most blocked resources of each second) in a
  // list of their own below, each capped, so a flood of blocks never pushes an event out of
  // sight.
  var MAX_BLOCK_LINES = 60, MAX_OTHER_LINES = 200, BLOCKED_PER_SECOND = 5;
  function addLine(cls, text) {
    var blocks = cls === "blocks", list = $(blocks ? "block-events" : "notable-events");
    list.insertBefore(el("li", cls, new Date().toLocaleTimeString() + "  " + text), list.firstChild);
    var lines = list.querySelectorAll("li"), max = blocks ? MAX_BLOCK_LINES : MAX_OTHER_LINES;
    for (var i = max; i < lines.length; i++) list.removeChild(lines[i]);
  }
  // A rule watcher's notice (an event, or listed by /api/system), shown once by its number.
  var noticesShown = {};
  function notice(n) {
    if (noticesShown[n.seq]) return;
    noticesShown[n.seq] = true;
    addLine("rule_source", describe({ type: "rule_source", words: n.words }));
  }
  function onEvent(data) {
    var e;
    try { e = JSON.parse(data); } catch (x) { return; }
    if (e.type === "rule_source" && e.seq !== undefined) {
      notice(e);
    } else if (e.type === "blocks") {
      var shown = e.resources.slice(0, BLOCKED_PER_SECOND), rest = e.resources.length - shown.length + (e.more || 0);
      if (rest > 0) addLine("blocks", "blocked: " + rest + " more resource" + (rest === 1 ? "" : "s"));
      shown.reverse().forEach(function (r) {
        addLine("blocks", "blocked: " + r.resource + " " + r.blocked + " (" + Object.keys(r.by_rule).map(function (k) {
          return k + " " + r.by_rule[k];
        }).join(", ") + ")");
      });
    } else {
      addLine(e.type, describe(e));
    }
    if (e.type === "rules_saved" || (e.type === "rule_load" && e.loaded)) editor.load(false);
  }
  // How the browser test feeds the list a flood of events.
  window.sentinelDashboard = { onEvent: onEvent };

  // Server-sent events read with fetch, so the token goes in a header (EventSource sends
  // none); reconnects after a pause when the stream ends.
  function listen() {
    api("/api/events", { headers: { Accept: "text/event-stream" } }).then(function (r) {
      if (!r.ok || !r.body) throw new Error("HTTP " + r.status);
      var reader = r.body.getReader(), dec = new TextDecoder(), buf = "";
      function pump() {
        return reader.read().then(function (c) {
          if (c.done) throw new Error("the stream ended");
          buf += dec.decode(c.value, { stream: true }).replace(/\r\n/g, "\n");
          var i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            var data = buf.slice(0, i).split("\n").filter(function (l) {
              return l.indexOf("data:") === 0;
            }).map(function (l) { return l.slice(5).replace(/^ /, ""); }).join("\n");
            buf = buf.slice(i + 2);
            if (data) onEvent(data);
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () { setTimeout(listen, 3000); });
  }

  // ---- rules: assets/editor.js ---------------------------------------------------------
  var editor = window.sentinelEditor(api);

  // ---- wiring ----------------------------------------------------------------------------
  document.querySelectorAll("#resources th").forEach(function (th) {
    th.addEventListener("click", function () {
      var k = th.dataset.key;
      if (state.sortKey === k) state.sortDesc = !state.sortDesc; else { state.sortKey = k; state.sortDesc = k !== "resource"; }
      render();
    });
  });
  var searching = null;
  $("filter").addEventListener("input", function (e) {
    state.filter = e.target.value;
    render();
    clearTimeout(searching);
    searching = setTimeout(refresh, 200);
  });
  refresh();
  editor.load(true);
  listen();
  // ---- the fleet (instances sharing the cluster's store) -------------------------------------
  // Every text in a summary comes from whoever can write to the store: each is isolated in a
  // <bdi> (unicode-bidi: isolate, cut with an ellipsis), so no name can reorder, push away or
  // hide the figures beside it. Lists are cut to a few items with "and N more".
  var FLEET_LIST = 5;
  function fleetText(parent, text, cls) {
    var b = el("bdi", "fleet-text" + (cls ? " " + cls : ""), String(text));
    b.title = String(text);
    parent.appendChild(b);
    return b;
  }
  function fleetList(parent, label, items, draw) {
    if (!items || !items.length) return;
    var span = el("span", "fleet-list");
    span.appendChild(document.createTextNode(label + ": "));
    items.slice(0, FLEET_LIST).forEach(function (item, n) {
      if (n) span.appendChild(document.createTextNode(", "));
      draw(span, item);
    });
    if (items.length > FLEET_LIST) span.appendChild(document.createTextNode(" and " + (items.length - FLEET_LIST) + " more"));
    parent.appendChild(span);
  }
  function fleetRules(f) {
    var p = $("fleet-rules"), r = f.rules || {};
    p.textContent = ""; p.className = "";
    if (r.version === null || r.version === undefined) {
      p.textContent = "No instance runs a rule watcher: rules versions unknown.";
      return;
    }
    if (!r.lagging_total) {
      p.textContent = "All " + r.instances_on + " on rules version " + r.version + ".";
      p.className = "ok";
      return;
    }
    p.className = "warn";
    p.appendChild(document.createTextNode(r.instances_on + " on rules version " + r.version + "; lagging (" + r.lagging_total + "): "));
    (r.lagging || []).forEach(function (name, n) {
      if (n) p.appendChild(document.createTextNode(", "));
      fleetText(p, name);
    });
    if (r.lagging_total > (r.lagging || []).length) p.appendChild(document.createTextNode(" and " + (r.lagging_total - r.lagging.length) + " more"));
  }
  function fleetInstance(i) {
    var blocking = i.block_qps > 0 || (i.breakers_open || []).length || (i.ejected || []).length;
    var li = el("li", "fleet-instance" + (i.cluster_state === "fallback" || i.other_rules || blocking ? " warn" : ""));
    li.setAttribute("data-id", i.id);
    var head = el("div", "fleet-head");
    fleetText(head, i.name, "fleet-name");
    if (i.this_instance) head.appendChild(el("span", "muted", " (this one)"));
    head.appendChild(el("span", "fleet-figures", " " + fmt(i.pass_qps) + " pass/s, " + fmt(i.block_qps, 1) + " blocked/s, " +
      i.cluster_state + ", rules " + (i.rules_version === null || i.rules_version === undefined ? "(no watcher)" : "v" + i.rules_version) +
      (i.other_rules ? ", OTHER RULES than this one" : "") + ", seen " + fmt(i.last_seen_ms / 1000, 1) + " s ago"));
    li.appendChild(head);
    var why = el("div", "fleet-why");
    var kinds = Object.keys(i.blocked_by || {}).sort(function (a, b) { return i.blocked_by[b] - i.blocked_by[a]; });
    fleetList(why, "blocked by", kinds, function (span, k) {
      span.appendChild(el("span", "blocking", k + " " + fmt(i.blocked_by[k], 1) + "/s"));
    });
    fleetList(why, "breakers open", i.breakers_open, function (span, r) { fleetText(span, r, "breaker-open"); });
    fleetList(why, "ejected", i.ejected, function (span, e) {
      fleetText(span, e.endpoint); span.appendChild(document.createTextNode(" of ")); fleetText(span, e.resource);
    });
    if (i.shadow_would_block_qps > 0) why.appendChild(el("span", "shadow fleet-list", "shadow rules would block " + fmt(i.shadow_would_block_qps, 1) + "/s"));
    if (why.childNodes.length) li.appendChild(why);
    var where = el("div", "fleet-where muted");
    fleetText(where, i.host); where.appendChild(document.createTextNode(" pid " + i.pid));
    li.appendChild(where);
    return li;
  }
  // Why the limits shared through the store refused calls here, by cause.
  function fleetRefusals(r) {
    var words = { budget_spent: "the fleet's budget spent", lost_window: "a window the store lost, charged",
                  fallback_share: "this instance's share in a fallback" };
    var parts = Object.keys(words).filter(function (k) { return r && r[k] > 0; })
      .map(function (k) { return r[k] + " by " + words[k]; });
    $("fleet-refusals").textContent = "Shared limits here: " + (parts.length ? "refused " + parts.join(", ") + "." : "no refusals.");
  }
  function fleet() {
    api("/api/fleet").then(function (r) { return r.json(); }).then(function (f) {
      var ins = $("fleet-instances"), res = $("fleet-resources");
      ins.textContent = ""; res.textContent = ""; $("fleet-rules").textContent = "";
      if (!f.available) { $("fleet-state").textContent = "(no cluster: this process only)"; return; }
      var shown = (f.instances || []).length;
      $("fleet-state").textContent = !f.reachable
        ? "(the fleet is unreachable: the cluster's store does not answer; last view shown)"
        : f.reading ? "(reading the fleet...)"
        : "(" + f.count + " instances live" + (f.incomplete ? ", " + shown + " shown" : "") +
          (f.unreadable ? ", " + f.unreadable + " unreadable entries skipped" : "") + ", cluster " + (f.cluster.state || "-") + ")";
      if (!f.reading) fleetRules(f);
      fleetRefusals(f.cluster.refusals);
      f.instances.forEach(function (i) { ins.appendChild(fleetInstance(i)); });
      if (f.instances_left_out) ins.appendChild(el("li", "muted", "and " + f.instances_left_out + " more instances not listed"));
      f.resources.slice(0, 20).forEach(function (r) {
        var li = el("li", "");
        fleetText(li, r.resource);
        li.appendChild(el("span", "fleet-figures", ": " + fmt(r.pass_qps) + " pass/s" +
          (r.global_limit !== null && r.global_limit !== undefined ? " of a global " + fmt(r.global_limit) + "/s" : "") +
          ", " + fmt(r.block_qps) + " blocked/s over " + r.instances + " instance" + (r.instances === 1 ? "" : "s")));
        res.appendChild(li);
      });
    }).catch(function () { $("fleet-state").textContent = "(unreachable)"; });
  }

  fleet();
  setInterval(function () { refresh(); drawHistory(); fleet(); }, 1000);
})();
