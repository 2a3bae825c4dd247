"""Checks over the source tree itself: habits a reader of the code depends on."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# folders that are not ours to read: the virtualenv, git, build output, run data, vendored code
SKIP_DIRS = {
    ".venv",
    ".git",
    "__pycache__",
    "build",
    "dist",
    "var",
    "vendor",
    "spark-warehouse",
    "metastore_db",
    "test-artifacts",
    ".pytest_cache",
    "site",
}
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".sh",
    ".yaml",
    ".yml",
    ".cfg",
    ".toml",
    ".html",
    ".js",
    ".css",
    ".lark",
    ".xsd",
    ".txt",
    ".siddhiql",
    ".ini",
    "",
}


def source_files(*, skip_tests: bool = True):
    """Every text file of the project (not the tests when `skip_tests`), as paths under ROOT."""
    for folder, dirs, files in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not (skip_tests and rel == Path(".") and d == "tests")
        )
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in TEXT_SUFFIXES and path.is_file() and not path.is_symlink():
                yield path


TICKET = re.compile(r"\bissues?[ _-]?#?\d+", re.IGNORECASE)


def test_no_issue_numbers_outside_tests():
    """Code, comments and docs say what the code does and why, not which ticket asked for it:
    a reader outside the tracker cannot follow "issue 13"."""
    found = []
    for path in source_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if TICKET.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "issue numbers outside tests/:\n" + "\n".join(found)


def test_the_ticket_pattern_catches_the_usual_spellings():
    for text in ("see issue 13", "(issue 11)", "issue-20", "Issue #7", "issues 13"):
        assert TICKET.search(text), text
    for text in ("tissue 3", "issues", "the issue is 3 lines"):
        assert not TICKET.search(text), text


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def site_only_pages() -> set:
    """The pages the site build writes from the code (docs/_hooks/reference_pages.py names
    them): no file on disk, so `mkdocs build --strict` checks the links to them."""
    hook = (ROOT / "docs" / "_hooks" / "reference_pages.py").read_text()
    return {
        (ROOT / "docs" / uri).resolve() for uri in re.findall(r'"(reference/[\w-]+\.md)"', hook)
    }


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    return {
        github_anchor(line.lstrip("#"))
        for line in path.read_text().splitlines()
        if re.match(r"#{1,6} ", line)
    }


def test_markdown_links_resolve():
    """Every relative link in the docs, the READMEs and SECURITY.md names a file that exists,
    and a #section of a Markdown file names one of its headings (as GitHub renders them)."""
    broken = []
    generated = site_only_pages()
    assert generated, "the reference hook names no page"
    for path in source_files(skip_tests=False):
        if path.suffix != ".md" or "tests" in path.relative_to(ROOT).parts:
            continue
        for target in LINK.findall(path.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}: {target}"
            if dest in generated:
                continue
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_is_a_front_page():
    """The README stays short and keeps the two commands CI and users run."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 150
    assert "    bin/cep.sh      # start the system on its embedded defaults" in text
    assert "    bin/test.sh     # run the whole test suite" in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bin/test.sh" in ci


def imported_modules(path: Path):
    """Every module name an `import` or `from ... import` in the file names (any depth)."""
    import ast

    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_benchmarks_and_packages_import_nothing_from_tests():
    """Benchmarks and the packages depend on the project only: shared harnesses live in
    package modules (e.g. manager.testing), which tests may import, not the other way."""
    found = []
    for path in source_files():
        if path.suffix == ".py":
            found += [
                f"{path.relative_to(ROOT)}: {name}"
                for name in imported_modules(path)
                if name == "tests" or name.startswith("tests.")
            ]
    assert not found, "imports from tests/:\n" + "\n".join(found)


PACKAGES = ("cep", "manager", "topology", "receivers", "publishers")


def package_modules() -> dict:
    """module name -> file, for every module of the project's packages."""
    mods = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def _under_type_checking(tree) -> set:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (never imported at run time)."""
    import ast

    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def import_graph(mods: dict) -> dict:
    """module -> the project modules it imports, at module level or inside functions."""
    import ast

    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped = _under_type_checking(tree)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    head = package[: len(package) - (node.level - 1)]
                    base = ".".join(head + ([node.module] if node.module else []))
                # `from a.b import c`: the module a.b.c when there is one, else a.b
                wanted = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    for alias in node.names
                ]
            else:
                continue
            for target in wanted:
                parts = target.split(".")
                while parts and ".".join(parts) not in mods:
                    parts.pop()
                if parts and ".".join(parts) != name:
                    targets.add(".".join(parts))
        graph[name] = targets
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles():
    """No group of modules imports each other in a circle, function-level imports included:
    what two modules share belongs to a third module both import, the one that owns it."""
    graph = import_graph(package_modules())
    found = cycles(graph)
    detail = "\n".join(
        " <-> ".join(c)
        + "\n"
        + "\n".join(f"    {m} imports {sorted(set(graph[m]) & set(c))}" for m in c)
        for c in found
    )
    assert not found, f"import cycles:\n{detail}"


def test_the_cycle_check_sees_a_cycle_and_function_level_imports(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one.py").write_text("def f():\n    from pkg import two\n")
    (pkg / "two.py").write_text("from .one import f\n")
    mods = {"pkg": pkg / "__init__.py", "pkg.one": pkg / "one.py", "pkg.two": pkg / "two.py"}
    assert cycles(import_graph(mods)) == [["pkg.one", "pkg.two"]]


# `assert <something timed> < N`: a clock reading, or a name that holds a duration
TIMED = re.compile(
    r"^\s*assert\b.*("
    r"time\.(monotonic|perf_counter|time)\(\)\s*-\s*\w+"  # a clock reading minus a start
    r"|\w*(elapsed|took|duration|seconds|spent|secs)\w*(\[[^\]]*\])?"  # a duration's name
    r"|\w+\[[\"'][^\"']*_s[\"']\]"  # a duration's key: x["ready_s"]
    r")\s*<"
)
# a generous deadline of a waiting loop is no threshold: `assert time.monotonic() < deadline`
DEADLINE = re.compile(r"assert\s+time\.(monotonic|perf_counter|time)\(\)\s*<\s*\w*deadline")


def test_tests_assert_no_wall_clock_upper_bounds():
    """A test never fails because the machine was slow: it waits with a generous deadline for
    what it checks, and prints the figures; benchmarks/ measures speed."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "test_codebase.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if TIMED.search(line) and not DEADLINE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "wall-clock thresholds in tests:\n" + "\n".join(found)


def test_the_timed_assertion_pattern():
    for line in (
        "    assert time.monotonic() - started < 2.0",
        "    assert elapsed < 30, elapsed",
        "    assert took <= LIMIT + 5",
        "    assert timings['duration_s'] < 10",
        "    assert 0.15 < time.perf_counter() - t0 < 5",
    ):
        assert TIMED.search(line), line
    for line in (
        "    assert time.monotonic() < deadline, status",
        "    assert took >= 1.0, took",
        "    assert len(calls) <= int(elapsed) + 1",
        "    assert sent < 50 and waited > 0.15",
    ):
        assert not (TIMED.search(line) and not DEADLINE.search(line)), line


def layer(module: str) -> str:
    """The layer of a module: cep.<subpackage> for the cep packages, else its top package."""
    parts = module.split(".")
    if parts[0] == "cep" and len(parts) > 1 and (ROOT / "cep" / parts[1]).is_dir():
        return f"cep.{parts[1]}"
    return parts[0]


# layer -> the layers it must never import: the model is at the bottom, then the compiler,
# the engine, topologies, and the manager on top; workers, receivers and publishers run
# without a manager
NEVER_IMPORTS = {
    "cep.model": {
        "cep.compiler",
        "cep.engine",
        "topology",
        "manager",
        "cep.worker",
        "receivers",
        "publishers",
    },
    "cep.compiler": {"cep.engine", "topology", "manager", "cep.worker", "receivers", "publishers"},
    "cep.engine": {"cep.compiler", "topology", "manager", "cep.worker", "receivers", "publishers"},
    "topology": {"manager", "cep.worker", "receivers", "publishers"},
    "cep.worker": {"manager"},
    "receivers": {"manager"},
    "publishers": {"manager"},
}


def test_no_upward_imports_between_layers():
    graph = import_graph(package_modules())
    found = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer(target) in NEVER_IMPORTS.get(layer(module), ())
    ]
    assert not found, "upward imports:\n" + "\n".join(found)


def test_layers_of_modules():
    assert layer("cep.engine.selector") == "cep.engine"
    assert layer("cep.errors") == "cep" and layer("cep") == "cep"
    assert layer("manager.web.console.data") == "manager"
    assert "manager" in NEVER_IMPORTS[layer("receivers.spout")]
