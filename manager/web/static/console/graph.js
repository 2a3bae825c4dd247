/* The topology as an SVG graph: receiver spouts on the left, Siddhi bolts by execution group in
   the middle, publisher bolts on the right; one edge per (from, to) pair labelled with its
   grouping, parallelism and streams. colourTopology() then shows per-edge rates and per-bolt
   capacity from the /metrics JSON. Pairs joined only by the internal _tick stream (receiver
   spout -> every Siddhi bolt, all grouping) are drawn dashed. */
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 190, H = 58, COL = 410, ROW = 104, PAD = 24;

  function s(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function levels(components, edges) {
    var level = {}, byId = {};
    components.forEach(function (c) { byId[c.id] = c; level[c.id] = c.kind === "spout" ? 0 : 1; });
    for (var pass = 0; pass < components.length; pass++) {
      edges.forEach(function (e) {
        if (byId[e.from] && byId[e.to] && level[e.to] < level[e.from] + 1) { level[e.to] = level[e.from] + 1; }
      });
    }
    var max = 0;
    components.forEach(function (c) { max = Math.max(max, level[c.id]); });
    components.forEach(function (c) { if (c.role === "publisher") { level[c.id] = Math.max(max, 1); } });
    return level;
  }

  function pairs(edges) {
    var out = {}, order = [];
    edges.forEach(function (e) {
      var key = e.from + "\u0000" + e.to;
      if (!out[key]) { out[key] = {from: e.from, to: e.to, streams: [], edges: []}; order.push(key); }
      out[key].streams.push(e.stream);
      out[key].edges.push(e);
    });
    return order.map(function (k) { return out[k]; });
  }

  function grouping(e) {
    var g = e.grouping || "shuffle";
    if (g === "fields" && e.fields && e.fields.length) { g += "(" + e.fields.join(", ") + ")"; }
    return g + " \u00d7" + (e.parallelism || 1);
  }

  function internal(e) { return e.internal || e.stream === "_tick"; }

  function groupings(edges) {
    var seen = [];
    edges.forEach(function (e) { var g = grouping(e); if (seen.indexOf(g) < 0) { seen.push(g); } });
    return seen.join(" \u00b7 ");
  }

  function place(components, level) {
    var cols = {}, pos = {};
    components.forEach(function (c) { (cols[level[c.id]] = cols[level[c.id]] || []).push(c); });
    var rows = 0;
    Object.keys(cols).forEach(function (l) { rows = Math.max(rows, cols[l].length); });
    Object.keys(cols).forEach(function (l) {
      var list = cols[l], offset = (rows - list.length) * ROW / 2;
      list.forEach(function (c, i) { pos[c.id] = {x: PAD + l * COL, y: PAD + offset + i * ROW}; });
    });
    return {pos: pos, rows: rows, cols: Object.keys(cols).length};
  }

  function node(c, p) {
    var g = s("g", {"class": "node role-" + (c.role || c.kind) + " cap-none", "data-id": c.id,
                    transform: "translate(" + p.x + "," + p.y + ")"});
    g.appendChild(s("title", {}, c.id + " (" + (c.role || c.kind) + ")"));
    g.appendChild(s("rect", {width: W, height: H, rx: 8, ry: 8}));
    var label = c.id.length > 24 ? c.id.slice(0, 23) + "\u2026" : c.id;
    g.appendChild(s("text", {x: 12, y: 22, "class": "node-title"}, label));
    var sub = (c.role === "siddhi" ? "Siddhi bolt" : c.role === "receiver" ? "receiver spout" :
               c.role === "publisher" ? "publisher bolt" : c.kind) + " \u00d7" + (c.parallelism || 1);
    if (c.group && c.group !== c.id) { sub += " \u00b7 " + c.group; }
    g.appendChild(s("text", {x: 12, y: 40, "class": "node-sub"}, sub));
    g.appendChild(s("text", {x: W - 10, y: 40, "class": "node-cap", "text-anchor": "end"}, ""));
    return g;
  }

  /* Where along the curve the label goes: near the end that is not shared with other edges,
     so labels of edges fanning out of (or into) one node do not overlap. */
  function labelAt(pair, fanOut, fanIn) {
    if (fanOut[pair.from] > 1 && fanIn[pair.to] <= 1) { return 0.72; }
    if (fanIn[pair.to] > 1 && fanOut[pair.from] <= 1) { return 0.28; }
    return 0.5;
  }

  function bezier(p0, p1, p2, p3, t) {
    var u = 1 - t;
    return u * u * u * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * p3;
  }

  function edge(pair, from, to, t) {
    var x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x - 6, y2 = to.y + H / 2, mx = (x1 + x2) / 2;
    var onlyInternal = pair.edges.every(internal);
    var g = s("g", {"class": "edge" + (onlyInternal ? " internal" : ""), "data-from": pair.from, "data-to": pair.to});
    g.appendChild(s("path", {d: "M" + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + x2 + "," + y2,
                             "marker-end": "url(#arrow)"}));
    var lx = bezier(x1, mx, mx, x2, t), ly = bezier(y1, y1, y2, y2, t);
    g.appendChild(s("text", {x: lx, y: ly - 16, "class": "edge-label", "text-anchor": "middle"}, groupings(pair.edges)));
    var streams = pair.streams.join(", ");
    g.appendChild(s("text", {x: lx, y: ly - 3, "class": "edge-streams", "text-anchor": "middle"},
                        streams.length > 40 ? streams.slice(0, 39) + "\u2026" : streams));
    g.appendChild(s("text", {x: lx, y: ly + 11, "class": "edge-rate", "text-anchor": "middle"}, ""));
    return g;
  }

  CEP.drawTopology = function (svg, topo) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var comps = topo.components || [], level = levels(comps, topo.edges || []);
    var layout = place(comps, level);
    var width = PAD * 2 + (layout.cols - 1) * COL + W, height = PAD * 2 + (layout.rows - 1) * ROW + H;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    var defs = s("defs");
    var marker = s("marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto"});
    marker.appendChild(s("path", {d: "M0,0 L10,5 L0,10 z", "class": "arrow-head"}));
    defs.appendChild(marker);
    svg.appendChild(defs);
    var drawn = pairs(topo.edges || []).filter(function (p) { return layout.pos[p.from] && layout.pos[p.to]; });
    var fanOut = {}, fanIn = {};
    drawn.forEach(function (p) { fanOut[p.from] = (fanOut[p.from] || 0) + 1; fanIn[p.to] = (fanIn[p.to] || 0) + 1; });
    drawn.forEach(function (p) {
      svg.appendChild(edge(p, layout.pos[p.from], layout.pos[p.to], labelAt(p, fanOut, fanIn)));
    });
    comps.forEach(function (c) { svg.appendChild(node(c, layout.pos[c.id])); });
  };

  function capClass(cap) {
    if (typeof cap !== "number") { return "cap-none"; }
    return cap >= 0.8 ? "cap-high" : cap >= 0.5 ? "cap-mid" : "cap-low";
  }

  CEP.colourTopology = function (svg, metrics) {
    var byId = {};
    (metrics.components || []).forEach(function (c) { byId[c.id] = c; });
    Array.prototype.forEach.call(svg.querySelectorAll("g.node"), function (g) {
      var m = byId[g.getAttribute("data-id")];
      var cap = m ? m.capacity : null;
      g.setAttribute("class", g.getAttribute("class").replace(/cap-\w+/, capClass(cap)));
      g.querySelector(".node-cap").textContent = typeof cap === "number" ? "cap " + cap.toFixed(2) : "";
    });
    var rates = {};
    (metrics.edges || []).forEach(function (e) {
      var k = e.from + "\u0000" + e.to;
      if (!internal(e) && typeof e.ratePerSec === "number") { rates[k] = (rates[k] || 0) + e.ratePerSec; }
    });
    Array.prototype.forEach.call(svg.querySelectorAll("g.edge"), function (g) {
      var r = rates[g.getAttribute("data-from") + "\u0000" + g.getAttribute("data-to")];
      g.querySelector(".edge-rate").textContent = typeof r === "number" ? CEP.fmt.num(r, 1) + " ev/s" : "";
      g.classList.toggle("flowing", typeof r === "number" && r > 0);
    });
  };
})();
