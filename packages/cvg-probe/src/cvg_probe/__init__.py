"""cvg-probe: prove, live, what this kernel can enforce.

Every feature cvg relies on (each Landlock right, scope and flag, the seccomp
filter, no_new_privs, capability dropping, each rlimit, the subreaper, pidfds,
close_range, strace) is exercised in a throwaway forked child and watched to
bite. The result is a ``cvg.facts`` message (:class:`cvg_schema.Facts`).

>>> facts = probe()                      # cached per boot, kernel, user and ABI cap
>>> facts.proven("landlock.scope.signal")

:func:`run_probes` always probes afresh and touches no cache.
"""

from __future__ import annotations

from cvg_schema import Facts

from . import cache as _cache
from ._version import __version__
from .probes import DEFAULT_TIMEOUT, FEATURES, ProbeError, run_probes

__all__ = ["DEFAULT_TIMEOUT", "FEATURES", "ProbeError", "__version__", "probe", "run_probes"]


def probe(*, fresh: bool = False, cache: bool = True) -> Facts:
    """What this kernel can enforce, each feature proven live.

    With ``cache`` (the default), results of an earlier probe in this boot, on
    this kernel, by this user, under the same ``CVG_LANDLOCK_ABI_MAX`` and
    cvg-probe version are returned (``cached`` is then true); otherwise the
    probe runs and its result is stored. ``fresh`` skips reading the cache but
    still rewrites it. ``cache=False`` neither reads nor writes it. A cache
    that cannot be read or written is ignored. Raises :class:`ProbeError` only
    when the probe itself cannot run.
    """
    key = _cache.cache_key() if cache else None
    if key is not None and not fresh:
        hit = _cache.read(key)
        if hit is not None:
            return hit
    facts = run_probes()
    if key is not None:
        try:
            _cache.write(key, facts)
        except OSError:
            pass  # an unwritable cache costs a re-probe next time, nothing more
    return facts
