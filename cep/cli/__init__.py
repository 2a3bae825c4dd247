"""The `cep` command line: one module per verb (streamparse's cli/ layout)."""
