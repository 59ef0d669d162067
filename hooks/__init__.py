"""Hook client templates: ``client.c``, the compiled client `hookd spawn` builds when a C
compiler is present, and ``client.sh``, the bash client used otherwise (same contract)."""

from importlib.resources import files


def client_template() -> str:
    """Return the text of the bash hook client template (``hooks/client.sh``)."""
    return files(__name__).joinpath("client.sh").read_text(encoding="utf-8")


def c_client_source() -> str:
    """Return the C source of the compiled hook client (``hooks/client.c``); the build
    defines ``HOOKD_HOME`` and ``HOOKD_SOCK``."""
    return files(__name__).joinpath("client.c").read_text(encoding="utf-8")
