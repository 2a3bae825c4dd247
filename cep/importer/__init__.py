"""`cep import`: a CEP 4.0 deployment (folder or `.car`) as plans with `@source`/`@sink`.

    result = import_deployment(path)      # ImportResult(plans=[ImportedPlan], problems=[...])

Each execution plan keeps its text, `@Import`/`@Export` and stream versions; every receiver
feeding an imported stream becomes a `@source(...)` and every publisher reading an exported
stream a `@sink(...)`, written right after the stream's annotations. Every receiver, publisher
or property that is not converted as it was is a report line (cep.importer.reader.Problem)
naming the file and the element. The converted plans are compiled (the compiler's positioned
errors are report lines too)."""

from dataclasses import dataclass, field

from cep.errors import SiddhiQLError
from cep.importer.convert import convert
from cep.importer.reader import Problem, read_deployment


@dataclass
class ImportedPlan:
    name: str
    file: str
    text: str
    sources: int = 0
    sinks: int = 0
    valid: bool = True


@dataclass
class ImportResult:
    plans: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def errors(self):
        return [p for p in self.problems if p.level == "error"]


def import_deployment(path) -> ImportResult:
    import cep.compiler

    dep = read_deployment(path)
    result = ImportResult(problems=list(dep.problems))
    used = set()
    for file, text in dep.plans:
        try:
            plan = cep.compiler.parse(text)
        except SiddhiQLError as exc:
            result.problems.append(
                Problem(file, f"line {exc.line}, column {exc.column}", exc.message)
            )
            continue
        inserts, counts = [], {"source": 0, "sink": 0}
        for definition in plan.streams:
            for ann_name, arts in (("Import", dep.receivers), ("Export", dep.publishers)):
                ref = next((a.value for a in definition.annotations if a.matches(ann_name)), None)
                if ref is None:
                    continue
                if ref not in dep.streams:
                    result.problems.append(
                        Problem(
                            file,
                            f"@{ann_name}('{ref}')",
                            "no eventstreams/ definition of this stream in the deployment",
                            "warning",
                        )
                    )
                for art in arts:
                    if art.stream != ref:
                        continue
                    used.add(id(art))
                    conn = convert(art, definition, result.problems)
                    if conn is not None:
                        last = definition.annotations[-1].span
                        inserts.append((last.end_pos, "\n" + conn.text()))
                        counts[conn.direction] += 1
        at = {}
        for pos, snippet in inserts:  # several at one place keep the deployment's order
            at[pos] = at.get(pos, "") + snippet
        for pos in sorted(at, reverse=True):
            text = text[:pos] + at[pos] + text[pos:]
        name = plan.name or file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        imported = ImportedPlan(name, file, text, counts["source"], counts["sink"])
        try:
            cep.compiler.compile(text)
        except SiddhiQLError as exc:
            imported.valid = False
            result.problems.append(
                Problem(
                    file,
                    f"line {exc.line}, column {exc.column}",
                    f"the converted plan does not compile: {exc.message}",
                )
            )
        result.plans.append(imported)
    for art in dep.receivers + dep.publishers:
        if id(art) not in used:
            verb = "feeds" if art.kind == "receiver" else "reads"
            result.problems.append(
                Problem(
                    art.file,
                    f"event{art.kind.capitalize()} '{art.name}'",
                    f"{verb} stream {art.stream}, which no execution plan "
                    f"{'imports' if art.kind == 'receiver' else 'exports'}: not converted",
                    "warning",
                )
            )
    return result
