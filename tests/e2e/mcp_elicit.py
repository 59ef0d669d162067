"""A small stdio MCP server for the e2e tests, written with the official ``mcp`` SDK (a test
extra): one tool, ``book_table()``, that asks its client for a form (``ctx.elicit``: a name and
a party size) and answers with what came back. Each result is also appended as one JSON line to
the file given as argv[1], so that a test can read exactly what the server received.

Usage (an ``mcpServers`` entry): ``python mcp_elicit.py RESULTS_FILE``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

MESSAGE = "Who is the table for?"


class Booking(BaseModel):
    """The form the server asks for."""

    name: str = Field(description="Name on the booking")
    party: int = Field(description="How many people", ge=1, le=12)


def ask_booking() -> Elicit[Booking]:
    """The resolver: the form to elicit."""
    return Elicit(MESSAGE, Booking)


server = MCPServer("booker")


@server.tool()
async def book_table(booking: Annotated[ElicitationResult[Booking], Resolve(ask_booking)]) -> str:
    """Book a table: asks the user for a name and a party size."""
    data = booking.data.model_dump() if getattr(booking, "data", None) is not None else None
    with Path(sys.argv[1]).open("a") as f:
        f.write(json.dumps({"action": booking.action, "data": data}) + "\n")
    return f"BOOKING-{booking.action}-{json.dumps(data, sort_keys=True)}"


def main() -> None:
    server.run("stdio")


if __name__ == "__main__":
    main()
