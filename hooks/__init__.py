"""Hook client templates. ``client.sh`` is the generated builders' hook client."""

from importlib.resources import files


def client_template() -> str:
    """Return the text of the bash hook client template (``hooks/client.sh``)."""
    return files(__name__).joinpath("client.sh").read_text(encoding="utf-8")
