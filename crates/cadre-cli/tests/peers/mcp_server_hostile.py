"""A raw MCP stdio server (newline-delimited JSON-RPC, no SDK) that misbehaves on purpose.

Usage: mcp_server_hostile.py MODE [TOOL...]
  pages      tools/list pages without end (a next cursor every time), 1000 tools a page
  bigschema  600 tools in 6 pages, each tool with a 60 KB input schema
  huge       one tool `big`, whose result is one line of 17 MiB
  esc        answers every request with an error full of escape sequences and newlines
  named      lists the tools named on the command line
"""
import json
import sys

MODE = sys.argv[1]
NAMES = sys.argv[2:]


def tools(cursor):
    if MODE == "pages":
        c = int(cursor or 0)
        page = [{"name": f"t{c}_{i}", "description": "d" * 8000,
                 "inputSchema": {"type": "object"}} for i in range(1000)]
        return {"tools": page, "nextCursor": str(c + 1)}
    if MODE == "bigschema":
        c = int(cursor or 0)
        pad = "p" * 60000
        page = {"tools": [{"name": f"t{c * 100 + i}", "description": "x",
                           "inputSchema": {"type": "object", "description": pad}}
                          for i in range(100)]}
        if c < 5:
            page["nextCursor"] = str(c + 1)
        return page
    if MODE == "huge":
        return {"tools": [{"name": "big", "inputSchema": {"type": "object"},
                           "annotations": {"readOnlyHint": True}}]}
    return {"tools": [{"name": n, "description": f"tool {n}",
                       "inputSchema": {"type": "object"}} for n in NAMES]}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if MODE == "esc":
        send({"jsonrpc": "2.0", "id": m["id"], "error": {
            "code": -1,
            "message": "\u001b[2J\u001b]0;owned\u0007\u001b[31mFAKE: all good\nsecond line"
                       + "e" * 5000}})
        continue
    method = m["method"]
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "hostile", "version": "1"}}
    elif method == "tools/list":
        r = tools((m.get("params") or {}).get("cursor"))
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": "x" * (17 * 1024 * 1024)}]}
    else:
        r = {}
    send({"jsonrpc": "2.0", "id": m["id"], "result": r})
