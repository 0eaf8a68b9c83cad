"""An MCP client on the Python SDK (`mcp` 2.x), for the tests of `gemctl
mcp serve` (`tests/tests/mcp_serve.rs`): starts a stdio server, lists its
tools, calls one, prints what came back.

    .venv/bin/python py_client.py TOOL ARGS_JSON -- SERVER_COMMAND [ARG...]

The SDK's client opens with `server/discover` (the 2026-07-28 lifecycle)
and falls back to `initialize` when the server answers it with an error, so
a run also checks that the server answers requests it does not know.
Exit status: 0 when the call succeeded, 1 when it returned an error, 2 for
bad usage.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


def parse(argv):
    split = argv.index("--") if "--" in argv else len(argv)
    call, command = argv[:split], argv[split + 1 :]
    if len(call) != 2 or not command:
        print("usage: py_client.py TOOL ARGS_JSON -- SERVER_COMMAND [ARG...]", file=sys.stderr)
        sys.exit(2)
    return call[0], json.loads(call[1]), command


async def run(tool, arguments, command):
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server) as client:
        print("protocol:", client.protocol_version)
        listed = await client.list_tools()
        print("tools:", ", ".join(t.name for t in listed.tools))
        result = await client.call_tool(tool, arguments)
        print("result:", result.model_dump_json(exclude_none=True))
        return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(run(*parse(sys.argv[1:]))))
