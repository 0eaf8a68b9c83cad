# A protected MCP server and its authorization server in one process:
# RFC 9728 resource metadata, RFC 8414 server metadata, RFC 7591
# registration, the code flow with PKCE S256 (verified), refresh tokens,
# and a streamable-HTTP MCP endpoint with two tools that refuses requests
# without a live token; `admin` answers 403 insufficient_scope to a token
# without the `admin` scope, and reading the resource `secret://s` one
# without the `secrets` scope. Every grant is appended to LOG as one JSON
# line.
import base64, hashlib, json, secrets, sys, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1]); LIFETIME = int(sys.argv[2]); LOG = sys.argv[3]
BASE = f"http://127.0.0.1:{PORT}"
clients, codes, tokens, refresh, scopes = {}, {}, {}, {}, {}

def log(**entry):
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")

def issue(client_id, scope):
    access, rt = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    tokens[access] = time.time() + LIFETIME
    scopes[access] = (scope or "").split()
    refresh[rt] = client_id
    return {"access_token": access, "token_type": "Bearer", "expires_in": LIFETIME,
            "refresh_token": rt, "scope": scope}

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass

    def send(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers: self.send_header(k, v)
        if body is not None: self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers(); self.wfile.write(data)

    def form(self):
        n = int(self.headers.get("content-length") or 0)
        return dict(urllib.parse.parse_qsl(self.rfile.read(n).decode()))

    def do_GET(self):
        u = urllib.parse.urlparse(self.path); q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == "/.well-known/oauth-protected-resource/mcp":
            return self.send(200, {"resource": BASE + "/mcp", "authorization_servers": [BASE],
                                   "scopes_supported": ["tools"]})
        if u.path == "/.well-known/oauth-authorization-server":
            return self.send(200, {"issuer": BASE, "authorization_endpoint": BASE + "/authorize",
                "token_endpoint": BASE + "/token", "registration_endpoint": BASE + "/register",
                "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"]})
        if u.path == "/authorize":
            ok = (q.get("client_id") in clients and q.get("code_challenge_method") == "S256"
                  and q.get("redirect_uri") in clients[q["client_id"]] and q.get("resource") == BASE + "/mcp")
            if not ok: return self.send(400, {"error": "invalid_request", "query": q})
            code = secrets.token_urlsafe(8)
            codes[code] = (q["client_id"], q["code_challenge"], q["redirect_uri"], q.get("scope"))
            sep = "&" if "?" in q["redirect_uri"] else "?"
            loc = q["redirect_uri"] + sep + urllib.parse.urlencode({"code": code, "state": q.get("state", "")})
            return self.send(302, None, [("location", loc)])
        if u.path == "/mcp":
            return self.send(405)
        self.send(404)

    def do_DELETE(self):
        self.send(200)

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        if u.path == "/register":
            n = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(n) or b"{}")
            cid = "client-" + secrets.token_hex(4); clients[cid] = body.get("redirect_uris", [])
            log(grant="register", client_id=cid)
            return self.send(201, {"client_id": cid, "redirect_uris": clients[cid],
                                   "token_endpoint_auth_method": "none"})
        if u.path == "/token":
            f = self.form()
            if f.get("grant_type") == "authorization_code":
                entry = codes.pop(f.get("code"), None)
                if not entry: return self.send(400, {"error": "invalid_grant"})
                cid, challenge, redirect, scope = entry
                digest = base64.urlsafe_b64encode(hashlib.sha256(f.get("code_verifier", "").encode()).digest()).rstrip(b"=").decode()
                if digest != challenge or f.get("client_id") != cid or f.get("redirect_uri") != redirect:
                    return self.send(400, {"error": "invalid_grant", "why": "pkce or client"})
                log(grant="authorization_code", client_id=cid, scope=scope)
                return self.send(200, issue(cid, scope))
            if f.get("grant_type") == "refresh_token":
                cid = refresh.get(f.get("refresh_token"))
                if not cid or f.get("client_id") != cid: return self.send(400, {"error": "invalid_grant"})
                log(grant="refresh_token", client_id=cid)
                return self.send(200, issue(cid, None))
            return self.send(400, {"error": "unsupported_grant_type"})
        if u.path == "/mcp":
            auth = self.headers.get("authorization", "")
            token = auth[7:] if auth.startswith("Bearer ") else None
            if token not in tokens or tokens[token] < time.time():
                meta = BASE + "/.well-known/oauth-protected-resource/mcp"
                return self.send(401, {"error": "invalid_token"},
                    [("www-authenticate", f'Bearer resource_metadata="{meta}", scope="tools"')])
            n = int(self.headers.get("content-length") or 0)
            msg = json.loads(self.rfile.read(n))
            if "id" not in msg: return self.send(202)
            m = msg.get("method")
            if m == "initialize":
                result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}, "resources": {}},
                          "serverInfo": {"name": "oauth-peer", "version": "1"}}
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": result},
                                 [("mcp-session-id", "s1")])
            if m == "tools/list":
                tool = {"name": "whoami", "description": "Says which token called", "inputSchema": {"type": "object"}}
                admin = {"name": "admin", "description": "Needs the admin scope", "inputSchema": {"type": "object"}}
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [tool, admin]}})
            if m == "resources/list":
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"resources": [{"uri": "secret://s", "name": "s"}]}})
            if m == "resources/templates/list":
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"resourceTemplates": []}})
            if m == "resources/read" and "secrets" not in scopes.get(token, []):
                meta = BASE + "/.well-known/oauth-protected-resource/mcp"
                return self.send(403, {"error": "insufficient_scope"},
                    [("www-authenticate", f'Bearer error="insufficient_scope", scope="secrets", resource_metadata="{meta}"')])
            if m == "resources/read":
                contents = [{"uri": "secret://s", "text": "the secret"}]
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": contents}})
            if m == "tools/call" and msg["params"]["name"] == "admin" and "admin" not in scopes.get(token, []):
                meta = BASE + "/.well-known/oauth-protected-resource/mcp"
                log(refused="admin", scope=" ".join(scopes.get(token, [])))
                return self.send(403, {"error": "insufficient_scope"},
                    [("www-authenticate", f'Bearer error="insufficient_scope", scope="tools admin", resource_metadata="{meta}"')])
            if m == "tools/call":
                text = "token issued at grant #" + str(list(tokens).index(token) + 1)
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"],
                                       "result": {"content": [{"type": "text", "text": text}]}})
            if m == "ping":
                return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "result": {}})
            return self.send(200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no " + m}})
        self.send(404)

ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
