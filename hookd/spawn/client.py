"""The hook client `hookd spawn` installs and the commands that run it: the bash client
(``HOOKD_HOME/bin/hook-client``) or the compiled one (``hook-client-c``, ``HOOKD_HOOK_CLIENT``),
and each hook's exact shell command with hookd's tag (:func:`tag`) baked in."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import platformdirs

from hookd.config import MAX_SOCKET_PATH, Home, atomic_write
from hookd.hooks import c_client_source, client_template
from hookd.models import ConfigError


def tag(builder: str) -> str:
    return f"# hookd builder={builder}"


def bash_path() -> str:
    """The real path of bash (no shims, no PATH lookup at hook time): the first ``bash`` on
    PATH (then the usual places) that resolves to a binary, skipping ``#!`` scripts such as
    version-manager shims."""
    found = shutil.which("bash") or "/bin/bash"
    candidates = [found, *(os.path.join(d, "bash") for d in os.get_exec_path()), "/bin/bash", "/usr/bin/bash"]
    for c in candidates:
        real = os.path.realpath(c)
        try:
            with open(real, "rb") as f:
                if f.read(2) != b"#!" and os.access(real, os.X_OK):
                    return real
        except OSError:
            continue
    return os.path.realpath(found)


#: ``HOOKD_HOOK_CLIENT``: which hook client `hookd spawn` writes. ``auto`` (default): the
#: compiled client when a C compiler builds it, else the bash client; ``c``: the compiled
#: client, and spawn fails without a working compiler; ``bash``: the bash client.
HOOK_CLIENTS = ("auto", "c", "bash")
#: Compiler flags tried in order: static (no dynamic loader at each hook's start: ~0.15 ms),
#: then dynamic where the C library cannot link statically (macOS).
C_FLAGS = (["-O2", "-static"], ["-O2"])


def hook_client_kind() -> str:
    """``HOOKD_HOOK_CLIENT`` (auto, c or bash). Raises ConfigError on another value."""
    kind = (os.environ.get("HOOKD_HOOK_CLIENT") or "auto").strip().lower()
    if kind not in HOOK_CLIENTS:
        raise ConfigError(f"HOOKD_HOOK_CLIENT must be auto, c or bash, not {kind!r}")
    return kind


def c_compiler() -> list[str] | None:
    """The C compiler: ``$CC`` (split like a shell word list), else the first of cc, gcc,
    clang on PATH; None when there is none."""
    if os.environ.get("CC"):
        return shlex.split(os.environ["CC"])
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def build_c_client() -> Path:
    """Build the compiled hook client (``hooks/client.c``), or reuse an earlier build: builds
    are cached in the user cache dir, keyed by the source, the compiler (path, size, mtime)
    and the flags; the binary has no home baked in, so one build serves every home.
    Returns the cached binary. Raises ConfigError (with the compiler's last words) when no
    compiler is found or none of C_FLAGS builds a binary that runs."""
    compiler, source, out = _c_build()
    cache = out.parent
    if os.access(out, os.X_OK):
        return out
    try:
        built = build_program(cache, compiler, source, out)
    except OSError as e:  # the cache cannot be written (read-only home directory, full disk)
        raise ConfigError(f"cannot build the compiled hook client in {cache}: {e.strerror or e}") from None
    if isinstance(built, Path):
        return built
    raise ConfigError(f"cannot build the compiled hook client with {' '.join(compiler)}: {built or 'unknown error'}")


def _c_build() -> tuple[list[str], str, Path]:
    """(the compiler, the client's C source, where its build is cached: keyed by the source,
    the compiler and the flags). Raises ConfigError when there is no compiler."""
    compiler = c_compiler()
    if not compiler:
        raise ConfigError("no C compiler found ($CC, cc, gcc or clang)")
    source = c_client_source()
    exe = shutil.which(compiler[0]) or compiler[0]
    try:
        st = os.stat(exe)
        ident = f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"
    except OSError as e:
        raise ConfigError(f"C compiler {compiler[0]!r}: {e.strerror}") from None
    key = hashlib.sha256("\0".join([source, *compiler, ident, str(MAX_SOCKET_PATH), repr(C_FLAGS)]).encode()).hexdigest()[:20]
    return compiler, source, Path(platformdirs.user_cache_dir("hookd")) / "hook-client" / f"hook-client-c-{key}"


def c_build_path() -> Path | None:
    """Where this hookd's compiled hook client is cached once built (it may not be yet); None
    without a C compiler. Builds nothing."""
    try:
        return _c_build()[2]
    except ConfigError:
        return None


def _runs(exe: Path) -> str | None:
    """None when ``exe`` runs (no arguments: "nothing to do", exit 0 and silence), else why not."""
    try:
        smoke = subprocess.run([os.fspath(exe)], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the built client does not run: {e}"
    if smoke.returncode != 0 or smoke.stdout or smoke.stderr:
        return f"the built client exited {smoke.returncode} with no arguments"
    return None


def build_program(cache: Path, compiler: list[str], source: str, out: Path) -> Path | str:
    """Compile the C ``source`` with ``compiler`` and the first of C_FLAGS that gives a binary
    that runs (no arguments: exit 0, silent), into ``out`` (atomically), building in a temp
    dir under ``cache``. Returns ``out``, or the last failure's message. Raises OSError when
    ``cache`` cannot be written. (bench/run.py builds its no-op floor with it.)"""
    cache.mkdir(parents=True, exist_ok=True)
    last = ""
    with tempfile.TemporaryDirectory(dir=cache, prefix=".build-") as tmp:
        src, exe = Path(tmp) / "client.c", Path(tmp) / "hook-client-c"
        src.write_text(source, encoding="utf-8")
        for flags in C_FLAGS:
            try:
                r = subprocess.run([*compiler, *flags, f"-DMAX_SOCKET_PATH={MAX_SOCKET_PATH}", "-o", os.fspath(exe), os.fspath(src)],
                                   capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.TimeoutExpired) as e:
                last = str(e)
                continue
            if r.returncode != 0:
                lines = r.stderr.decode(errors="replace").strip().splitlines()
                last = lines[-1] if lines else f"exit status {r.returncode}"
                continue
            why = _runs(exe)
            if why:
                last = why
                continue
            os.chmod(exe, 0o700)  # homes hard-link it: 0700 like the rest of a home
            os.replace(exe, out)
            return out
    return last


def install_client(home: Home) -> tuple[str, str | None]:
    """Write the home's hook clients; return (kind, note): kind ``c`` when the compiled
    client is installed (``bin/hook-client-c``), ``bash`` otherwise; note says why the
    compiled client was not used (None when it was, or when bash was asked for).
    The bash client is always written (the fallback, and what earlier spawns' commands
    exec). Raises ConfigError when HOOKD_HOOK_CLIENT=c and the build fails."""
    write_client(home)
    kind = hook_client_kind()
    if kind == "bash":
        return "bash", None
    try:
        built = build_c_client()
    except ConfigError as e:
        if kind == "c":
            raise ConfigError(f"HOOKD_HOOK_CLIENT=c: {e.message}") from None
        return "bash", f"{e.message}; using the bash client (about 2x slower per hook)"
    target = home.c_client
    try:
        same = os.path.samefile(target, built) or target.read_bytes() == built.read_bytes()
    except OSError:
        same = False
    if not same:
        # a hard link to the cached build (instant, and it outlives a cache cleanup), else a copy
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            tmp.unlink(missing_ok=True)
            os.link(built, tmp)
            os.replace(tmp, target)
        except OSError:
            tmp.unlink(missing_ok=True)
            atomic_write(target, built.read_bytes(), mode=0o700)
    why = _runs(target)  # where it is run from: a home on a noexec mount cannot run it
    if why:
        target.unlink(missing_ok=True)
        if kind == "c":
            raise ConfigError(f"HOOKD_HOOK_CLIENT=c: {target}: {why}")
        return "bash", f"{target}: {why}; using the bash client (about 2x slower per hook)"
    sock = os.fsencode(home.socket_path)
    try:
        same = home.socket_path_file.read_bytes() == sock
    except OSError:
        same = False
    if not same:
        atomic_write(home.socket_path_file, sock, mode=0o600)
    return "c", None


def hook_command(home: Home, harness: str, builder: str, deadline_ms: int, mode: str = "hook", client: str = "bash") -> str:
    """The exact shell command the harness runs (``sh -c``): absolute, quoted paths; the
    builder id and hookd's tag baked in; no placeholder substitution. ``exec``: the harness's
    signals (SIGTERM on timeout or Esc) reach the client itself, not just the ``sh`` that
    started it (dash does not exec the last command of ``sh -c``). ``client``: ``c`` execs
    the compiled client; ``bash`` runs the bash client with ``bash -p`` (the agent's
    environment cannot inject code or cost: ``BASH_ENV``, exported functions, ``SHELLOPTS``
    are ignored)."""
    if client == "c":
        path = shlex.quote(os.fspath(home.c_client))
        parts = [path, harness, builder, str(deadline_ms)]
        check = f"[ -x {path} ]"
    else:
        path = shlex.quote(os.fspath(home.client_script))
        parts = [shlex.quote(bash_path()), "-p", path, harness, builder, str(deadline_ms)]
        check = f"[ -r {path} ]"
    if mode != "hook":
        parts.append(mode)
    # a missing client (the home was moved or deleted) must not turn every hook into an
    # error the agent's user sees: `[` is a builtin of sh, so the check costs nothing
    return f"{check} || exit 0; exec " + " ".join(parts) + " " + tag(builder)


#: The exec form's bash client (no ``sh -c``): bash itself runs this guard, then sources the
#: home's script (``$0``) with the hook's arguments; a missing script (the home was moved or
#: deleted) is an exit 0, as the shell form's ``[ -r script ] || exit 0``.
BASH_GUARD = '[ -r "$0" ] || exit 0; . "$0" "$@"'


def hook_argv(home: Home, harness: str, builder: str, deadline_ms: int, mode: str = "hook", client: str = "bash") -> list[str]:
    """The exec form of :func:`hook_command` (Claude Code 2.1.332's ``command`` + ``args``: the
    first word is spawned directly, no shell), hookd's tag its last argument. ``client`` ``c``:
    the compiled client's build in the user cache (:func:`build_c_client`; not the home's
    copy, so that a moved or deleted home is the client's own no-op, ``--home``), ``bash``:
    ``bash -p -c`` :data:`BASH_GUARD` with the home's script. The mode is always given (the
    tag follows it). Raises ConfigError when the compiled client cannot be built."""
    ms = str(deadline_ms)
    if client == "c":
        return [os.fspath(build_c_client()), "--home", os.fspath(home.root), harness, builder, ms, mode, tag(builder)]
    return [bash_path(), "-p", "-c", BASH_GUARD, os.fspath(home.client_script), harness, builder, ms, mode, tag(builder)]


def client_argv(command: str) -> list[str]:
    """The argv a generated command execs (``HOOKD_HOME/bin/hook-client-c HARNESS BUILDER
    MS`` or ``bash -p HOOKD_HOME/bin/hook-client HARNESS BUILDER MS``)."""
    words = shlex.split(command, comments=True)
    return words[words.index("exec") + 1:]


def client_text(home: Home) -> str:
    """The home's bash hook client script as this hookd writes it (the home's path baked in)."""
    return client_template().replace("@HOOKD_HOME@", shlex.quote(os.fspath(home.root)))


def write_client(home: Home) -> Path:
    """(Re)write the home's bash hook client script (0700) with the home's path baked in."""
    text = client_text(home)
    path = home.client_script
    try:
        if path.read_text() == text:
            return path
    except FileNotFoundError:
        pass
    atomic_write(path, text.encode(), mode=0o700)
    return path
