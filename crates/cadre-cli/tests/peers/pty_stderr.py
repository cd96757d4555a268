"""Run a command with its stderr on a pseudo-terminal, as a person's terminal would be.

Usage: pty_stderr.py STDOUT_FILE STDERR_FILE COMMAND [ARG...]

stdout goes to STDOUT_FILE (a plain file: not a terminal), every byte the command writes to
its stderr (the terminal, 80x24) to STDERR_FILE. Exits with the command's exit code; a command
still running after 60 seconds is killed and the exit code is 124.
"""

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

DEADLINE_SECONDS = 60


def main() -> int:
    out_path, err_path, *command = sys.argv[1:]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    with open(out_path, "wb") as out:
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=slave, close_fds=True
        )
    os.close(slave)
    data = bytearray()
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if not ready:
            # Nothing buffered and the command is gone: done, even if a process it left holds
            # the terminal open.
            if child.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:
            # EIO: every holder of the terminal's other side has closed it.
            break
        if not chunk:
            break
        data += chunk
    try:
        code = child.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        code = 124
    with open(err_path, "wb") as err:
        err.write(data)
    return code


if __name__ == "__main__":
    sys.exit(main())
