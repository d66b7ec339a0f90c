"""Build step of lkm's wheel (everything else is in pyproject.toml): the wheel carries the
results pack that ships with lkm, so that `lkm compare` and `lkm report --all --results
published` work from an installed lkm, outside a clone.

The pack has one source, the repository's ``docs/runs`` (pinned by
``lkm/report/published.json``); an sdist carries it too (MANIFEST.in). ``build_py``
copies exactly the files its manifest (``PACK.json``) lists into
``lkm/report/published_pack/`` of the build, after checking the manifest against the pin:
a wheel whose pack would not verify is not built. An editable install reads
``docs/runs`` of the clone itself and copies nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path, PurePosixPath

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PIN = ROOT / "lkm" / "report" / "published.json"
#: Where the pack goes inside the package (lkm.report.pack.INSTALLED_PACK).
INSIDE = ("lkm", "report", "published_pack")
MANIFEST = "PACK.json"


def _pack_files() -> tuple[Path, list[str]]:
    """The pinned pack's folder and the files to copy (its manifest, then every file it
    lists), refused when the manifest is not the pinned one or a listed path is unsafe."""
    pin = json.loads(PIN.read_text(encoding="utf-8"))
    pack = ROOT / pin["pack"]
    manifest = pack / MANIFEST
    if not manifest.is_file():
        raise SystemExit(f"{manifest}: missing; the wheel carries the results pack (restore {pin['pack']})")
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    if digest != pin["manifest_sha256"]:
        raise SystemExit(f"{manifest}: sha256 {digest[:12]}… is not the one {PIN.name} pins "
                         f"({pin['manifest_sha256'][:12]}…); restore {pin['pack']} or rewrite the pin (lkm docs snapshot)")
    listed = sorted(json.loads(manifest.read_text(encoding="utf-8"))["files"])
    for rel in listed:
        parts = PurePosixPath(rel).parts
        if not rel or rel.startswith("/") or "\\" in rel or ".." in parts or "." in parts or not (pack / rel).is_file():
            raise SystemExit(f"{manifest}: lists {rel!r}, not a file inside the pack")
    return pack, [MANIFEST, *listed]


class build_py_with_pack(build_py):
    """setuptools' build_py, then the results pack copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        pack, files = _pack_files()
        dest = Path(self.build_lib, *INSIDE)
        if dest.exists():
            shutil.rmtree(dest)  # a pack holds exactly its listed files: nothing left from an older build
        for rel in files:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pack / rel, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        _, files = _pack_files()
        return [*outputs, *(str(Path(self.build_lib, *INSIDE, rel)) for rel in files)]


setup(cmdclass={"build_py": build_py_with_pack})
