"""A real SMTP server for quizd's tests (aiosmtpd), on a free loopback port.

It prints `READY <port>` once it listens, then one JSON line per message it receives: the
envelope (`mail_from`, `rcpt_tos`), the `From`, `To` and `Subject` headers, and the plain-text
body decoded from its transfer encoding (`text`). It stops when its standard input closes,
which happens when the test process ends.
"""

import asyncio
import json
import socket
import sys
from email import message_from_bytes
from email.policy import default

from aiosmtpd.smtp import SMTP


class Sink:
    async def handle_DATA(self, server, session, envelope):
        msg = message_from_bytes(envelope.original_content or envelope.content, policy=default)
        body = msg.get_body(preferencelist=("plain",))
        print(
            json.dumps(
                {
                    "mail_from": envelope.mail_from,
                    "rcpt_tos": envelope.rcpt_tos,
                    "from": str(msg["From"]),
                    "to": str(msg["To"]),
                    "subject": str(msg["Subject"]),
                    "content_type": msg.get_content_type(),
                    "text": body.get_content() if body is not None else "",
                }
            ),
            flush=True,
        )
        return "250 Message accepted for delivery"


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(Sink(), hostname="sink.test", enable_SMTPUTF8=True), sock=sock
    )
    print(f"READY {sock.getsockname()[1]}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
