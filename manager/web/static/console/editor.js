/* Add / edit a plan: CodeMirror with SiddhiQL highlighting, validation as you type
   (POST /api/v1/validate, debounced), error spans underlined with the message under the line,
   deploy refused while invalid, and the deploy's progress (CLEANING -> DEPLOYING -> ACTIVE). */
(function () {
  "use strict";
  var host = document.getElementById("editor");
  if (!host) { return; }
  var tenant = host.getAttribute("data-tenant");
  var mode = host.getAttribute("data-mode");
  var planName = host.getAttribute("data-plan");
  var deployBtn = document.getElementById("deploy");
  var list = document.getElementById("validation-errors");
  var badge = document.getElementById("validation-state");
  var progress = document.getElementById("deploy-progress");
  var result = document.getElementById("deploy-result");
  var cm = CodeMirror.fromTextArea(document.getElementById("plan-text"), {
    mode: "siddhiql", lineNumbers: true, indentUnit: 4, tabSize: 4, lineWrapping: false,
    viewportMargin: Infinity,
    extraKeys: {"Ctrl-S": function () { deploy(); }, "Cmd-S": function () { deploy(); }}
  });
  var marks = [], widgets = [], seq = 0, timer = null, valid = false, deploying = false;
  var validatorMissing = false;

  function setBadge(text, cls) { badge.textContent = text; badge.className = "badge " + (cls || ""); }
  function updateButton() { deployBtn.disabled = deploying || !(valid || validatorMissing); }

  function clearMarks() {
    marks.forEach(function (m) { m.clear(); });
    widgets.forEach(function (w) { w.clear(); });
    marks = []; widgets = [];
    document.getElementById("validation-ok").hidden = true;
    while (list.firstChild) { list.removeChild(list.firstChild); }
  }

  function span(err) {
    var last = cm.lastLine();
    var line = Math.min(Math.max((err.line || 1) - 1, 0), last);
    var ch = Math.max((err.column || 1) - 1, 0);
    var endLine = err.endLine ? Math.min(err.endLine - 1, last) : line;
    var endCh = err.endColumn ? err.endColumn - 1 : ch;
    if (endLine < line || (endLine === line && endCh <= ch)) {   // an empty span: mark one character
      endLine = line; endCh = ch + 1;
      var len = cm.getLine(line).length;
      if (ch >= len) { ch = Math.max(len - 1, 0); endCh = Math.max(len, 1); }
    }
    return {from: {line: line, ch: ch}, to: {line: endLine, ch: endCh}};
  }

  function showErrors(errors) {
    clearMarks();
    var perLine = {};
    errors.forEach(function (err) {
      var hasPos = !!err.line;
      var li = CEP.el("li", {"data-line": err.line || "", "data-column": err.column || "",
                             "class": hasPos ? "clickable" : ""},
        [hasPos ? CEP.el("span", {"class": "pos", text: "line " + err.line + ", column " + err.column + ":"}) : null,
         hasPos ? " " : null,
         CEP.el("span", {"class": "msg", text: err.message})]);
      list.appendChild(li);
      if (!hasPos) { return; }
      var s = span(err);
      marks.push(cm.markText(s.from, s.to, {className: "cm-siddhi-error", title: err.message}));
      li.addEventListener("click", function () { cm.focus(); cm.setCursor(s.from); });
      if (!perLine[s.from.line]) {
        perLine[s.from.line] = true;
        var node = CEP.el("div", {"class": "cm-siddhi-error-msg", "data-line": err.line,
                                  text: "\u26a0 " + err.message});
        widgets.push(cm.addLineWidget(s.from.line, node, {coverGutter: false, noHScroll: true}));
      }
    });
  }

  function validate() {
    var mine = ++seq;
    setBadge("checking…", "");
    return CEP.request("POST", "/api/v1/validate", {text: cm.getValue()}).then(function (r) {
      if (mine !== seq) { return; }
      if (r.status === 404 || r.status === 405) {
        validatorMissing = true; valid = false;
        setBadge("no validator on this manager: checked on deploy", "warn");
      } else if (!r.ok || typeof r.body !== "object") {
        valid = false;
        setBadge("validation failed: " + ((r.body && r.body.message) || "HTTP " + r.status), "bad");
      } else {
        valid = !!r.body.valid;
        showErrors(r.body.errors || []);
        document.getElementById("validation-ok").hidden = !valid;
        setBadge(valid ? "valid" : (r.body.errors || []).length + " problem(s)", valid ? "ok" : "bad");
      }
      updateButton();
    }, function (err) {
      if (mine === seq) { setBadge("validation failed: " + err.message, "bad"); }
    });
  }

  cm.on("changes", function () {
    valid = false;
    updateButton();
    clearTimeout(timer);
    timer = setTimeout(validate, 300);
  });

  function trail(states, final) {
    progress.textContent = "";
    states.forEach(function (s, i) {
      if (i) { progress.appendChild(CEP.el("span", {"class": "arrow", text: " \u2192 "})); }
      progress.appendChild(CEP.el("span", {"class": "step state-" + s + (i === states.length - 1 && !final ? " current" : ""), text: s}));
    });
  }

  function follow(name, first) {
    var states = [], started = Date.now();
    function seen(state) {
      if (state && state !== "UNKNOWN" && states[states.length - 1] !== state) { states.push(state); }
    }
    seen(first);
    trail(states, false);
    return new Promise(function (resolve) {
      function step() {
        CEP.getJSON(CEP.planApi(tenant, name, "/status")).then(function (r) {
          var st = r.ok ? r.body : {state: "UNKNOWN"};
          seen(st.state);
          var done = st.state === "ACTIVE" || st.state === "FAILED" || st.state === "KILLED";
          trail(states, done);
          if (done || Date.now() - started > 600000) { resolve(st); } else { setTimeout(step, 500); }
        }, function () { setTimeout(step, 1000); });
      }
      step();
    });
  }

  function deploy() {
    if (deploying || !(valid || validatorMissing)) { return; }
    deploying = true; updateButton();
    result.textContent = "";
    var req = mode === "edit" ? CEP.request("PUT", CEP.planApi(tenant, planName), cm.getValue())
                              : CEP.request("POST", CEP.planApi(tenant), cm.getValue());
    req.then(function (r) {
      if (!r.ok) {
        var body = r.body || {};
        if (body.errors && body.errors.length) { showErrors(body.errors); }
        result.appendChild(CEP.el("p", {"class": "bad-text", text: "Refused: " + (body.message || "HTTP " + r.status)}));
        deploying = false; updateButton();
        return;
      }
      var name = r.body.name;
      return follow(name, r.body.state).then(function (st) {
        deploying = false; updateButton();
        var link = CEP.el("a", {href: CEP.planPage(tenant, name), text: "Open " + name});
        result.appendChild(CEP.el("p", {"class": st.state === "ACTIVE" ? "ok-text" : "bad-text"},
          ["Topology " + (r.body.topology || name) + " is " + st.state + (st.reason ? " (" + st.reason + ")" : "") + ". ", link]));
        if (mode === "edit" && name !== planName) { planName = name; }
        if (mode === "add") { mode = "edit"; planName = name; deployBtn.textContent = "Save and redeploy"; }
      });
    }).catch(function (err) {
      deploying = false; updateButton();
      result.appendChild(CEP.el("p", {"class": "bad-text", text: "Deploy failed: " + err.message}));
    });
  }

  deployBtn.addEventListener("click", deploy);
  validate();
})();
