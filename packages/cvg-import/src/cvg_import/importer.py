"""``import_divergence``: bytes of a Divergence report to a partial ``cvg.observation``."""

from __future__ import annotations

import posixpath

from pydantic import ValidationError

from cvg_schema import Observation, SchemaError, digest_bytes, dumps, loads_as

from .baseline import merge_baseline
from .divergence import observation_from_report
from .errors import ImportRefused
from .paths import ArtifactRoot
from .report import parse_report

__all__ = ["Baseline", "artifact_root", "import_divergence"]


class Baseline:
    """A baseline observation and where it came from."""

    def __init__(self, observation: Observation, name: str | None, digest: str | None) -> None:
        self.observation = observation
        self.name = name
        self.digest = digest


def import_divergence(
    data: bytes,
    *,
    root: str | None = None,
    target: str | None = None,
    name: str | None = None,
    baseline: Baseline | None = None,
) -> Observation:
    """The partial observation of a Divergence report (either shape).

    ``root`` is the artifact root as it was when Divergence ran the tool (its working
    directory), when the caller knows it. Raises :class:`ImportRefused` for a report
    that cannot be imported.
    """
    report = parse_report(data, target=target)
    placed = artifact_root(root, report.artifact_source)
    try:
        obs = observation_from_report(
            report, root=placed, report_name=name, report_digest=digest_bytes(data)
        )
        if baseline is not None:
            obs = merge_baseline(
                obs, baseline.observation, name=baseline.name, digest=baseline.digest
            )
        # The merge copies models without validating them: check what goes out whole.
        return loads_as(Observation, dumps(obs))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ImportRefused("$", f"the observation would not be valid: {where}: {first['msg']}")
    except SchemaError as e:
        raise ImportRefused("$", f"the observation would not be valid: {e}") from None


def artifact_root(given: str | None, source: str | None) -> ArtifactRoot:
    """The artifact root: ``given`` (checked), else the wrapper's ``source`` when absolute;
    a relative ``source`` still tells which reported paths are the artifact's own."""
    path: str | None = None
    if given is not None:
        if not given.startswith("/") or "\0" in given or "${" in given:
            raise ImportRefused("--artifact-root", f"must be an absolute path, not {given!r}")
        path = "/" + posixpath.normpath(given).lstrip("/")
        if path == "/":
            raise ImportRefused("--artifact-root", "/ would make every path the artifact's own")
    relative: str | None = None
    if source:
        if source.startswith("/"):
            if path is None and "${" not in source and posixpath.normpath(source) != "/":
                path = "/" + posixpath.normpath(source).lstrip("/")
        elif "${" not in source:
            relative = source
    return ArtifactRoot(path=path, relative=relative)
