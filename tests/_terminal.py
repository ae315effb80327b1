"""Reading what a child process wrote to a pseudo-terminal (the CLI tests that need a tty)."""

import os


def read_until_closed(master):
    """Everything written to the terminal whose master side is ``master``, until its other side
    is closed by every process that had it open."""
    out = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # Linux: EIO once the terminal's other side is closed
            break
        if not data:
            break
        out += data
    return out
