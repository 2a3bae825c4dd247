/* Try it: POST /api/v1/try with the plan and the events; output events as cep run prints them
   (one JSON object a line), positioned plan errors and bad event lines in ul#try-errors. */
(function () {
  "use strict";
  var btn = document.getElementById("try-run");
  if (!btn) { return; }
  var out = document.getElementById("try-output"), errs = document.getElementById("try-errors");
  var summary = document.getElementById("try-summary");

  function error(text, line, column) {
    errs.appendChild(CEP.el("li", {"data-line": line || null, "data-column": column || null, text: text}));
  }

  btn.addEventListener("click", function () {
    btn.disabled = true;
    out.textContent = ""; errs.textContent = ""; summary.textContent = "running…";
    var body = {plan: document.getElementById("try-plan").value, events: document.getElementById("try-events").value};
    CEP.request("POST", "/api/v1/try", body).then(function (r) {
      if (!r.ok) { error((r.body && r.body.message) || "HTTP " + r.status); summary.textContent = ""; return; }
      var res = r.body;
      (res.errors || []).forEach(function (e) {
        error((e.line ? "line " + e.line + ", column " + e.column + ": " : "") + e.message, e.line, e.column);
      });
      (res.badLines || []).forEach(function (b) { error("event line " + b.line + ": " + b.reason, b.line); });
      out.textContent = (res.events || []).map(function (e) { return JSON.stringify(e); }).join("\n");
      var streams = Object.keys(res.outputs || {});
      summary.textContent = (res.events || []).length + " output event(s)" +
        (streams.length ? " on " + streams.join(", ") : "") + (res.truncated ? " (truncated)" : "");
    }).catch(function (err) { error("Run failed: " + err.message); })
      .then(function () { btn.disabled = false; });
  });
})();
