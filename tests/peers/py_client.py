"""An MCP client on the Python SDK (`mcp` 2.x), for the tests of `gemctl
mcp serve` (`tests/tests/mcp_serve.rs`): starts a stdio server, lists its
tools, calls one, prints what came back.

    .venv/bin/python py_client.py [--legacy] [--elicit CONTENT_JSON] TOOL ARGS_JSON -- SERVER_COMMAND [ARG...]

With --elicit it answers every elicitation (form or URL) with accept and
CONTENT_JSON (no content for a URL), printing `elicitation: PARAMS_JSON`;
without, the SDK advertises no elicitation. --legacy opens with the
`initialize` handshake instead of probing `server/discover`.

The SDK's client opens with `server/discover` (the 2026-07-28 lifecycle)
and falls back to `initialize` when the server answers it with an error, so
a run also checks that the server answers requests it does not know.
Exit status: 0 when the call succeeded, 1 when it returned an error, 2 for
bad usage.
"""

import asyncio
import json
import sys

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


def parse(argv):
    split = argv.index("--") if "--" in argv else len(argv)
    call, command = argv[:split], argv[split + 1 :]
    options = {"elicit": None, "mode": "auto"}
    while call and call[0] in ("--elicit", "--legacy"):
        if call[0] == "--legacy":
            options["mode"], call = "legacy", call[1:]
        elif len(call) > 1:
            options["elicit"], call = json.loads(call[1]), call[2:]
        else:
            break
    if len(call) != 2 or not command:
        print(
            "usage: py_client.py [--legacy] [--elicit CONTENT_JSON] TOOL ARGS_JSON -- SERVER_COMMAND [ARG...]",
            file=sys.stderr,
        )
        sys.exit(2)
    return call[0], json.loads(call[1]), command, options


def answering(content):
    async def answer(context, params):
        print("elicitation:", params.model_dump_json(by_alias=True, exclude_none=True), flush=True)
        if getattr(params, "mode", "form") == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=content)

    return answer


async def run(tool, arguments, command, options):
    server = StdioServerParameters(command=command[0], args=command[1:])
    callbacks = {} if options["elicit"] is None else {"elicitation_callback": answering(options["elicit"])}
    async with Client(server, mode=options["mode"], **callbacks) as client:
        print("protocol:", client.protocol_version)
        listed = await client.list_tools()
        print("tools:", ", ".join(t.name for t in listed.tools))
        result = await client.call_tool(tool, arguments)
        print("result:", result.model_dump_json(exclude_none=True))
        return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(run(*parse(sys.argv[1:]))))
