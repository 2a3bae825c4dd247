/* Distributed deployment status page: every 3 s, GET /api/v1/status and re-render the tables
   (the manager answers from a cached Spark snapshot, so many open pages do not load Spark).
   Stale workers and endpoints and FAILED topologies get class "bad". */
(function () {
  "use strict";
  var topo = document.querySelector("#topologies tbody");
  if (!topo) { return; }
  var el = CEP.el, f = CEP.fmt;
  function td(v, cls, children) { return el("td", {"class": cls || null, text: children ? null : (v === null || v === undefined ? "" : String(v))}, children); }
  function link(href, text, blank) { return el("a", {href: href, text: text, target: blank ? "_blank" : null, rel: blank ? "noopener" : null}); }
  function fill(tbody, items, row, cols, empty) {
    tbody.textContent = "";
    (items || []).forEach(function (x) { tbody.appendChild(row(x)); });
    if (!(items || []).length) { tbody.appendChild(el("tr", {"class": "empty"}, [el("td", {colspan: cols, "class": "muted", text: empty})])); }
  }

  function topologyRow(t) {
    return el("tr", {"data-topology": t.topology, "class": t.state === "FAILED" ? "bad" : null}, [
      td(null, "mono", [link(CEP.planPage(t.tenant, t.plan), t.topology || "")]), td(t.tenant), td(t.plan),
      td(null, null, [el("span", {"class": "state state-" + t.state, text: t.state})]),
      td(f.time(t.since), "nowrap"), td(t.reason), td((t.packing === "shared" ? t.application + " " : "") + (t.applicationId || ""), "mono"),
      td(t.executors === null || t.executors === undefined ? "" : t.executors, "num")]);
  }

  function workerRow(w) {
    var name = [w.url ? link(w.url + "/status", w.id, true) : document.createTextNode(w.id)];
    if (w.stale) { name.push(document.createTextNode(" ")); name.push(el("span", {"class": "badge bad", text: "stale"})); }
    return el("tr", {"data-worker": w.id, "class": w.stale ? "bad" : null}, [
      td(null, "mono", name), td(w.host), td((w.roles || []).join(", ")), td(f.secs(w.heartbeatAgeSec), "num"),
      td((w.plans || []).join(", ")), td(f.num(w.eventsInPerSec, 1), "num"), td(f.num(w.eventsOutPerSec, 1), "num"),
      td(typeof w.cpuPercent === "number" ? w.cpuPercent.toFixed(1) + " %" : "", "num"),
      td(typeof w.memoryRssBytes === "number" ? f.num(w.memoryRssBytes / 1048576, 1) + " MiB" : "", "num")]);
  }

  function endpointRow(e) {
    return el("tr", {"class": e.stale ? "bad" : null, "data-endpoint": e.kind + ":" + e.host + ":" + e.port}, [
      td(e.kind), td(e.tenant), td(e.plan), td(e.stream || ""), td(e.worker || ""), td(e.host + ":" + e.port, "mono"),
      td(e.connections, "num"), td(f.secs(e.heartbeatAgeSec), "num")]);
  }

  function flowRow(fl) {
    function lines(items, fn) {
      if (!(items || []).length) { return [el("span", {"class": "muted", text: "none"})]; }
      return items.map(function (x) { return el("div", {"class": "flow"}, fn(x)); });
    }
    return el("tr", {"data-flow": fl.tenant + "/" + fl.plan}, [
      td(null, null, [link(CEP.planPage(fl.tenant, fl.plan), fl.plan), " ", el("span", {"class": "muted", text: String(fl.tenant)})]),
      td(null, null, lines(fl.inflow, function (i) { return [i.worker + " \u2192 ", el("span", {"class": "mono", text: i.spout}), " ", el("span", {"class": "muted", text: i.stream || ""})]; })),
      td(null, null, lines(fl.outflow, function (o) { return [el("span", {"class": "mono", text: o.bolt}), " \u2192 " + o.worker]; }))]);
  }

  function managers(ms) {
    fill(document.getElementById("managers-body"), ms, function (m) {
      var host = [document.createTextNode(m.host || "")];
      if (m.self) { host.push(document.createTextNode(" ")); host.push(el("span", {"class": "badge", text: "this one"})); }
      return el("tr", {"data-manager": m.host}, [td(null, null, host), td(m.role),
        td(null, null, m.url ? [link(m.url, m.url)] : []), td(m.registry, "mono"),
        td(m.leaseHolder, "mono"), td(m.leaseAgeSec === null || m.leaseAgeSec === undefined ? "" : m.leaseAgeSec + " s"),
        td(m.fencingToken)]);
    }, 7, "No manager.");
  }

  function spark(s) {
    var box = document.getElementById("spark-body");
    box.textContent = "";
    if (!s) { box.appendChild(el("p", {"class": "muted", text: "The Spark master's status is not available."})); return; }
    function fact(k, v) { return [el("dt", {text: k}), el("dd", {}, v)]; }
    var dl = el("dl", {"class": "facts"}, [].concat(
      fact("Master", [el("span", {"class": "mono", text: s.master || ""})]),
      fact("Alive", [el("span", {"class": "badge " + (s.alive ? "ok" : "bad"), text: s.alive ? "alive" : "not reachable"})]),
      fact("Slots", [(s.slotsUsed === undefined ? "" : s.slotsUsed) + " used / " + (s.slotsTotal === undefined ? "" : s.slotsTotal) + " total"]),
      fact("Spark UI", s.uiUrl ? [link(s.uiUrl, s.uiUrl, true)] : [])));
    box.appendChild(dl);
    var table = el("table", {"class": "grid compact", id: "spark-apps"}, [
      el("thead", {}, [el("tr", {}, [el("th", {text: "Application"}), el("th", {text: "Name"}), el("th", {text: "State"}), el("th", {"class": "num", text: "Cores"})])]),
      el("tbody")]);
    fill(table.tBodies[0], s.applications, function (a) {
      var id = s.uiUrl ? link(s.uiUrl.replace(/\/$/, "") + "/app/?appId=" + CEP.enc(a.id), a.id, true) : document.createTextNode(a.id);
      return el("tr", {}, [td(null, "mono", [id]), td(a.name), td(a.state), td(a.cores, "num")]);
    }, 4, "No applications.");
    box.appendChild(table);
  }

  function refresh() {
    return CEP.getJSON("/api/v1/status").then(function (r) {
      if (!r.ok) { throw new Error((r.body && r.body.message) || "HTTP " + r.status); }
      var st = r.body;
      managers(st.managers);
      spark(st.spark);
      fill(topo, st.topologies, topologyRow, 8, "No topologies.");
      fill(document.querySelector("#workers tbody"), st.workers, workerRow, 9, "No worker has reported to this manager.");
      fill(document.querySelector("#endpoints tbody"), st.endpoints, endpointRow, 8, "No endpoints registered.");
      fill(document.querySelector("#flows tbody"), st.flows, flowRow, 3, "No flows.");
    });
  }

  setTimeout(function () { CEP.poll(refresh, 3000, document.getElementById("refresh-state")); }, 3000);
})();
