"""Drive a full-screen program on a pseudo-terminal, as a person at a terminal would.

Usage: pty_screen.py SCRIPT_JSON RAW_FILE COMMAND [ARG...]

The command runs with stdin, stdout and stderr all on one pseudo-terminal (COLUMNS x LINES from
the script, default 100x30; TERM as the environment gives it). Everything it writes goes through
a VT emulator (pyte), so the steps see the screen a terminal would show, not the byte stream; the
raw bytes are also written to RAW_FILE (for checks on escape sequences).

SCRIPT_JSON is a JSON object: {"cols": 100, "rows": 30, "steps": [...]}; each step one of
  {"send": "text"}                    type the text (no Enter)
  {"key": "enter"}                    one key: enter, alt-enter, esc, ctrl-c, ctrl-d, tab,
                                      backspace, up, down
  {"wait_for": "regex", "timeout": 20}  wait until the screen matches (re.search over its lines
                                      joined with newlines)
  {"wait_gone": "regex", "timeout": 20} wait until the screen no longer matches
  {"snapshot": "name"}                record the screen
  {"resize": [cols, rows]}            change the terminal's size and send SIGWINCH
  {"signal": "HUP"}                   send the command a signal (HUP, TERM, …)
  {"sleep": 0.2}                      pause (only to let a key be read apart from the next)
  {"wait_exit": 20}                   wait for the command to exit
A wait that times out stops the script (the rest is skipped) and the command is killed.

Prints one JSON object on stdout: {"steps": [{"step": ..., "ok": bool, "screen": [lines],
"raw_start"/"raw_end": bytes of raw output before and after the step}...],
"screen": final screen lines, "title": the window title the program set, "exit_code": int or
null (killed: null), "killed": bool}.
The whole run is bounded by DEADLINE_SECONDS.
"""

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pyte

DEADLINE_SECONDS = 90

KEYS = {
    "enter": b"\r",
    "alt-enter": b"\x1b\r",
    "esc": b"\x1b",
    "ctrl-c": b"\x03",
    "ctrl-d": b"\x04",
    "tab": b"\t",
    "backspace": b"\x7f",
    "up": b"\x1b[A",
    "down": b"\x1b[B",
}


class Session:
    def __init__(self, command, cols, rows, raw_path):
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = open(raw_path, "wb")
        self.raw_bytes = 0
        self.master, slave = pty.openpty()
        self.set_size(slave, cols, rows)
        self.child = subprocess.Popen(
            command,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            close_fds=True,
            start_new_session=True,
            # The terminal becomes the child's controlling terminal, as a shell would make it.
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.closed = False
        self.deadline = time.monotonic() + DEADLINE_SECONDS

    @staticmethod
    def set_size(fd, cols, rows):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def pump(self, seconds):
        """Feed output to the emulator for up to `seconds` (returns early when none comes)."""
        end = min(time.monotonic() + seconds, self.deadline)
        while not self.closed:
            left = end - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.master], [], [], min(left, 0.05))
            if not ready:
                if self.child.poll() is not None:
                    # Gone and nothing buffered.
                    self.drain()
                    return
                continue
            self.read_once()

    def read_once(self):
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            # EIO: every holder of the other side has closed it.
            self.closed = True
            return
        if not chunk:
            self.closed = True
            return
        self.raw.write(chunk)
        self.raw_bytes += len(chunk)
        self.stream.feed(chunk)

    def drain(self):
        while not self.closed:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                return
            self.read_once()

    def lines(self):
        # Read the cells directly rather than through `screen.display`: pyte 0.8.2's display
        # raises IndexError on a cell left empty by a wide character that was partly drawn
        # over. A wide character's second cell holds "", so joining the cells is the row.
        rows = []
        for y in range(self.screen.lines):
            row = self.screen.buffer[y]
            rows.append("".join(row[x].data for x in range(self.screen.columns)).rstrip())
        return rows

    def text(self):
        return "\n".join(self.lines())

    def write(self, data):
        os.write(self.master, data)

    def wait_for(self, pattern, timeout, present=True):
        end = min(time.monotonic() + timeout, self.deadline)
        regex = re.compile(pattern)
        while True:
            if bool(regex.search(self.text())) == present:
                return True
            if time.monotonic() >= end or self.closed:
                self.drain()
                return bool(regex.search(self.text())) == present
            self.pump(0.05)

    def wait_exit(self, timeout):
        end = min(time.monotonic() + timeout, self.deadline)
        while self.child.poll() is None and time.monotonic() < end:
            self.pump(0.05)
        self.drain()
        return self.child.poll() is not None

    def resize(self, cols, rows):
        self.set_size(self.master, cols, rows)
        self.screen.resize(rows, cols)
        try:
            os.killpg(self.child.pid, signal.SIGWINCH)
        except ProcessLookupError:
            pass

    def finish(self):
        killed = False
        if self.child.poll() is None:
            self.wait_exit(max(0.0, min(2.0, self.deadline - time.monotonic())))
        if self.child.poll() is None:
            killed = True
            try:
                os.killpg(self.child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.child.wait()
        self.drain()
        self.raw.close()
        code = None if killed else self.child.returncode
        return code, killed


def run_step(session, step):
    if "send" in step:
        session.write(step["send"].encode())
        session.pump(0.05)
        return True
    if "key" in step:
        session.write(KEYS[step["key"]])
        session.pump(0.05)
        return True
    if "wait_for" in step:
        return session.wait_for(step["wait_for"], step.get("timeout", 20))
    if "wait_gone" in step:
        return session.wait_for(step["wait_gone"], step.get("timeout", 20), present=False)
    if "snapshot" in step:
        session.pump(0.1)
        return True
    if "resize" in step:
        cols, rows = step["resize"]
        session.resize(cols, rows)
        session.pump(0.1)
        return True
    if "signal" in step:
        # To the command alone, as a terminal's hang-up or `kill` would send it.
        os.kill(session.child.pid, getattr(signal, "SIG" + step["signal"]))
        session.pump(0.05)
        return True
    if "sleep" in step:
        session.pump(float(step["sleep"]))
        return True
    if "wait_exit" in step:
        return session.wait_exit(float(step["wait_exit"]))
    raise ValueError(f"unknown step {step!r}")


def main():
    script = json.loads(sys.argv[1])
    raw_path = sys.argv[2]
    command = sys.argv[3:]
    session = Session(command, script.get("cols", 100), script.get("rows", 30), raw_path)
    results = []
    for step in script["steps"]:
        start = session.raw_bytes
        ok = run_step(session, step)
        results.append(
            {
                "step": step,
                "ok": ok,
                "screen": session.lines(),
                "raw_start": start,
                "raw_end": session.raw_bytes,
            }
        )
        if not ok:
            break
    code, killed = session.finish()
    json.dump(
        {
            "steps": results,
            "screen": session.lines(),
            "title": session.screen.title,
            "exit_code": code,
            "killed": killed,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
