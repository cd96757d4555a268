"""An MCP server, written with the official MCP Python SDK, for cadre's MCP client tests.

usage: mcp_server_tools.py [--fail-start | --hang-start | --http PORT]

Tools:
  lookup(key)           read-only (readOnlyHint): "value of <key>"
  env_has(name)         read-only: whether the server's environment has <name>
  delete_everything(p)  destructive (no readOnlyHint): writes the file MCP_TEST_MARKER, so a test
                        can tell whether it ran
  crash()               the process exits in the middle of the call
  flood()               writes 4 MiB to stderr, then answers "flooded"
  slow(seconds)         sleeps (writing MCP_TEST_MARKER.started first); a cancelled call writes
                        "cancelled" to MCP_TEST_MARKER
  spawn_sleeper()       starts a long `sleep` in the background and answers its pid

--fail-start exits at once with an error, before speaking MCP; --hang-start never answers. --http PORT serves streamable
HTTP on 127.0.0.1:PORT/mcp instead of stdio.
"""

import os
import subprocess
import sys
import time

import anyio

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)

server = MCPServer("cadre-test-tools")


@server.tool(annotations=READ_ONLY, description="Look a key up.")
def lookup(key: str) -> str:
    return f"value of {key}"


@server.tool(annotations=READ_ONLY, description="Whether an environment variable is set.")
def env_has(name: str) -> str:
    return "set" if name in os.environ else "unset"


@server.tool(annotations=DESTRUCTIVE, description="Delete everything under a path.")
def delete_everything(path: str) -> str:
    marker = os.environ.get("MCP_TEST_MARKER")
    if marker:
        with open(marker, "w") as f:
            f.write(f"deleted {path}\n")
    return f"deleted {path}"


@server.tool(description="Exit in the middle of the call.")
def crash() -> str:
    sys.stderr.write("crashing now\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(description="Write a lot to stderr.")
def flood() -> str:
    line = "FLOOD " * 20 + "\n"
    for _ in range((4 * 1024 * 1024) // len(line)):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "flooded"


@server.tool(annotations=READ_ONLY, description="Sleep for a while.")
async def slow(seconds: float) -> str:
    marker = os.environ.get("MCP_TEST_MARKER")
    if marker:
        with open(marker + ".started", "w") as f:
            f.write("started\n")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker:
            with open(marker, "w") as f:
                f.write("cancelled\n")
        raise
    return "slept"


@server.tool(description="Start a long sleep in the background.")
def spawn_sleeper() -> str:
    child = subprocess.Popen(
        ["sleep", "1000"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--fail-start"]:
        sys.stderr.write("this server refuses to start\n")
        sys.exit(7)
    if args[:1] == ["--hang-start"]:
        while True:
            time.sleep(1000)
    if args[:1] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
        return
    server.run()


if __name__ == "__main__":
    main()
