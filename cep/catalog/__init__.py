"""The catalog of built-ins: every function, aggregator and window of Siddhi 3 core, one entry
each with its arity (or parameters), its type rule and its implementation.

The compiler reads it to check and type plans; the engine reads it to run them. It imports
neither (windows name their engine class and load it on first use), so the engine never
imports the compiler. Modules: `rules` (promotion, arity, name matching), `functions`,
`aggregators`, `windows`; `ext` holds the namespaced extension functions (`str:`, `math:`,
`regex:`, `time:`, `map:`) and their registry."""
