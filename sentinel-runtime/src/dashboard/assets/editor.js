// The rules editor: never loses typed text. An edit starts from a version (its ETag); a newer
// version arriving while the text differs from it is shown beside the text, as a notice and a
// line diff, never put in its place. Save sends the version the edit started from, so a
// stale edit gets 409: the text stays, and the other version is shown with the choice to take
// it or to save over it.
window.sentinelEditor = function (api) {
  "use strict";
  function $(id) { return document.getElementById(id); }
  // base: the version the text started from; newer: a later version, while the text is edited.
  var st = { base: null, newer: null };

  function status(msg, bad) {
    var s = $("rules-status");
    s.textContent = msg;
    s.className = bad ? "error" : "ok";
  }
  function edited() { return st.base !== null && $("rules-text").value !== st.base.text; }

  // A line diff (longest common subsequence) of their text against mine: [sign, line].
  function diff(theirs, mine) {
    var a = theirs.split("\n"), b = mine.split("\n");
    if (a.length * b.length > 4000000) return [["~", "(too long to compare line by line)"]];
    var n = a.length, m = b.length, i, j, L = [];
    for (i = 0; i <= n; i++) { L.push(new Uint32Array(m + 1)); }
    for (i = n - 1; i >= 0; i--)
      for (j = m - 1; j >= 0; j--)
        L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    var out = [];
    i = 0; j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
      else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) { out.push(["+", b[j]]); j++; }
      else { out.push(["-", a[i]]); i++; }
    }
    return out;
  }

  function showNewer(why) {
    var box = $("rules-notice");
    if (!st.newer) { box.hidden = true; return; }
    $("rules-notice-text").textContent = why + " Version " + st.newer.etag + " is in force now; yours started from " +
      st.base.etag + ". Your text is kept. Lines only in theirs are marked -, only in yours +:";
    var pre = $("rules-diff");
    var lines = diff(st.newer.text, $("rules-text").value).filter(function (d, k, all) {
      // Changed lines with two lines of context.
      for (var x = Math.max(0, k - 2); x <= Math.min(all.length - 1, k + 2); x++) if (all[x][0] !== " ") return true;
      return false;
    });
    pre.replaceChildren.apply(pre, lines.map(function (d) {
      var s = document.createElement("span");
      s.className = d[0] === "+" ? "mine" : d[0] === "-" ? "theirs" : "same";
      s.textContent = d[0] + " " + d[1] + "\n";
      return s;
    }));
    box.hidden = false;
  }

  // Marks the shadow rules in force (`"shadow": true`: evaluated and counted, never enforced)
  // under the editor, by kind and resource.
  function markShadow(set) {
    var marked = [];
    Object.keys(set || {}).forEach(function (kind) {
      (Array.isArray(set[kind]) ? set[kind] : []).forEach(function (rule) {
        if (rule && rule.shadow === true) marked.push(kind + " " + (rule.resource || ""));
      });
    });
    var p = $("rules-shadow");
    p.hidden = !marked.length;
    p.textContent = marked.length ? "shadow (counted, never enforced): " + marked.join(", ") : "";
  }

  // The document as it is stored (the rules file, or the rule source's document: YAML with
  // its comments, JSON or TOML), in its own format; the rules in force as JSON when nothing is
  // stored. The rules as JSON are read beside it to mark the shadow rules.
  function fetchRules() {
    api("/api/rules").then(function (r) { return r.ok ? r.json() : null; })
      .then(function (b) { if (b) markShadow(b); }).catch(function () {});
    return api("/api/rules", { headers: { "Accept": "application/yaml, application/json;q=0.5" } }).then(function (r) {
      var tag = r.headers.get("etag");
      var type = (r.headers.get("content-type") || "application/json").split(";")[0];
      return r.text().then(function (text) {
        if (!r.ok) {
          var why;
          try { why = JSON.parse(text).error; } catch (e) { why = null; }
          throw new Error(why || ("HTTP " + r.status));
        }
        if (type === "application/json") {
          // Shown laid out when it is the rules in force (no document with comments stored).
          try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* as stored */ }
        }
        return { etag: tag, text: text, type: type };
      });
    });
  }

  // Loads the rules in force: into the editor when it holds no edit (or `force`), else beside
  // it as a newer version.
  function load(force) {
    return fetchRules().then(function (v) {
      if (force || !edited()) {
        st.base = v; st.newer = null;
        $("rules-text").value = v.text;
        showNewer("");
      } else if (v.etag !== st.base.etag) {
        st.newer = v;
        showNewer("Someone else saved the rules while you were editing.");
      }
    }).catch(function (e) { status(e.message, true); });
  }

  function put(etag) {
    var text = $("rules-text").value;
    // Saved in the format it is shown in: a YAML document stays YAML, comments and all.
    var type = st.base ? st.base.type : "application/json";
    return api("/api/rules", {
      method: "PUT",
      headers: { "Content-Type": type, "If-Match": etag || "" },
      body: text
    }).then(function (r) {
      return r.json().then(function (b) { return [r.status, b]; });
    }).then(function (res) {
      var code = res[0], b = res[1];
      if (code === 200) {
        st.base = { etag: b.etag, text: text, type: type }; st.newer = null;
        showNewer("");
        if (b.applied) status("saved and applied", false);
        else status("written to the rule source, not in force in this process yet: " + (b.message || ""), false);
      } else if (code === 422) {
        status("refused, nothing changed:\n" + b.problems.map(function (p) {
          return (p.kind ? p.kind + "[" + p.index + "]" : "") + (p.field ? " field `" + p.field + "`" : "") + ": " + p.message;
        }).join("\n"), true);
      } else if (code === 409) {
        status("conflict: not saved. The rules changed since your edit started; your text is kept, the version in force is shown beside it.", true);
        return fetchRules().then(function (v) {
          st.newer = v;
          showNewer("Not saved: someone else saved the rules since your edit started.");
        });
      } else status(b.error || ("HTTP " + code), true);
    }).catch(function (e) { status(e.message, true); });
  }

  $("rules-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    put(st.base ? st.base.etag : null);
  });
  $("rules-reload").addEventListener("click", function () {
    if (edited() && !window.confirm("Discard your edit and load the rules in force?")) return;
    load(true); status("", false);
  });
  $("rules-take").addEventListener("click", function () { load(true); status("their version loaded; your edit is discarded", false); });
  $("rules-overwrite").addEventListener("click", function () { if (st.newer) put(st.newer.etag); });
  $("rules-text").addEventListener("input", function () { if (st.newer) showNewer("Someone else saved the rules while you were editing."); });
  return { load: load };
};
