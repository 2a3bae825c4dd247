/* The plan page's Backtest block: starts a backtest through the REST API
   (POST .../backtest, with the session's CSRF token through CEP.request), polls its state and
   shows the summary and an inline SVG chart of output events over time. No dependencies. */
(function () {
  "use strict";
  var section = document.getElementById("backtest-section");
  var form = document.getElementById("backtest-form");
  if (!section || !form) { return; }
  var tenant = section.getAttribute("data-tenant"), plan = section.getAttribute("data-plan");
  var stateEl = document.getElementById("backtest-state");
  var summaryEl = document.getElementById("backtest-summary");
  var chart = document.getElementById("backtest-chart");
  var runBtn = document.getElementById("backtest-run");
  var COLORS = ["#2f6fb0", "#d9822b", "#3a9b5c", "#b03a5b", "#7a5cb0", "#5c8a8a"];
  var SVG = "http://www.w3.org/2000/svg";

  function say(text, bad) {
    stateEl.textContent = text;
    stateEl.classList.toggle("bad-text", !!bad);
  }

  function body() {
    var inputs = {};
    form.querySelectorAll(".backtest-input").forEach(function (el) {
      inputs[el.getAttribute("data-stream")] = el.value.trim();
    });
    return {inputs: inputs, output: document.getElementById("backtest-output").value.trim(),
            format: document.getElementById("backtest-format").value,
            timestamp_column: document.getElementById("backtest-ts").value.trim() || "timestamp"};
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    runBtn.disabled = true;
    summaryEl.hidden = true;
    chart.hidden = true;
    say("Starting…");
    CEP.request("POST", CEP.planApi(tenant, plan, "/backtest"), body()).then(function (r) {
      if (r.status !== 202) {
        runBtn.disabled = false;
        say("Not started: " + ((r.body && r.body.message) || ("HTTP " + r.status)), true);
        return;
      }
      watch(r.body.id, Date.now());
    }, function (err) { runBtn.disabled = false; say("Not started: " + err, true); });
  });

  function watch(id, started) {
    var url = CEP.planApi(tenant, plan, "/backtest/" + CEP.enc(id));
    function tick() {
      CEP.getJSON(url).then(function (r) {
        var job = r.body || {};
        if (!r.ok) { done(); say("Lost the backtest: HTTP " + r.status, true); return; }
        if (job.state === "running") {
          say("Running… " + CEP.fmt.secs((Date.now() - started) / 1000));
          setTimeout(tick, 1000);
        } else if (job.state === "done") {
          done(); say("Done in " + CEP.fmt.num(job.summary.run_seconds, 1) + " s");
          showSummary(job.summary); drawChart(job.summary);
        } else {
          done(); say("Failed: " + (job.error || "the backtest failed"), true);
        }
      }, function (err) { setTimeout(tick, 2000); say("Refresh failed: " + err, true); });
    }
    tick();
  }

  function done() { runBtn.disabled = false; }

  function fact(dt, dd, id) {
    summaryEl.appendChild(CEP.el("dt", {text: dt}));
    summaryEl.appendChild(CEP.el("dd", {text: dd, id: id}));
  }

  function showSummary(s) {
    summaryEl.textContent = "";
    fact("Mode", s.mode + (s.reason ? " (" + s.reason + ")" : ""), "bt-mode");
    fact("Events in", CEP.fmt.num(s.events_in), "bt-events-in");
    fact("Time span", isoMs(s.first_ts) + " – " + isoMs(s.last_ts), "bt-span");
    Object.keys(s.events_out || {}).sort().forEach(function (sid) {
      fact("Out " + sid, CEP.fmt.num(s.events_out[sid]), "bt-out-" + sid);
    });
    fact("Run time", CEP.fmt.num(s.run_seconds, 2) + " s (" + CEP.fmt.num(s.events_per_second) +
         " events/s, " + s.tasks + " tasks, " + s.executors + " executors)", "bt-run");
    summaryEl.hidden = false;
  }

  function isoMs(ms) {
    if (typeof ms !== "number") { return "—"; }
    return new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC");
  }

  function node(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  /* One polyline per output stream: events per bucket (summary.bucket_ms) over event time. */
  function drawChart(s) {
    var series = s.out_over_time || {}, names = Object.keys(series).sort();
    while (chart.firstChild) { chart.removeChild(chart.firstChild); }
    var W = 720, H = 240, L = 56, R = 150, T = 12, B = 36;
    chart.setAttribute("viewBox", "0 0 " + W + " " + H);
    chart.setAttribute("width", W); chart.setAttribute("height", H);
    var x0 = s.first_ts, x1 = s.last_ts, ymax = 1;
    names.forEach(function (n) { series[n].forEach(function (p) { ymax = Math.max(ymax, p[1]); }); });
    if (typeof x0 !== "number" || !names.length) {
      chart.appendChild(node("text", {x: L, y: H / 2, "class": "bt-empty"}, "No output events."));
      chart.hidden = false;
      return;
    }
    x0 = Math.floor(x0 / s.bucket_ms) * s.bucket_ms;
    x1 = Math.max(x1, x0 + s.bucket_ms);
    function px(t) { return L + (W - L - R) * (t - x0) / (x1 - x0); }
    function py(v) { return T + (H - T - B) * (1 - v / ymax); }
    chart.appendChild(node("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#888"}));
    chart.appendChild(node("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#888"}));
    chart.appendChild(node("text", {x: L - 6, y: T + 4, "text-anchor": "end", "font-size": 11}, CEP.fmt.num(ymax)));
    chart.appendChild(node("text", {x: L - 6, y: H - B, "text-anchor": "end", "font-size": 11}, "0"));
    chart.appendChild(node("text", {x: L, y: H - 12, "font-size": 11}, isoMs(x0)));
    chart.appendChild(node("text", {x: W - R, y: H - 12, "text-anchor": "end", "font-size": 11}, isoMs(x1)));
    names.forEach(function (n, i) {
      var color = COLORS[i % COLORS.length];
      var pts = series[n].map(function (p) {
        return px(p[0] + s.bucket_ms / 2).toFixed(1) + "," + py(p[1]).toFixed(1);
      }).join(" ");
      chart.appendChild(node("polyline", {points: pts, fill: "none", stroke: color, "stroke-width": 2,
                                          "class": "bt-series", "data-stream": n}));
      series[n].forEach(function (p) {
        var dot = node("circle", {cx: px(p[0] + s.bucket_ms / 2), cy: py(p[1]), r: 2.5, fill: color});
        dot.appendChild(node("title", {}, n + ": " + p[1] + " at " + isoMs(p[0])));
        chart.appendChild(dot);
      });
      chart.appendChild(node("rect", {x: W - R + 12, y: T + 16 * i, width: 10, height: 10, fill: color}));
      chart.appendChild(node("text", {x: W - R + 28, y: T + 9 + 16 * i, "font-size": 12}, n));
    });
    chart.hidden = false;
  }
})();
