"""Messages between the grader and a forked kernel: length-prefixed JSON over a Unix socket.

JSON, never pickle: the grader reads what a process running student code
wrote, so nothing it reads may execute.  Every message is bounded in size.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

MAX_MESSAGE_BYTES = 64 * 1024**2
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The other end sent something that is not a message of this protocol, or hung up."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size:
        chunk = sock.recv(min(size, 1024**2))
        if not chunk:
            raise ProtocolError("connection closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_read_exactly(sock, _HEADER.size))
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {size} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")
    try:
        message = json.loads(_read_exactly(sock, size).decode("utf-8", "replace"))
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from error
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message
