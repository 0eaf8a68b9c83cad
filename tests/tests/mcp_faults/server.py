"""A hand-written stdio MCP server that misbehaves on purpose (stdlib only).

Usage: server.py MODE, where MODE says what `tools/call work` does:
  hang     never answers (other requests still are)
  crash    exits with status 3 in the middle of the call
  flood    sends thousands of notifications/message and progress
           notifications for about a second, then answers
  badjson  answers with a line that is not JSON
`tools/call ping` always answers "pong", so the server is shown to work
apart from its fault.
"""

import json
import sys
import time

MODE = sys.argv[1]
out = sys.stdout.buffer


def send(msg):
    out.write(json.dumps(msg).encode() + b"\n")
    out.flush()


def answer(req_id, result):
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def text(s):
    return {"content": [{"type": "text", "text": s}], "isError": False}


TOOLS = [
    {"name": name, "description": name + " (" + MODE + ")",
     "inputSchema": {"type": "object", "properties": {}}}
    for name in ("work", "ping")
]


def work(req_id, params):
    if MODE == "hang":
        return
    if MODE == "crash":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "about to crash"}})
        sys.exit(3)
    if MODE == "badjson":
        out.write(b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "te\n'
                  % json.dumps(req_id).encode())
        out.flush()
        return
    if MODE == "flood":
        token = (params.get("_meta") or {}).get("progressToken")
        sent = 0
        end = time.time() + 1.0
        while time.time() < end:
            for _ in range(100):
                sent += 1
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "log %d" % sent}})
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": sent,
                                     "message": "step %d" % sent}})
        answer(req_id, text("flood done after %d notifications" % sent))
        return
    answer(req_id, text("unknown mode " + MODE))


for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except ValueError:
        continue
    method, req_id = msg.get("method"), msg.get("id")
    params = msg.get("params") or {}
    if req_id is None:
        continue  # notifications: initialized, cancelled
    if method == "initialize":
        answer(req_id, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}, "logging": {}},
                        "serverInfo": {"name": "fault-" + MODE, "version": "1"}})
    elif method == "tools/list":
        answer(req_id, {"tools": TOOLS})
    elif method == "tools/call" and params.get("name") == "ping":
        answer(req_id, text("pong"))
    elif method == "tools/call":
        work(req_id, params)
    elif method == "ping":
        answer(req_id, {})
    else:
        send({"jsonrpc": "2.0", "id": req_id,
              "error": {"code": -32601, "message": "no method " + str(method)}})
