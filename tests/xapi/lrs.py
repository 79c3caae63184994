"""A real xAPI Learning Record Store for quizd's tests: Ralph (ralph-malph, from PyPI), with its
file-system backend, as `ralph runserver --backend fs` runs it but without the reloader (one
process, so that the test can stop it, and start it again on the same port, to play an LRS
that is down).

    python lrs.py --dir DIR [--port PORT]

Makes the credentials file with `ralph auth` (user `quizd`, password `quizd-secret`, every
scope), listens on 127.0.0.1:PORT (a free port when 0), prints `READY <port>` and serves until
its standard input closes.
"""

import argparse
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

USERNAME = "quizd"
PASSWORD = "quizd-secret"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    root = Path(args.dir)
    app_dir = root / "app"
    os.environ["RALPH_APP_DIR"] = str(app_dir)
    os.environ["RALPH_RUNSERVER_BACKEND"] = "fs"
    os.environ["RALPH_BACKENDS__LRS__FS__DEFAULT_DIRECTORY_PATH"] = str(root / "data")
    if not (app_dir / "auth.json").exists():
        ralph = Path(sys.executable).parent / "ralph"
        subprocess.run(
            [ralph, "auth", "-u", USERNAME, "-p", PASSWORD, "-s", "all", "-w",
             "-A", USERNAME, "https://quiz.example.org"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(64)
    port = sock.getsockname()[1]

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    import uvicorn
    from ralph.backends.data.base import BaseOperationType
    from ralph.backends.lrs.fs import FSLRSBackend

    # Ralph's file-system backend writes every batch with its default operation, `index`,
    # which refuses a file that exists: every POST after the first would fail with a 500.
    # Appending is what an LRS on files must do.
    FSLRSBackend.default_operation_type = BaseOperationType.APPEND

    print(f"READY {port}", flush=True)
    uvicorn.run("ralph.api:app", fd=sock.fileno(), log_level="warning")


if __name__ == "__main__":
    main()
