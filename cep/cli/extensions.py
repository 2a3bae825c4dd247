"""List the SiddhiQL extensions this installation knows.

Siddhi's standard stream processors and namespaced functions, and every plug-in of the
entry-point group sparkcep.extensions (with its distribution, folder and names, or why it was
refused)."""

import json


def subparser_hook(subparsers):
    parser = subparsers.add_parser("extensions", help=__doc__.splitlines()[0], description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def _standard():
    from cep.catalog import ext_processors

    ext_processors._load_functions()
    rows = [
        ("stream processor", f"#{e.full_name}", e.doc)
        for e in ext_processors.STREAM_PROCESSORS.values()
        if e.origin == "siddhi"
    ]
    rows += [
        ("function", f"{ns}:{name}", entry.doc)
        for (ns, name), entry in ext_processors.FUNCTIONS.items()
        if ns in _standard_namespaces()
    ]
    return sorted(rows, key=lambda r: r[1])


def _standard_namespaces():
    from cep.catalog.plugins import STANDARD_NAMESPACES

    return STANDARD_NAMESPACES


def run(args):
    from cep.catalog import plugins

    found = plugins.plugins()
    standard = _standard()
    if args.json:
        print(
            json.dumps(
                {
                    "standard": [{"kind": k, "name": n, "doc": d} for k, n, d in standard],
                    "plugins": [
                        {
                            "entry_point": p.entry_point,
                            "distribution": p.distribution,
                            "location": p.location,
                            "namespace": p.namespace,
                            "names": list(p.names),
                            "error": p.error,
                        }
                        for p in found
                    ],
                },
                indent=2,
            )
        )
        return 0
    print("Siddhi 3.2 standard extensions (stream processors and stateful functions):")
    for kind, name, doc in standard:
        print(f"  {name:32} {kind:17} {doc.split(':', 1)[-1].strip()[:70]}")
    print(f"\nPlug-ins (entry-point group {plugins.GROUP}): {len(found) or 'none'}")
    for p in found:
        print(f"  {p.entry_point}  [{p.distribution or 'unknown distribution'}]")
        if p.location:
            print(f"    installed in {p.location}")
        if p.error:
            print(f"    refused: {p.error}")
            continue
        for name in p.names:
            print(f"    {name}")
    return 0
