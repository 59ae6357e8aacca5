"""The first process of a `docker` sandbox's container: it ends the container when its owner goes.

`python -I .../gauntlet/tether.py SOCKET -- COMMAND...` (`sandbox.tether_argv`) connects to
SOCKET, a Unix socket on which the process that prepared the sandbox (`sandbox.prepare`, the
owner) listens and never accepts, then runs COMMAND as its child and exits with its exit status
(128 + the signal's number for a signal, as a shell says it). When the owner closes the
socket, or dies and the kernel closes it (`kill -9` included), the pending connection is reset:
the tether exits at once, Docker's init (`--init`, the container's PID 1) exits with its only
child, and the kernel kills every other process of the container's PID namespace. A `docker
run` client killed with SIGKILL leaves its container running otherwise, since Docker has no way
to tie a container's life to its client's.

Standard library only, run as a script: it runs inside the container before anything else and
imports nothing from wherever the package is installed. It starts COMMAND with `posix_spawn`
rather than through `gauntlet.process`, since COMMAND's stdin, stdout and stderr must be the
container's own, which the `docker run` client streams.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

#: Exit status when the owner is gone (already at the start, or while COMMAND runs).
OWNER_GONE = 125
#: Exit status when COMMAND cannot be started (not found, not executable), as a shell's.
NOT_RUN = 127


def _wait_for_owner_to_go(owner: socket.socket) -> None:
    """Block until the owner's socket is closed (the owner never sends), then end."""
    try:
        while owner.recv(1):
            pass
    except OSError:
        pass  # ECONNRESET: the listener closed with our connection still pending
    os._exit(OWNER_GONE)


def main(argv: list[str]) -> int:
    """Connect to the owner, run the command, exit with its status or when the owner goes."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: python -I tether.py SOCKET -- COMMAND...\n")
        return 2
    path, command = argv[0], argv[2:]
    owner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        owner.connect(path)
    except OSError as err:
        sys.stderr.write(f"gauntlet.tether: the sandbox's owner is gone ({path}: {err})\n")
        return OWNER_GONE
    # The socket is not inherited (close-on-exec), so only this process holds the connection.
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as err:
        sys.stderr.write(f"gauntlet.tether: cannot run '{command[0]}': {err}\n")
        return NOT_RUN
    threading.Thread(target=_wait_for_owner_to_go, args=(owner,), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
