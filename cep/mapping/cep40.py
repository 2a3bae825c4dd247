"""CEP 4.0's attribute naming: a stream attribute `meta_x` is metaData `x`, `correlation_x` is
correlationData `x`, any other is payloadData; the default formats group them so."""

META, CORRELATION, PAYLOAD = "metaData", "correlationData", "payloadData"
SECTIONS = (META, CORRELATION, PAYLOAD)


def section_of(name: str):
    """(section, name inside it) of a stream attribute."""
    if name.startswith("meta_"):
        return META, name[len("meta_") :]
    if name.startswith("correlation_"):
        return CORRELATION, name[len("correlation_") :]
    return PAYLOAD, name


def grouped(names) -> dict:
    """{section: [(index, inner name), ...]} for the sections that have attributes, in the
    CEP 4.0 order (meta, correlation, payload)."""
    out = {}
    for i, n in enumerate(names):
        sec, inner = section_of(n)
        out.setdefault(sec, []).append((i, inner))
    return {s: out[s] for s in SECTIONS if s in out}
