/* Event simulator: one event from the attribute form, or a JSON-lines file at a chosen rate,
   sent by the manager through a live worker (POST .../simulate); the worker's verdict below. */
(function () {
  "use strict";
  var page = document.getElementById("sim-page");
  var sel = document.getElementById("sim-stream");
  if (!page || !sel) { return; }
  var url = CEP.planApi(page.getAttribute("data-tenant"), page.getAttribute("data-plan"), "/simulate");
  var result = document.getElementById("sim-result");

  function fieldset() { return document.querySelector('fieldset.sim-attrs[data-stream="' + CSS.escape(sel.value) + '"]'); }
  sel.addEventListener("change", function () {
    Array.prototype.forEach.call(document.querySelectorAll("fieldset.sim-attrs"), function (f) { f.hidden = f !== fieldset(); });
  });

  function value(input) {
    var v = input.value, t = input.getAttribute("data-type");
    if (v === "") { return null; }
    if (t === "int" || t === "long" || t === "float" || t === "double") { return Number(v); }
    if (t === "bool") { return v.trim().toLowerCase() === "true"; }
    return v;
  }

  function show(r) {
    result.textContent = "";
    result.className = r.ok ? "" : "bad-text";
    if (!r.ok) { result.textContent = (r.body && r.body.message) || "HTTP " + r.status; return; }
    var b = r.body;
    result.appendChild(CEP.el("p", {"class": b.rejected.length ? "warn-text" : "ok-text",
      text: "Sent " + b.sent + " event(s) through worker " + b.worker + ": " + b.accepted + " accepted, " + b.rejected.length + " rejected."}));
    if (b.rejected.length) {
      result.appendChild(CEP.el("ul", {"class": "errors"}, b.rejected.slice(0, 50).map(function (x) {
        return CEP.el("li", {text: (x.index === null ? "" : "event " + (x.index + 1) + ": ") + x.reason});
      })));
    }
  }

  function send(body, btn) {
    btn.disabled = true;
    result.className = "muted";
    result.textContent = "Sending…";
    return CEP.request("POST", url, body).then(show, function (err) { result.textContent = "Failed: " + err.message; })
      .then(function () { btn.disabled = false; });
  }

  document.getElementById("sim-send").addEventListener("click", function (ev) {
    var btn = ev.target, file = document.getElementById("sim-file").files[0];
    var rate = Number(document.getElementById("sim-rate").value) || 100;
    if (file) {
      file.text().then(function (text) { return send({stream: sel.value, jsonl: text, rate: rate}, btn); });
      return;
    }
    var row = Array.prototype.map.call(fieldset().querySelectorAll("input"), value);
    send({stream: sel.value, events: [row], rate: rate}, btn);
  });
})();
