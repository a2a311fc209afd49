"""Eight real workloads, each with two inputs that differ the way real use differs.

The first input is the one a policy is learned from; the second uses other file names
in another subdirectory of the working directory. Each workload runs as a user would
run it: the real executables, in a working directory of its own, with a fake $HOME.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import cvg_testing
from cvg_testing import TextServer, Under

BIN: Final = Path(sys.executable).parent
TOOLS: Final = {"git": "git", "tar": "tar", "sqlite3": "sqlite3", "gcc": "gcc", "make": "make"}
"""Tool -> the Debian/Ubuntu package CI must install when it is missing."""
PATH: Final = "/usr/local/bin:/usr/bin:/bin"
PYTHON: Final = "python3"


def cvg(name: str) -> str:
    """The installed cvg executable ``name`` (next to this interpreter)."""
    path = BIN / name
    if not path.exists():
        raise RuntimeError(f"{name} is not installed in {BIN}")
    return str(path)


@dataclass
class Input:
    """One input: files to create (relative path -> text) and the command."""

    files: dict[str, str]
    argv: list[str]
    dirs: list[str] = field(default_factory=list)


@dataclass
class Workload:
    name: str
    first: Input
    second: Input
    # Runs beside the command (a server it talks to, a client that queries it) and
    # returns what it saw, compared like the command's own output.
    beside: Callable[[int], Callable[[], str]] | None = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT_CLIENT: Final = free_port()
PORT_SERVER: Final = free_port()


@contextlib.contextmanager
def loopback_server(port: int) -> Iterator[None]:
    """A HTTP server outside any sandbox, for the client workload."""
    with TextServer(("127.0.0.1", port), lambda request: f"served {request.path}\n"):
        yield


def query_from_outside(port: int) -> Callable[[], str]:
    """Start querying the sandboxed server from outside; the returned function waits
    for the answer."""
    result: list[str] = []

    def go() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
                    data = b""
                    while chunk := s.recv(4096):
                        data += chunk
                # Headers carry the date: compare the status line and the body.
                head, _, body = data.partition(b"\r\n\r\n")
                result.append(head.split(b"\r\n")[0].decode() + "\n" + body.decode())
                return
            except OSError:
                time.sleep(0.05)
        result.append("no answer")

    t = threading.Thread(target=go, daemon=True)
    t.start()

    def wait() -> str:
        t.join(40)
        return result[0] if result else "no answer"

    return wait


CLIENT: Final = f"""\
import json, sys, urllib.request
path, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen("http://127.0.0.1:{PORT_CLIENT}" + path, timeout=10) as r:
    body = r.read().decode()
with open(out, "w") as f:
    f.write(body)
print(r.status, body.strip(), json.dumps({{"out": out}}))
"""

SERVER: Final = f"""\
import http.server, os, sys
root = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(os.path.join(root, self.path.lstrip("/")), "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        print("served", self.path, flush=True)
http.server.HTTPServer.allow_reuse_address = True
s = http.server.HTTPServer(("127.0.0.1", {PORT_SERVER}), H)
s.handle_request()
s.server_close()
"""

STDLIB: Final = """\
import argparse, collections, csv, datetime, hashlib, json, pathlib, re, statistics
p = argparse.ArgumentParser()
p.add_argument("data")
a = p.parse_args()
rows = list(csv.DictReader(open(a.data)))
values = [float(r["value"]) for r in rows]
words = collections.Counter(re.findall(r"[a-z]+", " ".join(r["name"] for r in rows)))
print(json.dumps({
    "n": len(rows),
    "mean": statistics.mean(values),
    "sha": hashlib.sha256(pathlib.Path(a.data).read_bytes()).hexdigest()[:12],
    "top": words.most_common(2),
    "epoch": datetime.datetime(2020, 1, 1).isoformat(),
}))
"""

MAKEFILE: Final = "{prog}: {src}\n\tcc -O0 -o {prog} {src}\n"
C_SOURCE: Final = '#include <stdio.h>\nint main(void) {{ printf("{text}\\n"); return 0; }}\n'

GIT: Final = (
    "git init -q . && git add -A && git commit -q -m 'first import' && "
    "git log --format='%s|%an' && git ls-files"
)

WORKLOADS: Final = [
    Workload(
        "git",
        Input({"notes.txt": "a\n", "src/main.c": "int x;\n"}, ["sh", "-c", GIT]),
        Input({"README.md": "b\n", "lib/util/helper.py": "y = 2\n"}, ["sh", "-c", GIT]),
    ),
    Workload(
        "tar",
        Input(
            {"in1/a.txt": "alpha\n", "in1/b.txt": "beta\n"},
            [
                "sh",
                "-c",
                "tar cf arch1.tar in1 && mkdir -p out1 && tar xf arch1.tar -C out1 && "
                "tar tf arch1.tar | sort && cat out1/in1/*.txt",
            ],
        ),
        Input(
            {"photos/x.dat": "xx\n", "photos/deep/y.dat": "yy\n"},
            [
                "sh",
                "-c",
                "tar cf backup.tar photos && mkdir -p restore && tar xf backup.tar -C restore "
                "&& tar tf backup.tar | sort && cat restore/photos/*.dat",
            ],
        ),
    ),
    Workload(
        "sqlite3",
        Input(
            {},
            [
                "sqlite3",
                "shop.db",
                "create table t(x); insert into t values(1),(2),(39); select sum(x) from t;",
            ],
        ),
        Input(
            {"data/.keep": ""},
            [
                "sqlite3",
                "data/inventory.db",
                "create table items(n); insert into items values(5); select count(*) from items;",
            ],
        ),
    ),
    Workload(
        "python-stdlib",
        Input(
            {"report.py": STDLIB, "data.csv": "name,value\nred apple,1\ngreen apple,3\n"},
            [PYTHON, "report.py", "data.csv"],
        ),
        Input(
            {"report.py": STDLIB, "inputs/2024/sales.csv": "name,value\nblue pen,10\nred pen,2\n"},
            [PYTHON, "report.py", "inputs/2024/sales.csv"],
        ),
    ),
    Workload(
        "shell-pipeline",
        Input(
            {"logs/a.log": "b\na\nb\n", "logs/b.log": "c\nb\n"},
            [
                "sh",
                "-c",
                "cat logs/*.log | tr a-z A-Z | sort | uniq -c | sort -rn > summary.txt; "
                "wc -l < summary.txt; head -1 summary.txt",
            ],
        ),
        Input(
            {"var/app/x.txt": "q\nq\nr\n", "var/app/y.txt": "r\n"},
            [
                "sh",
                "-c",
                "cat var/app/*.txt | tr a-z A-Z | sort | uniq -c | sort -rn > var/top.txt; "
                "wc -l < var/top.txt; head -1 var/top.txt",
            ],
        ),
    ),
    Workload(
        "gcc-make",
        Input(
            {
                "hello/Makefile": MAKEFILE.format(prog="hello", src="hello.c"),
                "hello/hello.c": C_SOURCE.format(text="hello"),
            },
            ["sh", "-c", "make -s -C hello && ./hello/hello"],
        ),
        Input(
            {
                "tools/greet/Makefile": MAKEFILE.format(prog="greet", src="main.c"),
                "tools/greet/main.c": C_SOURCE.format(text="greetings"),
            },
            ["sh", "-c", "make -s -C tools/greet && ./tools/greet/greet"],
        ),
    ),
    Workload(
        "python-http-client",
        Input({"client.py": CLIENT}, [PYTHON, "client.py", "/status", "status.txt"]),
        Input(
            {"client.py": CLIENT, "downloads/.keep": ""},
            [PYTHON, "client.py", "/files/report.csv", "downloads/report.csv"],
        ),
    ),
    Workload(
        "python-http-server",
        Input(
            {"server.py": SERVER, "site/index.html": "<p>one</p>\n"}, [PYTHON, "server.py", "site"]
        ),
        Input(
            {"server.py": SERVER, "public/v2/index.html": "<p>two</p>\n"},
            [PYTHON, "server.py", "public/v2"],
        ),
        beside=query_from_outside,
    ),
]


def missing_tools() -> list[str]:
    return [
        f"{t} (apt package {p})" for t, p in TOOLS.items() if shutil.which(t, path=PATH) is None
    ]


@dataclass
class Place:
    """A working directory and a fake home, both under one temporary root."""

    root: Path
    work = Under("work")
    home = Under("home")

    def env(self) -> dict[str, str]:
        return {"PATH": PATH, "HOME": str(self.home), "LANG": "C.UTF-8"}

    def reset(self, inp: Input) -> None:
        """The working directory as the input needs it, nothing else in it."""
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        for rel, text in inp.files.items():
            p = self.work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        if not self.home.exists():
            self.home.mkdir()
            (self.home / ".gitconfig").write_text(
                "[user]\n\tname = Test User\n\temail = test@example.org\n"
                "[init]\n\tdefaultBranch = main\n"
            )


@dataclass
class Outcome:
    status: int
    stdout: str
    beside: str
    stderr: str


def run(
    place: Place,
    w: Workload,
    inp: Input,
    prefix: list[str],
    *,
    extra_env: dict[str, str] | None = None,
    port: int | None = None,
) -> Outcome:
    """Run the input's command (after ``prefix``: nothing, cvg-observe, cvg-run) from a
    fresh working directory."""
    place.reset(inp)
    env = place.env() | (extra_env or {})
    wait = w.beside(PORT_SERVER) if w.beside is not None else None
    proc = subprocess.run(
        [*prefix, *inp.argv],
        cwd=place.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Outcome(proc.returncode, proc.stdout, wait() if wait else "", proc.stderr)


def give_to(place: Place, user: pwd.struct_passwd) -> None:
    """Hand the working directory and the home over to ``user``."""
    for top in (place.work, place.home):
        for dirpath, dirnames, filenames in os.walk(top):
            for n in [dirpath, *(os.path.join(dirpath, x) for x in dirnames + filenames)]:
                os.chown(n, user.pw_uid, user.pw_gid)


SITE: Final = str(next(BIN.parent.glob("lib/python3*/site-packages")))
LAUNCH: Final = (
    "import site, sys; site.addsitedir(sys.argv.pop(1)); sys.argv[0] = 'cvg-run'; "
    "from cvg_run.cli import run; run()"
)


def launcher_for(user: pwd.struct_passwd) -> list[str]:
    """cvg-run as ``user`` starts it: an interpreter of this Python version that user
    can execute, and this environment's packages, or a world-readable copy of them when
    the user cannot enter the clone (the interpreter running the tests, and the clone,
    may sit under a 0700 home)."""
    site = cvg_testing.import_path_for(user) or SITE
    return [cvg_testing.unpriv_python(user), "-c", LAUNCH, site]


def run_as(
    user: pwd.struct_passwd, place: Place, w: Workload, inp: Input, policy: Path | None
) -> Outcome:
    """The input's command as ``user``: bare (``policy`` None), or under cvg-run (see
    launcher_for)."""
    place.reset(inp)
    give_to(place, user)
    argv = list(inp.argv)
    if policy is not None:
        argv = [*launcher_for(user), "-p", str(policy), "--", *argv]
    wait = w.beside(PORT_SERVER) if w.beside is not None else None
    proc = subprocess.run(
        argv, cwd=place.work, env=place.env(), capture_output=True, text=True, timeout=120,
        user=user.pw_uid, group=user.pw_gid, extra_groups=[],
    )  # fmt: skip
    return Outcome(proc.returncode, proc.stdout, wait() if wait else "", proc.stderr)


def learn(place: Place, w: Workload, policy: Path) -> tuple[Outcome, str]:
    """Observe the first input, then generate and validate: the policy file and the
    generator's notes."""
    obs = place.root / "obs.json"
    out = run(place, w, w.first, [cvg("cvg-observe"), "--out", str(obs), "--"])
    return out, generate(place, obs, policy)


def generate(place: Place, obs: Path, policy: Path, *options: str) -> str:
    """cvg-generate OPTIONS OBS | cvg-validate -o POLICY; the generator's notes."""
    gen = subprocess.run(
        [cvg("cvg-generate"), *options, str(obs)],
        capture_output=True,
        env=place.env(),
        timeout=60,
    )
    if gen.returncode != 0:
        raise AssertionError(f"cvg-generate failed: {gen.stderr.decode()}")
    val = subprocess.run(
        [cvg("cvg-validate"), "--cwd", str(place.work), "-o", str(policy)],
        input=gen.stdout,
        capture_output=True,
        env=place.env(),
        cwd=place.work,
        timeout=60,
    )
    if val.returncode != 0:
        raise AssertionError(f"cvg-validate failed: {val.stderr.decode()}")
    return gen.stderr.decode()


def sandboxed(policy: Path, abi4: bool = False) -> list[str]:
    cmd = [cvg("cvg-run"), "-p", str(policy)]
    if abi4:
        cmd.append("--allow-degraded")
    return [*cmd, "--"]


def with_server(w: Workload) -> contextlib.AbstractContextManager[None]:
    if w.name == "python-http-client":
        return loopback_server(PORT_CLIENT)
    return contextlib.nullcontext()


def make_place(base: Path, name: str) -> Place:
    root = base / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    os.chmod(root, 0o755)
    return Place(root)
