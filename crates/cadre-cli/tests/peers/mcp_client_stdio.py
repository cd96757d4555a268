"""Drives `cadre mcp` over stdio with the official MCP Python SDK, as an MCP host would.

usage: mcp_client_stdio.py SCENARIO CADRE_BINARY [SERVER_ARGS...]

MCP_CLIENT_MODE=legacy makes the client use the initialize handshake (protocol versions up to
2025-11-25, as most hosts do today) instead of the SDK's default negotiation.

The server runs in the current directory with this process's environment. The script prints
one JSON report on stdout; the Rust test that runs it checks the report, so a scenario only
fails here when the protocol itself fails.
"""

import json
import os
import re
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

TIMEOUT = 60


def text_of(result):
    return "\n".join(getattr(block, "text", "") for block in result.content)


def result_json(result):
    return {
        "text": text_of(result),
        "isError": bool(result.is_error),
        "structuredContent": result.structured_content,
    }


def task_id_in(text):
    match = re.search(r"task_id=([0-9a-f-]+)", text) or re.search(r"Task ([0-9a-f-]{8,})", text)
    return match.group(1) if match else None


async def tools(client, report):
    listed = await client.list_tools()
    report["tools"] = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in listed.tools
    ]


async def foreground(client, report):
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message})

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
    report["result"] = result_json(result)
    report["progress"] = progress


async def structured(client, report):
    result = await client.call_tool(
        "Agent",
        {
            "subagent_type": "Explore",
            "description": "Count the notes",
            "prompt": "[child] Count the lines of notes.txt.",
            "output_schema": {
                "type": "object",
                "properties": {"lines": {"type": "integer"}},
                "required": ["lines"],
            },
        },
        read_timeout_seconds=TIMEOUT,
    )
    report["result"] = result_json(result)


async def background(client, report):
    launched = await client.call_tool(
        "Agent",
        {
            "subagent_type": "Explore",
            "description": "Read the notes",
            "prompt": "[child] Read notes.txt and report its first line.",
            "run_in_background": True,
        },
        read_timeout_seconds=TIMEOUT,
    )
    report["launched"] = result_json(launched)
    task_id = task_id_in(text_of(launched))
    report["task_id"] = task_id
    output = await client.call_tool(
        "TaskOutput",
        {"task_id": task_id or "", "block": True, "timeout_ms": 30000},
        read_timeout_seconds=TIMEOUT,
    )
    report["output"] = result_json(output)


async def cancel(client, report):
    started = anyio.Event()
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)
        if message and "started" in message:
            started.set()

    async def call():
        await client.call_tool(
            "Agent",
            {
                "subagent_type": "Explore",
                "description": "Wait for ever",
                "prompt": "[child] [hang] Wait.",
            },
            read_timeout_seconds=TIMEOUT,
            progress_callback=on_progress,
        )
        report["completed"] = True

    report["completed"] = False
    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.fail_after(TIMEOUT):
            await started.wait()
        # Abandoning the call sends notifications/cancelled for it.
        group.cancel_scope.cancel()
    report["progress"] = progress
    # The server still answers after the cancellation; the task shows how it ended.
    listed = await client.list_resources()
    records = [r.uri for r in listed.resources if re.fullmatch(r"cadre://tasks/[^/]+", r.uri)]
    report["records"] = []
    for uri in records:
        # The stop is recorded as the task ends; give it a bounded moment.
        with anyio.fail_after(TIMEOUT):
            while True:
                read = await client.read_resource(uri)
                record = json.loads(read.contents[0].text)
                if record["status"] != "running":
                    break
                await anyio.sleep(0.1)
        report["records"].append(record)
    # A blocking TaskOutput that is given up on stops waiting; the task is then stopped.
    launched = await client.call_tool(
        "Agent",
        {
            "subagent_type": "Explore",
            "description": "Wait in the background",
            "prompt": "[child] [hang] Wait.",
            "run_in_background": True,
        },
        read_timeout_seconds=TIMEOUT,
    )
    waiting_for = task_id_in(text_of(launched))
    with anyio.move_on_after(0.5):
        await client.call_tool(
            "TaskOutput",
            {"task_id": waiting_for or "", "block": True, "timeout_ms": 600000},
            read_timeout_seconds=TIMEOUT,
        )
    stopped = await client.call_tool("TaskStop", {"task_id": waiting_for or ""}, read_timeout_seconds=TIMEOUT)
    report["stopped"] = result_json(stopped)


async def resources(client, report):
    await foreground(client, report)
    listed = await client.list_resources()
    report["resources"] = [{"uri": r.uri, "mimeType": r.mime_type} for r in listed.resources]
    report["contents"] = {}
    for r in listed.resources:
        read = await client.read_resource(r.uri)
        report["contents"][r.uri] = read.contents[0].text
    try:
        await client.read_resource("cadre://tasks/no-such-task")
        report["missing"] = "read"
    except Exception as e:  # the SDK raises the JSON-RPC error
        report["missing"] = str(e)


async def bad_args(client, report):
    calls = {
        "prompt_not_a_string": ("Agent", {"description": "x", "prompt": 5}),
        "unknown_role": ("Agent", {"description": "x", "prompt": "y", "subagent_type": "no-such-role"}),
        "output_without_task": ("TaskOutput", {}),
        "stop_unknown": ("TaskStop", {"task_id": "nope"}),
    }
    report["results"] = {}
    for key, (name, args) in calls.items():
        result = await client.call_tool(name, args, read_timeout_seconds=TIMEOUT)
        report["results"][key] = result_json(result)
    try:
        await client.call_tool("NoSuchTool", {}, read_timeout_seconds=TIMEOUT)
        report["unknown_tool"] = "answered"
    except Exception as e:
        report["unknown_tool"] = str(e)
    # The server still serves after all of that.
    listed = await client.list_tools()
    report["tools_after"] = len(listed.tools)


async def writer(client, report):
    result = await client.call_tool(
        "Agent",
        {"subagent_type": "code", "description": "Edit", "prompt": "[child] Change lib.rs."},
        read_timeout_seconds=TIMEOUT,
    )
    report["result"] = result_json(result)


async def concurrent(client, report):
    """Two foreground calls at once with the same description, each with its own progress."""
    report["calls"] = [None, None]

    async def one(i):
        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        result = await client.call_tool(
            "Agent",
            {
                "subagent_type": "Explore",
                "description": "Same words",
                "prompt": f"[child] Read notes.txt, call {i}.",
            },
            read_timeout_seconds=TIMEOUT,
            progress_callback=on_progress,
        )
        report["calls"][i] = {"result": result_json(result), "progress": progress}

    async with anyio.create_task_group() as group:
        group.start_soon(one, 0)
        group.start_soon(one, 1)


SCENARIOS = {
    "concurrent": concurrent,
    "writer": writer,
    "tools": tools,
    "foreground": foreground,
    "structured": structured,
    "background": background,
    "cancel": cancel,
    "resources": resources,
    "bad-args": bad_args,
}


async def main():
    scenario, binary, server_args = sys.argv[1], sys.argv[2], sys.argv[3:]
    params = StdioServerParameters(
        command=binary, args=["mcp", *server_args], env=dict(os.environ), cwd=os.getcwd()
    )
    report = {"scenario": scenario}
    with anyio.fail_after(TIMEOUT * 2):
        mode = os.environ.get("MCP_CLIENT_MODE", "auto")
        async with Client(params, read_timeout_seconds=TIMEOUT, mode=mode) as client:
            report["protocol"] = client.protocol_version
            await SCENARIOS[scenario](client, report)
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main)
