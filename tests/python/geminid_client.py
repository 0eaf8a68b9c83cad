#!/usr/bin/env python3
"""A geminid client written with the Python standard library only.

Usage: geminid_client.py SOCKET WORKSPACE

Connects to the daemon's Unix socket, speaks JSON-RPC 2.0 as NDJSON (one
compact JSON object per line), initializes, creates a session rooted at
WORKSPACE, calls list_directory with wait, subscribes to the session and
prints one JSON object with what it got.
"""

import json
import socket
import sys


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")
        self.next_id = 1
        self.notifications = []

    def send(self, message):
        line = json.dumps(message, separators=(",", ":")) + "\n"
        self.sock.sendall(line.encode("utf-8"))

    def read(self):
        line = self.file.readline()
        if not line:
            raise EOFError("geminid closed the connection")
        return json.loads(line)

    def request(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return message["result"]
            # Anything without our id is a notification; keep it.
            self.notifications.append(message)

    def next_event(self):
        if self.notifications:
            return self.notifications.pop(0)
        return self.read()


def main():
    socket_path, workspace = sys.argv[1], sys.argv[2]
    client = Client(socket_path)
    hello = client.request(
        "daemon.initialize",
        {"client": {"name": "python-stdlib", "version": "0", "protocolVersion": 1}},
    )
    session = client.request("session.create", {"cwd": workspace, "title": "from python"})
    session_id = session["sessionId"]
    listed = client.request(
        "tool.call",
        {
            "sessionId": session_id,
            "name": "list_directory",
            "args": {"path": workspace},
            "wait": True,
        },
    )
    subscription = client.request("session.subscribe", {"sessionId": session_id})
    events = []
    # Replay everything up to the final snapshot of our call.
    while True:
        message = client.next_event()
        if message.get("method") != "session.event":
            continue
        if message["params"]["subscription"] != subscription:
            continue
        event = message["params"]["result"]
        events.append(event)
        if (
            event.get("type") == "toolCall"
            and event.get("callId") == listed["callId"]
            and event.get("state") in ("success", "error", "cancelled", "interrupted")
        ):
            break
    print(
        json.dumps(
            {
                "protocolVersion": hello["protocolVersion"],
                "pid": hello["pid"],
                "sessionId": session_id,
                "outcome": listed["outcome"],
                "events": events,
            }
        )
    )


if __name__ == "__main__":
    main()
