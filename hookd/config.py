"""Where hookd keeps things: the home directory layout and its environment variables.

``HOOKD_HOME`` (or ``--home``) holds everything a daemon owns::

    HOOKD_HOME/
      hookd.db            SQLite database (WAL)
      token               bearer token for the loopback TCP listener (0600)
      bin/hook-client     the bash hook client, shared by the home's builders
      bin/hook-client-c   the compiled hook client (when a C compiler built it; see spawn.py)
      bin/socket-path     the daemon's socket path, for the compiled client and the CLI when
                          the home's own run/hookd.sock would be too long to bind (written by
                          `serve` where it bound it, and by `spawn` when none is recorded)
      builders/<id>.json  spawn manifests: what `hookd spawn` added, so `unspawn` can undo it
      unspawned/<id>.json what `hookd unspawn` removed and when (lanes and `hookd send` tell an
                          unspawned builder from one never spawned; `spawn` removes it)
      mcp/<id>.json       standalone MCP config (`claude --mcp-config`) of a --settings-file spawn
      spool/<id>/         payloads hook clients could not deliver (ingested by `serve`; when
                          it cannot be written, clients spool outside the home:
                          Home.outside_spool_roots)
      run/                0700: serve.lock, endpoint (port, hook token, pid for hook clients),
                          hookd.sock when its path is short enough

Environment: ``HOOKD_HOME`` (home directory), ``HOOKD_DEADLINE_MS`` (default hook client
deadline at spawn, milliseconds), ``HOOKD_HOOK_CLIENT`` (which client spawn writes: ``auto``,
``c`` or ``bash``; see hookd.spawn), ``CC`` (the C compiler spawn builds the client with),
``XDG_RUNTIME_DIR`` and ``TMPDIR`` (where a long home's socket goes: Home.socket_candidates),
each read when used.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from hookd.errors import ConfigError

#: Longest Unix socket path we bind (``sun_path`` is 108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 100
#: Builder ids: safe in file names, URLs and shell words without quoting surprises.
BUILDER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DEFAULT_DEADLINE_MS = 5000


def check_builder_id(builder: str) -> str:
    """Return ``builder`` if it is a valid builder id, else raise :class:`ConfigError`.

    Valid: 1-64 characters from ``A-Z a-z 0-9 . _ -``, starting with a letter or digit.
    """
    if not BUILDER_ID_RE.match(builder):
        raise ConfigError(
            f"invalid builder id {builder!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return builder


def default_home() -> Path:
    """``HOOKD_HOME`` if set, else the per-user data directory (platformdirs'
    ``user_data_dir("hookd")``: ``$XDG_DATA_HOME/hookd`` or ``~/.local/share/hookd`` on Linux).

    On Linux the two usual cases (``XDG_DATA_HOME`` an absolute path; unset or blank with an
    absolute ``HOME``) are computed here, as every platformdirs 4.x computes them, without
    importing it (with the ``tempfile`` and ``shutil`` it loads: a CLI call's largest import
    after click); any other case asks platformdirs."""
    env = os.environ.get("HOOKD_HOME")
    if env:
        return Path(env)
    if sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_DATA_HOME", "")
        if xdg.startswith("/"):
            return Path(xdg, "hookd")
        if not xdg.strip() and os.environ.get("HOME", "").startswith("/"):
            return Path(os.path.expanduser("~/.local/share"), "hookd")
    import platformdirs  # here: only for what the lines above leave open (not on Linux, an unusual XDG_DATA_HOME or HOME)

    return Path(platformdirs.user_data_dir("hookd", appauthor=False))


@dataclass(frozen=True)
class Home:
    """The paths of one hookd home. Pure: constructing it touches nothing on disk."""

    root: Path

    @classmethod
    def resolve(cls, home: str | os.PathLike[str] | None = None) -> "Home":
        """Absolute home from ``home`` or :func:`default_home`. A home that is a symlink (kept
        on another disk, say) is its target from here on: the target is what gets checked
        (ours, 0700) and named in generated commands, so swapping the link later changes
        nothing for this process or its hooks."""
        p = Path(home if home is not None else default_home()).expanduser().absolute()
        if p.is_symlink():
            p = Path(os.path.realpath(p))
        return cls(p)

    @property
    def db(self) -> Path:
        return self.root / "hookd.db"

    @property
    def token_file(self) -> Path:
        return self.root / "token"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def lock_file(self) -> Path:
        return self.run_dir / "serve.lock"

    @property
    def endpoint_file(self) -> Path:
        """One line, ``<port> <hook_token> <pid> <start> <proof>`` (see :class:`Endpoint`),
        for the bash hook client and claw-http loops; written by ``serve`` (0600), removed at
        stop, left behind by a crash."""
        return self.run_dir / "endpoint"

    def read_endpoint(self) -> "Endpoint":
        """The running (or crashed) daemon's TCP endpoint. Raises FileNotFoundError when no
        daemon wrote one; ValueError when the file is not one (an older hookd's ``<port>
        <token>`` line included)."""
        return Endpoint.parse(self.endpoint_file.read_text())

    @property
    def client_script(self) -> Path:
        """The bash hook client."""
        return self.root / "bin" / "hook-client"

    @property
    def c_client(self) -> Path:
        """The compiled hook client (it finds its home from its own path: keep it in bin/)."""
        return self.root / "bin" / "hook-client-c"

    @property
    def socket_path_file(self) -> Path:
        """``bin/socket-path``: socket_path, for the compiled client (which cannot compute
        the short path a long home's daemon binds)."""
        return self.root / "bin" / "socket-path"

    @property
    def builders_dir(self) -> Path:
        return self.root / "builders"

    def manifest(self, builder: str) -> Path:
        return self.builders_dir / f"{check_builder_id(builder)}.json"

    def unspawned_file(self, builder: str) -> Path:
        """``unspawned/<id>.json``: written by ``unspawn`` (``{"builder", "unspawned_at",
        "harness", "worktree", "settings_file"}``), removed by the next ``spawn``."""
        return self.root / "unspawned" / f"{check_builder_id(builder)}.json"

    def mcp_config(self, builder: str) -> Path:
        """The standalone MCP config (``claude --mcp-config PATH``) of a ``--settings-file``
        spawn. Not under builders/, whose ``*.json`` are manifests: a builder may be named
        ``x.mcp``."""
        return self.root / "mcp" / f"{check_builder_id(builder)}.json"

    @property
    def spool_root(self) -> Path:
        return self.root / "spool"

    def spool_dir(self, builder: str) -> Path:
        return self.spool_root / check_builder_id(builder)

    @property
    def socket_path(self) -> Path:
        """The daemon's Unix socket: ``run/hookd.sock``; for a home whose path makes that too
        long to bind (over MAX_SOCKET_PATH bytes), the path recorded in ``bin/socket-path``
        (by the daemon that bound it, or by ``spawn``), else the first of
        :meth:`socket_candidates`."""
        p = self.run_dir / "hookd.sock"
        if len(os.fsencode(p)) <= MAX_SOCKET_PATH:
            return p
        try:
            recorded = os.fsdecode(self.socket_path_file.read_bytes().split(b"\n")[0])
        except OSError:
            recorded = ""
        if recorded.startswith("/") and "\0" not in recorded and len(os.fsencode(recorded)) <= MAX_SOCKET_PATH:
            return Path(recorded)
        return self.socket_candidates()[0]

    def untrusted_socket(self) -> str | None:
        """Why the CLI must not talk to :attr:`socket_path`: its directory exists but is not a
        private directory of this user's (another user may listen there); None otherwise (a
        missing one just means no daemon)."""
        d = self.socket_path.parent
        if not os.path.lexists(d):
            return None
        return private_dir_problem(d)

    def socket_candidates(self) -> list[Path]:
        """Where ``serve`` may bind the socket of a home whose ``run/hookd.sock`` is too long,
        preferred first: ``$XDG_RUNTIME_DIR/hookd/<hash>.sock`` when XDG_RUNTIME_DIR is this
        user's private directory (no other user can create anything in it), then
        ``$TMPDIR/hookd-<uid>/<hash>.sock`` (``/tmp`` when TMPDIR is unset, relative or too
        long). The hash: 16 hex digits of the home path's SHA-256. ``serve`` uses the first whose
        directory is, or can be made, a private directory of this user's, and a fresh
        unpredictable one when another user planted the predictable one
        (hookd.daemon._socket_location)."""
        import hashlib  # here: only a long home's socket needs it (OpenSSL's load is not free)

        name = f"{hashlib.sha256(os.fsencode(self.root)).hexdigest()[:16]}.sock"
        out = []
        runtime = runtime_dir()
        if runtime is not None and len(os.fsencode(runtime / "hookd" / name)) <= MAX_SOCKET_PATH:
            out.append(runtime / "hookd" / name)
        out.append(temp_base() / f"hookd-{os.geteuid()}" / name)
        return out

    def outside_spool_roots(self) -> list[Path]:
        """Where hook clients spool when the home's ``spool/`` cannot be written (its disk is
        full), in the order they try them: ``$XDG_RUNTIME_DIR/hookd``, ``/dev/shm/hookd-<uid>``,
        ``/tmp/hookd-<uid>``, each followed by ``/spool-<key>`` (key: FNV-1a 64 of the home's
        path, 16 hex digits; hooks/client.c ``spool_outside``) and then ``/<builder>/``. Every
        level must be a private directory of this user's (a client writes nothing, and the daemon
        reads nothing, under one another user planted). The daemon also looks under
        ``/run/user/<uid>/hookd``, the usual XDG_RUNTIME_DIR, for hooks whose environment has
        it when the daemon's has not."""
        key = f"spool-{fnv1a64(os.fsencode(self.root)):016x}"
        bases: list[Path] = []
        runtime = runtime_dir()
        if runtime is not None:
            bases.append(runtime / "hookd")
        bases += [Path(f"/run/user/{os.geteuid()}/hookd"), Path(f"/dev/shm/hookd-{os.geteuid()}"),
                  Path(f"/tmp/hookd-{os.geteuid()}")]
        return list(dict.fromkeys(b / key for b in bases))

    def spool_roots(self) -> list[Path]:
        """The spool folders the daemon ingests: ``spool/``, then each of
        :meth:`outside_spool_roots` that exists as a private directory of this user's, in a
        base directory that is one too."""
        return [self.spool_root] + [r for r in self.outside_spool_roots()
                                    if private_dir_problem(r.parent) is None and private_dir_problem(r) is None]

    def spooled(self) -> int:
        """How many hook payloads wait in :meth:`spool_roots` for the daemon to ingest them (a
        directory listing per builder: call off the event loop)."""
        return sum(1 for root in self.spool_roots() for _ in root.glob("*/*.json"))

    def ensure(self) -> None:
        """Create the home's directories with private modes: the home itself, run/ and bin/
        0700 (the database and spool hold prompts and tool output; the hook clients trust
        only a private bin/socket-path). The socket's own directory is ``serve``'s."""
        ensure_private_dir(self.root)
        for d in (self.run_dir, self.root / "bin"):
            ensure_private_dir(d)
        self.spool_root.mkdir(exist_ok=True)
        self.builders_dir.mkdir(exist_ok=True)

    def read_token(self) -> str:
        """The bearer token, created (0600) on first use."""
        return _read_or_make(self.token_file)

    @property
    def hook_token_file(self) -> Path:
        """``hook-token``: the token Claude Code's ``type: "http"`` hooks send (``hookd spawn
        --hook-transport http``); it admits the hook routes only, like the endpoint's."""
        return self.root / "hook-token"

    def read_hook_token(self) -> str:
        """The http hooks' bearer token (:attr:`hook_token_file`), created (0600) on first use:
        it outlives daemon restarts, since Claude Code reads it from its environment once."""
        return _read_or_make(self.hook_token_file)


def _read_or_make(path: Path) -> str:
    """A token file's text, or a new token written there (0600) when there is none."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    import secrets

    token = secrets.token_urlsafe(32)
    write_private(path, token + "\n")
    return token


@dataclass(frozen=True)
class Endpoint:
    """What ``serve`` tells the loopback TCP clients (the bash hook client, claw-http loops).

    port: the loopback TCP port. hook_token: a bearer token made at each start that admits
    only the harness routes (``/v1/hooks/...``, ``/v1/claw/...``), never the API or the page
    (those take ``HOOKD_HOME/token``), so a client that hands it to the wrong process leaks
    nothing that outlives the daemon. pid: the daemon's process id. start: its start time in
    clock ticks since boot (field 22 of ``/proc/<pid>/stat``), ``-`` where there is no
    ``/proc``. proof: a second secret made at each start that the daemon sends back on every
    hook reply over TCP (header ``X-Hookd-Proof``).

    A client checks that ``pid`` (with ``start``) is alive before it connects, and that a
    reply carries ``proof`` before it trusts it: after a crash the endpoint file stays, and
    its port may then belong to any local process.
    """

    port: int
    hook_token: str
    pid: int
    start: str
    proof: str

    def line(self) -> str:
        return f"{self.port} {self.hook_token} {self.pid} {self.start} {self.proof}\n"

    @classmethod
    def parse(cls, text: str) -> "Endpoint":
        """Raises ValueError unless ``text`` is one endpoint line."""
        parts = text.split()
        if len(parts) != 5 or not parts[0].isdigit() or not parts[2].isdigit():
            raise ValueError("not a hookd endpoint line (<port> <hook_token> <pid> <start> <proof>)")
        return cls(int(parts[0]), parts[1], int(parts[2]), parts[3], parts[4])


def process_start(pid: int | str = "self") -> str:
    """``pid``'s start time in clock ticks since boot, as the bash hook client reads it (field
    22 of ``/proc/<pid>/stat``, after the parenthesised command name); ``-`` without ``/proc``."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "-"
    fields = stat_line.rpartition(") ")[2].split()
    return fields[19] if len(fields) > 19 else "-"


def ensure_private_dir(d: Path) -> None:
    """Create ``d`` (and parents) and make it 0700; raise ConfigError if it is not ours.

    A directory owned by someone else, or a symlink, is refused: the socket inside it would
    be reachable by them.
    """
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = d.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise ConfigError(f"{d} is not a directory owned by this user; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(d, 0o700)


def private_dir_problem(d: Path) -> str | None:
    """None when ``d`` is a directory (not a symlink) owned by this user with mode 0700, the
    only kind hookd puts a socket or a spooled payload in or trusts one from; else a sentence
    saying what it is instead (missing, a symlink, whose, which mode)."""
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return f"{d} does not exist"
    except OSError as e:
        return f"{d}: {e.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return f"{d} is a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return f"{d} is not a directory"
    if st.st_uid != os.geteuid():
        try:
            who = f"{pwd.getpwuid(st.st_uid).pw_name} (uid {st.st_uid})"
        except KeyError:
            who = f"uid {st.st_uid}"
        return f"{d} is owned by {who}, not by you"
    if stat.S_IMODE(st.st_mode) != 0o700:
        return f"{d} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def runtime_dir() -> Path | None:
    """``$XDG_RUNTIME_DIR`` when it names a private directory of this user's (what the XDG
    base directory spec promises: the login session's, owned by the user, 0700), else None."""
    env = os.environ.get("XDG_RUNTIME_DIR", "")
    if not env.startswith("/") or private_dir_problem(Path(env)) is not None:
        return None
    return Path(env)


def temp_base() -> Path:
    """``$TMPDIR`` when it is an absolute directory short enough for a socket under it, else ``/tmp``."""
    env = os.environ.get("TMPDIR", "")
    if env.startswith("/") and len(os.fsencode(env)) <= MAX_SOCKET_PATH - 40 and os.path.isdir(env):
        return Path(env)
    return Path("/tmp")


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits: the hook clients' key of a home's spool outside it."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_private(path: Path, text: str) -> None:
    """Atomically write ``text`` to ``path`` with mode 0600 (temp file + rename)."""
    atomic_write(path, text.encode(), mode=0o600)


def atomic_write(path: Path, data: bytes, mode: int = 0o644, *, tmp: Path | None = None) -> None:
    """Write ``data`` to ``path`` atomically: a temp file in the same directory, fsync, rename.

    Readers see the old content or the new one, never a torn file. tmp: the temp file's path
    (default ``.<name>.<pid>.tmp`` beside ``path``); it is never followed if it is a symlink,
    and is removed when the write fails. Raises OSError.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if tmp is None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
