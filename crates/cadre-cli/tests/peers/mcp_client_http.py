"""Drives `cadre mcp --http` with the official MCP Python SDK's streamable HTTP client.

usage: MCP_TOKEN=<bearer token> mcp_client_http.py URL

MCP_CLIENT_MODE=legacy makes the client use the initialize handshake (an MCP session with its
Mcp-Session-Id) instead of the SDK's default negotiation (stateless 2026-07-28 requests).

Lists the tools, makes a foreground Agent call with progress, then sends raw requests and
reports their HTTP status: without the token and with a wrong one, two a hostile web page
could cause (a foreign Host header, as after DNS rebinding, and a foreign Origin), and
initialisations until the server refuses more sessions. Prints one JSON report; the Rust test
checks it.
"""

import json
import os
import sys

import anyio
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TIMEOUT = 60


async def wait_for_server(url):
    async with httpx.AsyncClient() as http:
        with anyio.fail_after(TIMEOUT):
            while True:
                try:
                    await http.get(url)
                    return
                except httpx.TransportError:
                    await anyio.sleep(0.05)


async def main():
    url = sys.argv[1]
    token = os.environ["MCP_TOKEN"]
    auth = {"Authorization": f"Bearer {token}"}
    report = {}
    await wait_for_server(url)
    with anyio.fail_after(TIMEOUT * 2):
        mode = os.environ.get("MCP_CLIENT_MODE", "auto")
        http_client = httpx.AsyncClient(
            headers=auth, timeout=httpx.Timeout(TIMEOUT, read=TIMEOUT * 5)
        )
        transport = streamable_http_client(url, http_client=http_client)
        async with Client(transport, read_timeout_seconds=TIMEOUT, mode=mode) as client:
            report["protocol"] = client.protocol_version
            listed = await client.list_tools()
            report["tools"] = [t.name for t in listed.tools]
            progress = []

            async def on_progress(value, total, message):
                progress.append(message)

            result = await client.call_tool(
                "Agent",
                {
                    "subagent_type": "Explore",
                    "description": "Read the notes",
                    "prompt": "[child] Read notes.txt and report its first line.",
                },
                read_timeout_seconds=TIMEOUT,
                progress_callback=on_progress,
            )
            report["result"] = {
                "text": "\n".join(getattr(b, "text", "") for b in result.content),
                "isError": bool(result.is_error),
            }
            report["progress"] = progress
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "evil", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient() as http:
        r = await http.post(url, json=body, headers=headers)
        report["no_token_status"] = r.status_code
        r = await http.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token[:-1]}x"})
        report["wrong_token_status"] = r.status_code
        headers = {**headers, **auth}
        r = await http.post(url, json=body, headers={**headers, "Host": "attacker.example"})
        report["foreign_host_status"] = r.status_code
        r = await http.post(url, json=body, headers={**headers, "Origin": "http://attacker.example"})
        report["foreign_origin_status"] = r.status_code
        # Sessions are opened until the server refuses one (or far past its limit).
        opened = []
        for _ in range(40):
            r = await http.post(url, json=body, headers=headers)
            opened.append(r.status_code)
            if r.status_code != 200:
                report["refused_session"] = r.json()
                break
        report["session_statuses"] = opened
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main)
