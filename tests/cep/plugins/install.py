"""Install the sample plug-in (tests/cep/plugins/sample_plugin) into a folder, laid out as pip
lays out an installed distribution (package + .dist-info with METADATA, entry_points.txt and
RECORD), without a build backend: that layout is what entry-point discovery reads."""

import base64
import hashlib
import shutil
from pathlib import Path

SAMPLE = Path(__file__).parent / "sample_plugin"
NAME, VERSION = "cep_sample_plugin", "0.1.0"
ENTRY_POINTS = """[sparkcep.extensions]
demo = cep_sample_plugin:EXTENSION
broken = cep_sample_plugin:NOT_THERE
greedy = cep_sample_plugin:STEALS_STR
"""


def install(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        SAMPLE / "src" / NAME, target / NAME, ignore=shutil.ignore_patterns("__pycache__")
    )
    info = target / f"{NAME}-{VERSION}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: cep-sample-plugin\nVersion: {VERSION}\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "INSTALLER").write_text("tests\n")
    rows = []
    for path in sorted(p for p in target.rglob("*") if p.is_file()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest())
        rows.append(
            f"{path.relative_to(target).as_posix()},sha256="
            f"{digest.decode().rstrip('=')},{path.stat().st_size}"
        )
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return target
