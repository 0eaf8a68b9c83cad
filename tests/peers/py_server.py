"""A stdio MCP server on the Python SDK (`mcp` 2.x), for the daemon's MCP
client tests (`tests/tests/mcp.rs`): one tool, `add`.

    .venv/bin/python py_server.py      # MCP on stdin/stdout, logs on stderr
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("geminid-test-python-server", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
