"""A minimal stdio MCP server for the e2e tests: one tool, ``touch_probe(name)``, that creates
the file ``name`` in its working directory and says so. Newline-delimited JSON-RPC as the MCP
stdio transport has it; no SDK, so that the test knows exactly when Claude Code has listed
the tools: the first ``tools/list`` creates the file given as argv[1].

Usage (an ``mcpServers`` entry): ``python mcp_probe.py READY_FILE``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOOL = {
    "name": "touch_probe",
    "description": "Create a probe file.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
}


def reply(msg_id: object, result: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    ready = Path(sys.argv[1])
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # a notification
        if method == "initialize":
            reply(msg_id, {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                           "capabilities": {"tools": {}}, "serverInfo": {"name": "probe", "version": "1"}})
        elif method == "tools/list":
            reply(msg_id, {"tools": [TOOL]})
            ready.touch()
        elif method == "tools/call":
            name = msg["params"]["arguments"]["name"]
            Path(name).write_text("x")
            reply(msg_id, {"content": [{"type": "text", "text": f"PROBE-CREATED-{name}"}]})
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                         "error": {"code": -32601, "message": f"no method {method}"}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
