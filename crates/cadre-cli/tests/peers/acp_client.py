"""An editor for `cadre acp` tests, on the official ACP Python SDK (`acp`).

usage: acp_client.py SCENARIO CWD CADRE [ARGS...]

Spawns `CADRE ARGS` as the agent, plays SCENARIO, and prints one JSON object on stdout: the
responses, every `session/update` received (in order) and every permission request. Scenarios:

  turn        initialize, session/new, one prompt ("ACP-TURN ...")
  cancel      a prompt ("ACP-CANCEL ..."), session/cancel once a bash call is in progress
  load        a prompt in a first agent process, then session/load of its session in a second
  allow       a prompt whose turn asks for permission; the editor allows it
  reject      the same; the editor rejects it
  badcwd      session/new with a relative cwd
"""

import asyncio
import json
import os
import sys

import acp
from acp import spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    RequestPermissionResponse,
)

# Every wait is bounded: a stuck agent fails the test instead of hanging it.
WAIT = 30.0


class Editor(acp.Client):
    def __init__(self, answer_permission):
        self.updates = []
        self.permissions = []
        self.answer_permission = answer_permission
        self.tool_started = asyncio.Event()

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        self.permissions.append(
            {
                "sessionId": session_id,
                "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True),
                "options": [o.model_dump(by_alias=True, exclude_none=True) for o in options],
            }
        )
        if self.answer_permission == "allow":
            allow = next(o for o in options if o.kind == "allow_once")
            return RequestPermissionResponse(
                outcome=AllowedOutcome(option_id=allow.option_id, outcome="selected")
            )
        reject = next(o for o in options if o.kind == "reject_once")
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=reject.option_id, outcome="selected")
        )

    async def session_update(self, session_id, update, **kwargs):
        item = update.model_dump(by_alias=True, exclude_none=True)
        item["_session"] = session_id
        self.updates.append(item)
        if item.get("sessionUpdate") == "tool_call" and item.get("kind") == "execute":
            self.tool_started.set()

    async def write_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(self, *args, **kwargs):
        raise acp.RequestError.method_not_found("fs/read_text_file")


async def start(conn):
    init = await asyncio.wait_for(
        conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="cadre-tests", version="1"),
        ),
        WAIT,
    )
    return init.model_dump(by_alias=True, exclude_none=True)


async def prompt(conn, session_id, text):
    response = await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[text_block(text)]), WAIT
    )
    return response.model_dump(by_alias=True, exclude_none=True)


async def one_agent(command, cwd, scenario, report, load_id=None):
    editor = Editor("allow" if scenario == "allow" else "reject")
    async with spawn_agent_process(
        editor, command[0], *command[1:], env=dict(os.environ), cwd=cwd
    ) as (conn, process):
        report["initialize"] = await start(conn)
        if scenario == "badcwd":
            try:
                await asyncio.wait_for(conn.new_session(cwd="relative/dir", mcp_servers=[]), WAIT)
                report["error"] = None
            except acp.RequestError as e:
                report["error"] = {"code": e.code, "message": str(e), "data": e.data}
            return editor
        if load_id is not None:
            response = await asyncio.wait_for(
                conn.load_session(cwd=cwd, session_id=load_id, mcp_servers=[]), WAIT
            )
            report["load"] = response.model_dump(by_alias=True, exclude_none=True) if response else {}
            report["updates_at_load"] = len(editor.updates)
            return editor
        session = await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), WAIT)
        session_id = session.session_id
        report["sessionId"] = session_id
        if scenario == "cancel":
            task = asyncio.ensure_future(prompt(conn, session_id, "ACP-CANCEL run the slow command"))
            await asyncio.wait_for(editor.tool_started.wait(), WAIT)
            # Cancel once the command really runs (it writes its pid first).
            pid_file = os.path.join(cwd, "sleep.pid")
            for _ in range(int(WAIT * 20)):
                if os.path.exists(pid_file) and open(pid_file).read().strip():
                    break
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=session_id)
            report["prompt"] = await asyncio.wait_for(task, WAIT)
        elif scenario in ("allow", "reject"):
            report["prompt"] = await prompt(conn, session_id, "ACP-ASK delegate it")
        else:
            report["prompt"] = await prompt(conn, session_id, "ACP-TURN read and delegate")
        # stdin closes when the context ends: the agent must exit on its own.
    report["exit"] = await asyncio.wait_for(process.wait(), WAIT)
    return editor


async def main():
    scenario, cwd, *command = sys.argv[1:]
    report = {"scenario": scenario}
    editor = await one_agent(command, cwd, scenario, report)
    report["updates"] = editor.updates
    report["permissions"] = editor.permissions
    if scenario == "load":
        second = {}
        loaded = await one_agent(command, cwd, "load", second, load_id=report["sessionId"])
        report["loaded"] = second
        report["loaded_updates"] = loaded.updates
    print(json.dumps(report))


asyncio.run(main())
