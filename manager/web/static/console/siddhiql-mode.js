/* SiddhiQL highlighting for CodeMirror 5 (simple mode): keywords, types, annotations,
   strings, numbers, time units, comments and operators. */
(function () {
  "use strict";
  var kw = ["define", "stream", "table", "trigger", "function", "window", "from", "select",
    "insert", "into", "delete", "update", "or", "and", "not", "on", "as", "group", "by",
    "having", "order", "limit", "output", "every", "events", "all", "first", "last",
    "snapshot", "partition", "with", "of", "begin", "end", "within", "is", "in", "join",
    "left", "right", "full", "outer", "inner", "unidirectional", "return", "current",
    "expired", "raw", "for", "at", "set", "asc", "desc", "distinct", "aggregation",
    "aggregate", "per"];
  var types = ["string", "int", "long", "float", "double", "bool", "object"];
  var units = ["millisec", "millisecond", "milliseconds", "ms", "sec", "second", "seconds",
    "min", "minute", "minutes", "hour", "hours", "day", "days", "week", "weeks", "month",
    "months", "year", "years"];
  function words(list) { return new RegExp("(?:" + list.join("|") + ")\\b", "i"); }

  CodeMirror.defineSimpleMode("siddhiql", {
    start: [
      {regex: /--.*/, token: "comment"},
      {regex: /\/\*/, token: "comment", next: "comment"},
      {regex: /"""/, token: "string", next: "tstring"},
      {regex: /'(?:[^'\\]|\\.)*'?/, token: "string"},
      {regex: /"(?:[^"\\]|\\.)*"?/, token: "string"},
      {regex: /@[A-Za-z_][\w]*(?::[A-Za-z_][\w.]*)?/, token: "meta"},
      {regex: words(["true", "false", "null"]), token: "atom"},
      {regex: words(types), token: "type"},
      {regex: /-?\d+(?:\.\d+)?(?:e[-+]?\d+)?[lfd]?\b/i, token: "number"},
      {regex: words(units), token: "atom"},
      {regex: words(kw), token: "keyword"},
      {regex: /#?[A-Za-z_][\w]*(?=\s*:)/, token: "variable-3"},
      {regex: /[A-Za-z_][\w]*(?=\s*\()/, token: "variable-2"},
      {regex: /[-+\/*%=<>!]+|->/, token: "operator"},
      {regex: /[A-Za-z_][\w]*/, token: "variable"},
      {regex: /[{[(]/, indent: true},
      {regex: /[}\])]/, dedent: true}
    ],
    comment: [
      {regex: /.*?\*\//, token: "comment", next: "start"},
      {regex: /.*/, token: "comment"}
    ],
    tstring: [
      {regex: /.*?"""/, token: "string", next: "start"},
      {regex: /.*/, token: "string"}
    ],
    meta: {lineComment: "--", blockCommentStart: "/*", blockCommentEnd: "*/"}
  });
  CodeMirror.defineMIME("text/x-siddhiql", "siddhiql");
})();
