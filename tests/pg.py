"""A private PostgreSQL cluster for the hub's tests (hookd.hub): Debian's PostgreSQL server (15),
started by the tests and removed after them.

``initdb`` and the server refuse to run as root, and the tests run as root (CI's container, the
developers' machines): the cluster belongs to the ``postgres`` system user that Debian's
``postgresql`` package creates, and every server command runs as that user through ``runuser``
(util-linux; ``su`` would read PAM's session set-up). As any other user the commands run as
that user. The data directory and the Unix socket live in a fresh directory under the system's
temporary directory (0700, that user's), the server listens on 127.0.0.1 on a free port.

Authentication: ``trust`` on the Unix socket (the tests' administrator, role ``hookd_admin``),
``scram-sha-256`` on TCP (the hosts' roles log in with passwords, as on a real hub).

Where the server is missing the tests skip with the reason, except under ``CI=true``, where they
fail (``.ci/run`` installs ``postgresql``): as the browser tests do.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

#: Where Debian puts its PostgreSQL servers' programs (not on PATH by default): one folder per
#: major version; the newest installed is used (15 on Debian 12).
PG_ROOT = Path("/usr/lib/postgresql")
ADMIN = "hookd_admin"


def _bin(name: str) -> str | None:
    found = sorted(PG_ROOT.glob(f"*/bin/{name}"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return str(found[-1]) if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgCluster:
    """One private cluster: ``dir`` (data in ``dir/data``, the socket in ``dir``), ``port``,
    ``user`` (the system user running it, or None: this process's own)."""

    dir: Path
    port: int
    user: str | None
    ssl_ca: Path | None = None
    """The CA that signed the server's certificate (for ``sslrootcert``), when TLS is on."""

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(argv) if self.user is None else ["runuser", "-u", self.user, "--", *argv]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120)

    def admin_url(self, db: str = "postgres") -> str:
        """The administrator's URL (the Unix socket, trust)."""
        return f"postgresql://{ADMIN}@/{db}?host={self.dir}&port={self.port}"

    def url(self, role: str, password: str, db: str = "postgres") -> str:
        """A role's URL over TCP on 127.0.0.1 (scram-sha-256)."""
        return f"postgresql://{role}:{password}@127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        if self.ssl_ca is not None:
            opts += f" -c ssl=on -c ssl_cert_file={self.dir / 'server.crt'} -c ssl_key_file={self.dir / 'server.key'}"
        self._run(_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"),
                  "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as a crash, no shutdown checkpoint)."""
        self._run(_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop",
                  check=False)

    def running(self) -> bool:
        return self._run(_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0


def _missing(ssl: bool) -> str | None:
    if _bin("initdb") is None or _bin("pg_ctl") is None:
        return "PostgreSQL's server (initdb, pg_ctl) is missing (.ci/run installs it: apt-get install -y postgresql)"
    if ssl and shutil.which("openssl") is None:
        return "openssl is missing: the test cluster's TLS certificate cannot be made (apt-get install -y openssl)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no 'postgres' system user to run the test cluster as (Debian's postgresql package creates it)"
        if shutil.which("runuser") is None:
            return "runuser (util-linux) is missing: the test cluster cannot run as the postgres user"
    return None


def make_ca(d: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA in ``d`` (openssl's command line): (its certificate, its key)."""
    cert, key = d / f"{name}.pem", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", f"/CN={name}"], check=True, capture_output=True, timeout=60)
    return cert, key


def _server_cert(d: Path) -> Path:
    """A CA and the server's certificate for 127.0.0.1 signed by it, in ``d``; returns the CA."""
    ca, ca_key = make_ca(d, "hookd-test-ca")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "server.key"),
                    "-out", str(d / "server.csr"), "-subj", "/CN=127.0.0.1"], check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "x509", "-req", "-in", str(d / "server.csr"), "-CA", str(ca), "-CAkey", str(ca_key),
                    "-CAcreateserial", "-out", str(d / "server.crt"), "-days", "2", "-extfile", str(d / "san.ext")],
                   check=True, capture_output=True, timeout=60)
    os.chmod(d / "server.key", 0o600)
    return ca


@contextlib.contextmanager
def private_cluster(ssl: bool = False) -> Iterator[PgCluster]:
    """Start a private cluster (module doc); with ``ssl``, TLS on (a certificate for 127.0.0.1
    signed by a CA of its own: ``ssl_ca``; plain connections still allowed). Stopped and
    removed on exit. Skips (fails under ``CI=true``) where PostgreSQL is missing."""
    why = _missing(ssl)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    user = "postgres" if os.geteuid() == 0 else None
    d = Path(tempfile.mkdtemp(prefix="hookd-pg-"))
    if user is not None:
        ent = pwd.getpwnam(user)
        os.chown(d, ent.pw_uid, ent.pw_gid)
    os.chmod(d, 0o700)
    cluster = PgCluster(d, _free_port(), user)
    try:
        if ssl:
            cluster.ssl_ca = _server_cert(d)
        if user is not None:
            ent = pwd.getpwnam(user)
            for f in d.iterdir():  # (the server reads its key as its own user)
                os.chown(f, ent.pw_uid, ent.pw_gid)
        cluster._run(_bin("initdb") or "initdb", "-D", str(cluster.data), "-U", ADMIN, "--auth-local=trust",
                     "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions")
        cluster.start()
        yield cluster
    finally:
        cluster.stop("immediate")
        shutil.rmtree(d, ignore_errors=True)
