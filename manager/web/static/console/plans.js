/* Plans page: refresh every row's version, last change and Distributed Deployment Status from
   GET /api/v1/tenants/<t>/plans every 2 s, without reloading; add rows of new plans, drop rows
   of removed ones. */
(function () {
  "use strict";
  var table = document.getElementById("plans");
  if (!table) { return; }
  var tenant = table.getAttribute("data-tenant");
  var tbody = table.tBodies[0];
  var template = document.getElementById("plan-row-template");

  function statusText(p) {
    if (p.statusText) { return p.statusText; }
    var s = p.status || {state: p.state || "UNKNOWN"};
    return "Storm topology : " + s.state;
  }

  function newRow(name) {
    var row = template.content.querySelector("tr").cloneNode(true);
    row.setAttribute("data-plan", name);
    row.querySelector(".name-link").textContent = name;
    row.querySelector(".name-link").href = CEP.planPage(tenant, name);
    row.querySelector(".action-view").href = CEP.planPage(tenant, name);
    row.querySelector(".action-edit").href = CEP.planPage(tenant, name, "/edit");
    row.querySelector(".action-queryplan").href = CEP.planPage(tenant, name, "#query-plan-section");
    row.querySelector(".action-simulate").href = CEP.planPage(tenant, name, "/simulate");
    row.querySelector(".action-delete").setAttribute("data-plan", name);
    return row;
  }

  function setText(row, sel, text) {
    var cell = row.querySelector(sel);
    var value = text === null || text === undefined ? "" : String(text);
    if (cell.textContent !== value) { cell.textContent = value; }
  }

  function update(p, row) {
    setText(row, ".plan-description", p.description || "");
    setText(row, ".plan-version", p.version);
    setText(row, ".plan-last-change", CEP.fmt.time(p.lastChange || ""));
    row.querySelector(".plan-last-change").title = p.lastChange || "";
    setText(row, ".dist-status", statusText(p));
    var state = (p.status && p.status.state) || p.state || "UNKNOWN";
    row.querySelector(".dist-status").className = "dist-status state-" + state;
  }

  function rowsByName() {
    var rows = {};
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-plan]"), function (r) {
      rows[r.getAttribute("data-plan")] = r;
    });
    return rows;
  }

  function refresh() {
    return CEP.getJSON(CEP.planApi(tenant)).then(function (r) {
      if (!r.ok) { throw new Error((r.body && r.body.message) || "HTTP " + r.status); }
      var rows = rowsByName(), seen = {};
      r.body.plans.forEach(function (p) {
        var row = rows[p.name];
        if (!row) { row = newRow(p.name); tbody.appendChild(row); }
        update(p, row);
        seen[p.name] = true;
      });
      Object.keys(rows).forEach(function (name) {
        if (!seen[name]) { tbody.removeChild(rows[name]); }
      });
      var empty = tbody.querySelector("tr.empty");
      if (empty && r.body.plans.length) { tbody.removeChild(empty); }
    });
  }

  var filter = document.getElementById("plan-filter");
  function applyFilter() {
    var q = filter.value.trim().toLowerCase();
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-plan]"), function (r) {
      var text = (r.getAttribute("data-plan") + " " + r.querySelector(".plan-description").textContent).toLowerCase();
      r.hidden = q !== "" && text.indexOf(q) < 0;
    });
  }
  filter.addEventListener("input", applyFilter);

  CEP.poll(function () { return refresh().then(applyFilter); }, 2000, document.getElementById("refresh-state"));
})();
