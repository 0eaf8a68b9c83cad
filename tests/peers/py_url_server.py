"""A stdio MCP server on the Python SDK (`mcp` 2.x) that asks with URL-mode
elicitation, for the daemon's question tests (`tests/tests/questions.rs`).

    .venv/bin/python py_url_server.py      # MCP on stdin/stdout

Tools: `login` sends the person to an https page (elicitation id `el-1`)
and, when they accept, says the interaction there is complete
(`notifications/elicitation/complete`); `odd_login` sends a
`javascript:` URL. Each returns `action=<the answer's action>`.
`sign_up` asks a form whose text fields have bounds (`minLength`,
`maxLength`, `format`) and returns `user=<user> mail=<mail>`.
"""

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("geminid-test-url-server", version="1.0.0")


@server.tool()
async def login(ctx: Context) -> str:
    """Signs in at an external page."""
    result = await ctx.elicit_url(
        message="Sign in to Example to continue",
        url="https://auth.example.test/login?state=abc",
        elicitation_id="el-1",
    )
    if result.action == "accept":
        await ctx.session.send_elicit_complete("el-1")
    return f"action={result.action}"


@server.tool()
async def odd_login(ctx: Context) -> str:
    """Asks with a URL that is not a web page."""
    result = await ctx.elicit_url(message="Click", url="javascript:alert(1)", elicitation_id="el-2")
    return f"action={result.action}"


class SignUp(BaseModel):
    user: str = Field(min_length=3, max_length=8, description="A user name")
    mail: str = Field(json_schema_extra={"format": "email"})


@server.tool()
async def sign_up(ctx: Context) -> str:
    """Asks for a user name and an email address."""
    result = await ctx.elicit(message="Pick a user name", schema=SignUp)
    if result.action == "accept":
        return f"user={result.data.user} mail={result.data.mail}"
    return f"action={result.action}"


if __name__ == "__main__":
    server.run()
