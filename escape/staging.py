"""Before any run: the attacks' registry, a world-readable copy of the packages for
the unprivileged user, and that user."""

from __future__ import annotations

import importlib.util
import json
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from runtime import ATTACKS_DIR, ROOT, UNPRIV


def load_attacks() -> dict:
    sys.path.insert(0, str(ATTACKS_DIR))
    import _lib

    for path in sorted(ATTACKS_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    return dict(_lib.REGISTRY)


# --------------------------------------------------------------------------- staging


def stage_python(base: Path) -> str:
    """A world-readable copy of the cvg packages and the third-party modules they
    import, so cvg-run runs as the unprivileged user under a system interpreter even
    when the venv lives under an unreadable home. Returns the PYTHONPATH."""
    dest = base / "py"
    dest.mkdir()
    for src in sorted((ROOT / "packages").glob("*/src/*")):
        if src.is_dir() and not src.name.startswith("."):
            shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys, json, cvg_run.cli, cvg_run.planning, cvg_policy.compile, cvg_policy.load,"
        " cvg_policy.variables, cvg_policy.errors, cvg_schema, cvg_explain.cli\n"
        "print(json.dumps(sorted({getattr(m, '__file__', None) or ''"
        " for m in sys.modules.values()})))"
    )
    files = json.loads(subprocess.check_output([sys.executable, "-c", probe], cwd=ROOT))
    import sysconfig

    sites = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    tops = set()
    for f in files:
        for site in sites:
            if f.startswith(site + "/"):
                tops.add(f[len(site) + 1 :].split("/")[0])
    for site in sites:
        for top in tops:
            src = Path(site) / top
            if src.is_dir() and not (dest / top).exists():
                shutil.copytree(src, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.is_file() and not (dest / top).exists():
                shutil.copy2(src, dest / top)
    subprocess.run(["chmod", "-R", "a+rX", str(dest)], check=True)
    return str(dest)


def ensure_unpriv_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(UNPRIV)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "-s", "/usr/sbin/nologin", UNPRIV],
            check=True,
        )
        return pwd.getpwnam(UNPRIV)
