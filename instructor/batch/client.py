"""The grading service's client: what a grading process (the grader account's) uses to have the
root-owned service (:mod:`instructor.service`) grade a submission, one executor among the batch's.

* **framing** (both sides): a length, then JSON; never pickle;
* :func:`ask` — one request; the answer is believed only from root (or this very account, for tests);
* :func:`grade_request` / :func:`submitter` — a submission's notebooks to the service, its
  :class:`~instructor.engine.pipeline.Result` back (:func:`result_to_json` / :func:`result_from_json`);
* :func:`configured` — the service's socket when this process is to use one (``COURSE_GRADING_SERVICE``).
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import socket
import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = "COURSE_GRADING_SERVICE"
MAX_REQUEST = 64 << 20          # a request (a submission's notebooks, base64): more is refused
MAX_REPLY = 256 << 20
_HEADER = struct.Struct("!Q")


class ServiceError(RuntimeError):
    """The service could not be reached, refused the request, or answered something unreadable."""


# --------------------------------------------------------------------------- framing (both sides)

def send(sock: socket.socket, obj: dict) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ServiceError("the connection closed before the whole message came")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, limit: int) -> dict:
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if n > limit:
        raise ServiceError(f"a message of {n} bytes (at most {limit} are read)")
    try:
        obj = json.loads(_recv_exact(sock, n))
    except ValueError as err:
        raise ServiceError(f"not JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ServiceError("not a JSON object")
    return obj


def peer(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end, as the kernel saw it connect."""
    return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))


def source_digest(root: Path, assignment: str) -> str:
    """What identifies an assignment's source: every file of ``source/<assignment>/`` (names and bytes)."""
    h = hashlib.sha256()
    folder = Path(root) / "source" / assignment
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part in (".ipynb_checkpoints", "__pycache__") for part in rel.parts):
            h.update(str(rel).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


# --------------------------------------------------------------------------- results as JSON

def result_to_json(res) -> dict:
    """A service worker's result on the wire: its outcome (:meth:`~instructor.engine.pipeline.Outcome.to_json`)
    and the executed notebooks the client records; the service's own paths stay with it."""
    return {"outcome": res.to_json(), "executed": dict(res.executed)}


def result_from_json(d: dict):
    from ..engine.pipeline import Result

    if not isinstance(d, dict) or not isinstance(d.get("executed", {}), dict):
        raise ValueError("the service's result is not an outcome and its executed notebooks")
    res = Result.from_json(d.get("outcome"))
    res.executed = {str(k): v for k, v in d.get("executed", {}).items() if isinstance(v, str)}
    return res


# --------------------------------------------------------------------------- the client (grader account)

def ask(path: str | Path, request: dict, *, timeout: float | None = None) -> dict:
    """One request to the service at ``path``; its answer (raises :class:`ServiceError` on a refusal).
    The answer is believed only from root (or this very account, for tests): a socket anyone else made
    at that path is refused before anything is read."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except OSError as err:
            raise ServiceError(f"the grading service at {path} cannot be reached ({err.strerror or err}); is it "
                               "running? (the hub starts it; or: sudo .venv/bin/python -m instructor.service "
                               "serve ...)") from None
        _pid, uid, _gid = peer(sock)
        if uid not in (0, os.geteuid()):
            raise ServiceError(f"{path} is served by uid {uid}, not root: refused")
        send(sock, request)
        reply = receive(sock, MAX_REPLY)
    finally:
        sock.close()
    if reply.get("error") or not reply.get("ok"):
        raise ServiceError(f"the grading service refused: {reply.get('error') or reply}")
    return reply


def grade_request(path, student: str, assignment: str, notebooks: dict[str, bytes], root: Path = REPO):
    """Grade one submission at the service; a :class:`instructor.engine.pipeline.Result` to record (``executed`` set)."""
    reply = ask(path, {"op": "grade", "student": student, "assignment": assignment,
                       "source_digest": source_digest(root, assignment),
                       "notebooks": {Path(n).name: base64.b64encode(b).decode() for n, b in notebooks.items()}})
    return result_from_json(reply["result"])


def submitter(path, root: Path = REPO):
    """What :func:`.parallel.grade_parallel` calls per submission to have the service at ``path`` grade it."""
    return lambda student, assignment, notebooks: grade_request(path, student, assignment, notebooks, root=root)


def configured() -> str | None:
    """The service's socket, when this grading process is to use one (``COURSE_GRADING_SERVICE``)."""
    return os.environ.get(ENV) or None
