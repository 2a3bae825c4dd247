/* Plan details: the live status text, the topology graph (GET .../topology), the metrics table
   and recent errors (GET .../metrics?window=) refreshed every 5 s, per-edge rates and capacity
   colouring on the graph. */
(function () {
  "use strict";
  var page = document.getElementById("plan-page");
  if (!page) { return; }
  var tenant = page.getAttribute("data-tenant"), name = page.getAttribute("data-plan");
  var svg = document.getElementById("topology-graph");
  var note = document.getElementById("topology-note");
  var windowSel = document.getElementById("metrics-window");
  var drawn = false;

  function statusText(st) {
    var lines = ["Storm topology : " + st.state + (st.reason ? " (" + st.reason + ")" : "")];
    if (st.transport === "nats") {  /* JetStream streams: manager/status.py nats_plan_status */
      var i = (st.inflow || {}).jetstream, out = st.outflow;
      lines.push("Inflow connections : NATS JetStream, " + (i ? i.text : "unknown"));
      lines.push("Outflow connections : NATS JetStream, " + (out ? out.text : "unknown"));
      return lines.join("\n");
    }
    var workers = Object.keys(st.inflow || {});
    if (!workers.length) { lines.push("Inflow connections : no receivers found"); } else {
      lines.push("Inflow connections :");
      workers.forEach(function (w) {
        var s = st.inflow[w];
        lines.push("\t" + w + " : " + (s.connected === s.required ? "all established" : s.text));
      });
    }
    var o = st.outflow || {};
    lines.push("Outflow connections : " + (o.connected === o.required ? "all established" : o.text));
    return lines.join("\n");
  }

  function refreshStatus() {
    return CEP.getJSON(CEP.planApi(tenant, name, "/status")).then(function (r) {
      if (!r.ok) { return; }
      var pre = document.getElementById("plan-status");
      pre.textContent = r.body.statusText || statusText(r.body);
      pre.className = "dist-status state-" + r.body.state;
      document.getElementById("plan-since").textContent = CEP.fmt.time(r.body.since);
    });
  }

  function loadTopology() {
    return CEP.getJSON(CEP.planApi(tenant, name, "/topology")).then(function (r) {
      if (!r.ok) { note.textContent = "The topology graph is not available: " + ((r.body && r.body.message) || "HTTP " + r.status); return; }
      CEP.drawTopology(svg, r.body);
      drawn = true;
      note.textContent = "Edges show grouping \u00d7 parallelism of the target, the streams, and the rate over the window. Dashed: the internal _tick stream (receiver spout \u2192 every Siddhi bolt, all grouping) that drives timers.";
    });
  }

  function cell(v, cls) { return CEP.el("td", {"class": cls === undefined ? "num" : cls || null, text: v === null || v === undefined ? "" : String(v)}); }

  function fillMetrics(m) {
    var tbody = document.querySelector("#metrics tbody");
    tbody.textContent = "";
    (m.components || []).forEach(function (c) {
      var cap = typeof c.capacity === "number" ? c.capacity.toFixed(3) : "";
      tbody.appendChild(CEP.el("tr", {"data-component": c.id, "class": typeof c.capacity === "number" && c.capacity >= 0.8 ? "warn" : null}, [
        cell(c.id, "mono"), cell(c.kind, ""), cell(c.instances), cell(CEP.fmt.num(c.emitted)),
        cell(CEP.fmt.num(c.transferred)), cell(CEP.fmt.num(c.executed)),
        cell(typeof c.executeLatencyMs === "number" ? c.executeLatencyMs.toFixed(3) : ""), cell(cap),
        cell(CEP.fmt.num(c.failed)), cell(CEP.fmt.num(c.errors))]));
    });
    if (!(m.components || []).length) {
      tbody.appendChild(CEP.el("tr", {"class": "empty"}, [CEP.el("td", {colspan: 10, "class": "muted", text: "No metrics yet."})]));
    }
    var ul = document.getElementById("recent-errors");
    ul.textContent = "";
    (m.recentErrors || []).forEach(function (e) {
      ul.appendChild(CEP.el("li", {}, [CEP.el("span", {"class": "pos", text: CEP.fmt.time(e.time) + " " + e.component + (e.instance !== undefined && e.instance !== null ? "[" + e.instance + "]" : "")}),
                                       CEP.el("span", {"class": "msg", text: e.message})]));
    });
    if (!(m.recentErrors || []).length) { ul.appendChild(CEP.el("li", {"class": "muted empty", text: "No errors reported."})); }
    if (drawn) { CEP.colourTopology(svg, m); }
  }

  function refreshMetrics() {
    return CEP.getJSON(CEP.planApi(tenant, name, "/metrics?window=" + CEP.enc(windowSel.value))).then(function (r) {
      if (!r.ok) {
        var tbody = document.querySelector("#metrics tbody");
        tbody.textContent = "";
        tbody.appendChild(CEP.el("tr", {"class": "empty"}, [CEP.el("td", {colspan: 10, "class": "muted",
          text: "Metrics are not available: " + ((r.body && r.body.message) || "HTTP " + r.status)})]));
        return;
      }
      fillMetrics(r.body);
    });
  }

  windowSel.addEventListener("change", refreshMetrics);
  loadTopology().then(function () { CEP.poll(refreshMetrics, 5000); });
  CEP.poll(refreshStatus, 3000);
})();
