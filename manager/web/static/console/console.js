/* Shared console helpers: JSON requests, polling, element building, the tenant picker and
   the delete action. No dependencies. */
(function () {
  "use strict";
  var CEP = window.CEP = {};

  CEP.tenant = function () { return document.body.getAttribute("data-tenant"); };
  CEP.enc = encodeURIComponent;
  CEP.planApi = function (tenant, name, suffix) {
    return "/api/v1/tenants/" + CEP.enc(tenant) + "/plans" + (name ? "/" + CEP.enc(name) : "") + (suffix || "");
  };
  CEP.planPage = function (tenant, name, suffix) {
    return "/console/tenants/" + CEP.enc(tenant) + "/plans" + (name ? "/" + CEP.enc(name) : "") + (suffix || "");
  };

  /* fetch -> {ok, status, body}; body is parsed JSON when the answer is JSON. */
  CEP.request = function (method, url, body, contentType) {
    var opts = {method: method, headers: {"Accept": "application/json"}};
    if (method !== "GET" && method !== "HEAD") {  /* the session's CSRF token */
      var meta = document.querySelector('meta[name="csrf-token"]');
      if (meta) { opts.headers["X-CSRF-Token"] = meta.getAttribute("content"); }
    }
    if (body !== undefined) {
      opts.body = typeof body === "string" ? body : JSON.stringify(body);
      opts.headers["Content-Type"] = contentType || (typeof body === "string" ? "text/plain" : "application/json");
    }
    return fetch(url, opts).then(function (resp) {
      var type = resp.headers.get("Content-Type") || "";
      var parse = type.indexOf("json") >= 0 ? resp.json() : resp.text();
      return parse.then(function (b) { return {ok: resp.ok, status: resp.status, body: b}; });
    });
  };
  CEP.getJSON = function (url) { return CEP.request("GET", url); };

  /* Call fn() now and every `ms` (skipped while the tab is hidden); fn returns a promise. */
  CEP.poll = function (fn, ms, stateEl) {
    var busy = false;
    function tick() {
      if (busy || document.hidden) { return; }
      busy = true;
      Promise.resolve(fn()).then(function () {
        if (stateEl) { stateEl.textContent = "Updated " + new Date().toLocaleTimeString(); stateEl.classList.remove("bad-text"); }
      }, function (err) {
        if (stateEl) { stateEl.textContent = "Refresh failed: " + err; stateEl.classList.add("bad-text"); }
      }).then(function () { busy = false; });
    }
    tick();
    return setInterval(tick, ms);
  };

  /* el("td", {class: "num", text: "3"}, [children]) */
  CEP.el = function (tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k === "text") { e.textContent = v; } else { e.setAttribute(k, v); }
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); }
    });
    return e;
  };

  CEP.fmt = {
    num: function (v, digits) {
      if (typeof v !== "number") { return ""; }
      return v.toLocaleString("en-US", {maximumFractionDigits: digits === undefined ? 0 : digits, minimumFractionDigits: digits || 0});
    },
    secs: function (v) {
      if (typeof v !== "number") { return ""; }
      if (v < 90) { return Math.round(v) + " s"; }
      if (v < 5400) { return Math.round(v / 60) + " min"; }
      return (v / 3600).toFixed(1) + " h";
    },
    time: function (epoch) {
      if (epoch === null || epoch === undefined || epoch === "") { return ""; }
      var d = typeof epoch === "string" ? new Date(epoch) : new Date(epoch * 1000);
      if (isNaN(d.getTime())) { return String(epoch); }
      return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
    }
  };

  function tenantPicker() {
    var sel = document.getElementById("tenant");
    if (!sel) { return; }
    var current = sel.value;
    sel.addEventListener("change", function () {
      var t = sel.value;
      if (t === "__other__") {
        t = window.prompt("Tenant id (an integer; -1234 is the super tenant):", "");
        if (t === null || !/^-?\d+$/.test(t.trim())) { sel.value = current; return; }
        t = t.trim();
      }
      window.location.href = CEP.planPage(t);
    });
  }

  /* button.action-delete[data-plan]: confirm, DELETE, then drop the row or go to the list. */
  function deleteButtons() {
    document.addEventListener("click", function (ev) {
      var btn = ev.target.closest ? ev.target.closest("button.action-delete") : null;
      if (!btn) { return; }
      var name = btn.getAttribute("data-plan"), tenant = CEP.tenant();
      if (!window.confirm("Delete execution plan '" + name + "' of tenant " + tenant +
                          "?\nIts topology is killed and its endpoints are dropped.")) { return; }
      btn.disabled = true;
      btn.textContent = "Deleting…";
      CEP.request("DELETE", CEP.planApi(tenant, name)).then(function (r) {
        if (!r.ok) { throw new Error((r.body && r.body.message) || ("HTTP " + r.status)); }
        var row = btn.closest("tr[data-plan]");
        if (row) { row.parentNode.removeChild(row); } else { window.location.href = CEP.planPage(tenant); }
      }).catch(function (err) {
        btn.disabled = false;
        btn.textContent = "Delete";
        window.alert("Delete failed: " + err.message);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { tenantPicker(); deleteButtons(); });
})();
