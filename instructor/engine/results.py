"""Result files written in the sandbox, read by the grader within bounds.

A result file is checked before it is unpickled (:func:`check_result_file`: an honest ``torch.save``
file, within the size limits) and the loaded value is walked before anyone uses it
(:func:`check_loaded`); anything else is :class:`ResultTooLarge`.
"""
from __future__ import annotations

from pathlib import Path


class ResultTooLarge(ValueError):
    """A result file outside the limits: forged (or a runaway answer); never unpickled."""


MAX_RECORDS = 20_000       # tensors (storages) in one result file
MAX_PICKLE_BYTES = 4 << 20  # the pickle itself (structure, strings); tensors' bytes are separate records
MAX_NODES = 2_000_000      # lists, dicts, strings, numbers... in one loaded result, shared ones counted each time


def check_result_file(path: Path, max_bytes: int) -> int:
    """Check a ``torch.save`` file without unpickling it; return its unpacked size in bytes.

    Honest results are zip archives of *stored* (uncompressed) records, as ``torch.save`` writes them:
    a compressed record, more than :data:`MAX_RECORDS` records, a pickle over :data:`MAX_PICKLE_BYTES`
    or more than ``max_bytes`` unpacked is refused (:class:`ResultTooLarge`)."""
    import zipfile

    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise ResultTooLarge(f"{path.name} is {size >> 20} MiB on disk (limit {max_bytes >> 20} MiB)")
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError) as err:
        raise ResultTooLarge(f"{path.name} is not a result file ({err})") from None
    if len(infos) > MAX_RECORDS:
        raise ResultTooLarge(f"{path.name} holds {len(infos)} records (limit {MAX_RECORDS})")
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ResultTooLarge(f"{path.name}: record {info.filename[:60]} is compressed (torch.save never does that)")
        if info.filename.endswith(".pkl") and info.file_size > MAX_PICKLE_BYTES:
            raise ResultTooLarge(f"{path.name}: its pickle is {info.file_size >> 20} MiB "
                                 f"(limit {MAX_PICKLE_BYTES >> 20} MiB)")
        total += info.file_size
    if total > max_bytes:
        raise ResultTooLarge(f"{path.name} unpacks to {total >> 20} MiB (limit {max_bytes >> 20} MiB)")
    return total


def check_loaded(value, max_bytes: int, max_nodes: int = MAX_NODES) -> None:
    """Walk a loaded result as the judge will, counting shared objects every time they are reached
    (a structure that shares its parts can be exponentially larger than its file), and tensors by the
    memory a dense copy would take (a stride-0 view of a small storage can claim any size)."""
    import torch

    budget = {"nodes": 0, "bytes": 0}
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        budget["nodes"] += 1
        if budget["nodes"] > max_nodes:
            raise ResultTooLarge(f"the result has more than {max_nodes} items")
        if depth > 64:
            raise ResultTooLarge("the result is nested more than 64 levels deep")
        if isinstance(v, torch.Tensor):
            budget["bytes"] += v.numel() * v.element_size()
            if budget["bytes"] > max_bytes:
                raise ResultTooLarge(f"the result's tensors would take more than {max_bytes >> 20} MiB")
        elif isinstance(v, (str, bytes)):
            budget["bytes"] += len(v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for kv in v.items() for x in kv)
        elif isinstance(v, (list, tuple, set, frozenset)):
            stack.extend((x, depth + 1) for x in v)


def load_data(path: Path, max_bytes: int = 64 << 20):
    """Read a result file written in the sandbox: plain data only (no pickled objects), and only once
    :func:`check_result_file` found it within the limits; the loaded value is walked by
    :func:`check_loaded` before anyone uses it. Raises :class:`ResultTooLarge` otherwise."""
    import torch

    check_result_file(path, max_bytes)
    value = torch.load(path, weights_only=True, map_location="cpu")
    check_loaded(value, max_bytes)
    return value
