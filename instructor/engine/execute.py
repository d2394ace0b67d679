"""The executor nbgrader runs a submission's notebook with: nbgrader's Execute preprocessor with the
grader in charge of the wall clock, kernels that die or hang, and outputs that grow without bound.

Its kernel is the sandbox's (:mod:`instructor.sandbox.kernel`): started by the kernelspec
:func:`~instructor.sandbox.kernel.write_kernelspec` writes, or in the pre-started sandbox.

Everything of one submission is on the preprocessor *instance*, as traits the engine sets per submission
(``box``: the kernel's box, :class:`~instructor.sandbox.kernel.KernelBox`; ``wall_seconds``; ``hung_tests``
and ``hung_cells`` from the confirmation), as nbgrader's own preprocessors take their settings; the
kernel's environment is given to ``start_kernel(env=...)``; what it flagged is the instance's
``course_flags``, read back by whoever ran it. Nothing passes through the process's environment or
class attributes, so two submissions may be executed at once in one process.
"""
from __future__ import annotations

import functools
import json
import os
import threading
import time

from autograder.nbgrader_cells import grade_id

from ..layout import notebook_language
from ..sandbox import GRADING_ENV, KERNEL_NAME, kernel_manager_class  # (autograder.runtime has GRADING_ENV too, and imports torch)

HUNG_CELL_SECONDS = 10        # a test cell whose function never returned in the confirmation run
HUNG_AFTER_LOOP_SECONDS = 30  # any cell, once an earlier cell ran into the per-cell limit


def source_key(source) -> str:
    import hashlib

    text = source if isinstance(source, str) else "".join(source)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _message_size(content: dict) -> int:
    """Bytes an output message would add to the notebook (roughly: its text and data)."""
    size = 0
    for key in ("text", "evalue", "ename"):
        size += len(str(content.get(key, "")))
    for tb in content.get("traceback") or []:
        size += len(str(tb))
    for part in ("data", "metadata"):
        for v in (content.get(part) or {}).values():
            size += len(v) if isinstance(v, str) else len(json.dumps(v, default=str))
    return size + 64


def _short_error_content(content: dict) -> dict:
    tb = [str(t)[:2000] for t in (content.get("traceback") or [])][-20:]
    return {**content, "evalue": str(content.get("evalue", ""))[:2000], "traceback": tb}


@functools.lru_cache(maxsize=None)
def sandboxed_execute_class():
    """nbgrader's Execute preprocessor, with the kernel in the sandbox and the grader in charge:

    * the notebook's kernel name is ignored (a made-up or missing kernel cannot stop grading);
    * past the submission's wall-clock limit no further cell runs (each gets a one-line error);
    * a cell that ends the kernel (``os._exit``, ``exit()``, a crash, the memory limit) gets an error
      output saying so, the kernel is restarted, the cells before it are run again (at most three
      times per submission), and grading goes on: the submission is graded as far as it ran;
    * outputs beyond ``Limits.output_bytes`` per cell are cut.
    """
    from nbclient.exceptions import DeadKernelError
    from nbformat.v4 import new_output
    from nbgrader.preprocessors import Execute
    from traitlets import Any, Float, List

    class SandboxedExecute(Execute):
        max_restarts = 3
        # one submission's settings, set on the instance by the engine (never configuration)
        box = Any(None, help="the kernel's box (instructor.sandbox.kernel.KernelBox)")
        wall_seconds = Float(0.0, help="seconds the submission has left when execution starts (0: its limit)")
        hung_tests = List(help="grade ids whose check never returned in the confirmation run")
        hung_cells = List(help="source keys of cells that never returned in the confirmation run")

        def preprocess(self, nb, resources=None, km=None):
            if self.box is None:
                raise ValueError("SandboxedExecute runs a submission's kernel in its box: the engine sets `box` "
                                 "per submission (instructor.engine.pipeline.autograde)")
            self.kernel_name = KERNEL_NAME
            self.kernel_manager_class = kernel_manager_class()
            self._limits = self.box.limits
            self._deadline = time.monotonic() + (self.wall_seconds or self._limits.wall_seconds)
            self._restarts, self._ran = 0, []
            self._nb_used, self._cell_used, self._cut_cells = 0, 0, {}
            self._hung, self._hung_cells = set(self.hung_tests), set(self.hung_cells)
            self._loop_seen = False  # a cell already ran into the per-cell limit here
            self._skipped_hung = False  # a cell that never returned in the confirmation was left out
            self.timeout_func = self._cell_timeout
            self.course_flags = []
            self._asked_exit = False
            self.on_cell_executed = self._note_exit_request
            return super().preprocess(nb, resources, km)

        def create_kernel_manager(self):
            km = super().create_kernel_manager()
            km.use_box(self.box)
            return km

        async def async_start_new_kernel(self, **kwargs):
            """The kernel's settings as data: its box's (:meth:`~instructor.sandbox.kernel.KernelBox.env`) and
            the notebook's language — its ``course.language`` (the canonical notebook's, which is the release's
            metadata; a Chinese edition's), and that a grader runs it — given to ``start_kernel(env=...)``."""
            lang = notebook_language(getattr(self, "nb", None) or {}) or ""
            # COURSE_GRADING=1: the course's slow demonstration cells do less (autograder.runtime.grading)
            kwargs["env"] = {**os.environ, **(kwargs.get("env") or {}), **self.box.env(lang), GRADING_ENV: "1"}
            return await super().async_start_new_kernel(**kwargs)

        def start_new_kernel(self, **kwargs):
            from jupyter_core.utils import run_sync

            return run_sync(self.async_start_new_kernel)(**kwargs)

        def _note_exit_request(self, cell=None, cell_index=None, execute_reply=None):
            """IPython's ``exit()`` / ``quit()`` ends the kernel 0.1 s *after* the cell's reply, which says
            so in its payload. Noted here, so that the kernel's end is met at this cell — not left to
            whichever later cell finds the kernel dead, or to none when the notebook ends within 0.1 s."""
            for p in ((execute_reply or {}).get("content") or {}).get("payload") or []:
                if isinstance(p, dict) and p.get("source") == "ask_exit" and not p.get("keepkernel"):
                    self._asked_exit = True

        def _exit_requested(self) -> bool:
            """The cell just run asked the kernel to end: wait (at most 2 s) for it to be gone."""
            from jupyter_core.utils import run_sync

            if not self._asked_exit:
                return False
            self._asked_exit = False
            end = time.monotonic() + 2
            while time.monotonic() < end and run_sync(self.km.is_alive)():
                time.sleep(0.01)
            return True

        def _cell_timeout(self, cell):
            """The confirmation already saw the function a test cell calls never return: that cell gets
            :data:`HUNG_CELL_SECONDS`, not the full cell limit (its points are lost either way)."""
            gid = grade_id(cell)
            if gid in self._hung or source_key(cell.get("source", "")) in self._hung_cells:
                return min(int(self.timeout or HUNG_CELL_SECONDS), HUNG_CELL_SECONDS)
            if self._loop_seen:
                return min(int(self.timeout or HUNG_AFTER_LOOP_SECONDS), HUNG_AFTER_LOOP_SECONDS)
            return self.timeout

        def _error(self, cell, name, text):
            cell.outputs.append(new_output("error", ename=name, evalue=text, traceback=[f"{name}: {text}"]))

        def _watchdog_kill(self):
            try:
                self.km.provisioner.process.kill() if self.km.provisioner else None
            except Exception:  # noqa: BLE001
                pass

        def output(self, outs, msg, display_id, cell_index):
            """Outputs are counted as they arrive, per cell and per notebook: past either cap they are
            dropped before they are kept in memory. Errors and stderr are always kept (shortened): they
            decide whether a test cell failed."""
            content = msg.get("content") or {}
            size = _message_size(content)
            notebook_full = self._nb_used + size > self._limits.notebook_output_bytes
            if notebook_full or self._cell_used + size > self._limits.output_bytes:
                if notebook_full or cell_index not in self._cut_cells:
                    self._cut_cells[cell_index] = "notebook" if notebook_full else "cell"
                kind = msg.get("msg_type")
                if kind == "error":
                    msg = {**msg, "content": _short_error_content(content)}
                elif kind == "stream" and content.get("name") == "stderr":
                    msg = {**msg, "content": {**content, "text": str(content.get("text", ""))[:1000]}}
                else:
                    return None
                size = _message_size(msg["content"])
            self._cell_used += size
            self._nb_used += size
            return super().output(outs, msg, display_id, cell_index)

        def preprocess_cell(self, cell, resources, index):
            if cell.cell_type != "code":
                return cell, self.resources
            self._cell_used = 0
            gid = grade_id(cell)
            if gid in self._hung or source_key(cell.get("source", "")) in self._hung_cells:
                # it never returned in the confirmation run: not called again (an endless loop costs once)
                cell.outputs = []
                self._error(cell, "NotRunAgain", "this cell never returned in the grader's confirmation run "
                                                 "(an endless loop?): it was not run again")
                if not self._skipped_hung:
                    self._skipped_hung = True
                    self.course_flags.append(f"cell {index + 1} (and any other that never returned in the confirmation "
                                             "run) was not run again in the kernel: look for a loop that never ends")
                return cell, self.resources
            for attempt in (0, 1):
                left = self._deadline - time.monotonic()
                if left <= 0:
                    cell.outputs = []
                    self._error(cell, "TimeLimit", "not run: the submission used up its time limit")
                    if not any("time limit" in f for f in self.course_flags):
                        self.course_flags.append(f"stopped at cell {index + 1}: the submission used up its "
                                                 f"wall-clock limit ({self._limits.wall_seconds:.0f} s)")
                    return cell, self.resources
                timer = threading.Timer(left, self._watchdog_kill)
                timer.daemon = True
                timer.start()
                try:
                    cell, res = super().preprocess_cell(cell, resources, index)
                except (DeadKernelError, RuntimeError) as err:
                    if isinstance(err, RuntimeError) and "kernel" not in str(err).lower():
                        raise
                    timed_out = time.monotonic() >= self._deadline
                    if timed_out or self._restarts >= self.max_restarts:
                        why = ("the submission's time limit ended it" if timed_out else
                               "the kernel died again and was not restarted (too many restarts)")
                        cell.outputs = []
                        self._error(cell, "KernelDied", why)
                        self.course_flags.append(f"cell {index + 1}: {why}")
                        self._deadline = time.monotonic()
                        return cell, self.resources
                    self._restarts += 1
                    self._restart_and_replay()
                    if attempt == 0:
                        cell.outputs = []  # the kernel may have died of an earlier cell (exit()): try once more
                        continue
                    cell.outputs = []
                    self._error(cell, "KernelDied", "this cell ended the Python process (os._exit, exit(), a crash "
                                                    "or the memory limit); it was skipped and grading went on")
                    self.course_flags.append(f"cell {index + 1} ended the Python process (os._exit, exit(), a crash "
                                             "or the memory limit); the kernel was restarted")
                    return cell, self.resources
                finally:
                    timer.cancel()
                if any(o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])):
                    # an endless loop the interrupt did not stop: start afresh without this cell
                    self.course_flags.append(f"cell {index + 1} ran past the per-cell time limit ({self._cell_timeout(cell)} s); "
                                             "the kernel was restarted")
                    self._loop_seen = True
                    if self._restarts < self.max_restarts and time.monotonic() < self._deadline:
                        self._restarts += 1
                        self._watchdog_kill()
                        self._restart_and_replay()
                    else:
                        self._deadline = time.monotonic()
                elif self._exit_requested():
                    self.course_flags.append(f"cell {index + 1} ended the Python process after it finished (exit() "
                                             "or quit()); the kernel was restarted without it")
                    if self._restarts < self.max_restarts:  # else the next cell meets the ended kernel
                        self._restarts += 1
                        self._restart_and_replay()
                else:
                    self._ran.append(cell)
                self._cap_outputs(cell, index)
                return cell, res
            return cell, self.resources

        def _alive(self, source: str = "") -> bool:
            """Is the kernel still there after ``source`` ran? A cell that may end it later (exit(),
            signals) is watched for a second: ipykernel stops shortly after replying."""
            from jupyter_core.utils import run_sync

            suspicious = any(w in source for w in ("exit", "kill", "signal", "abort", "quit"))
            for _ in range(12 if suspicious else 1):
                if not run_sync(self.km.is_alive)():
                    return False
                time.sleep(0.1 if suspicious else 0)
            return True

        def _restart_and_replay(self):
            """A fresh kernel with the cells that ran before; a cell that kills it again is dropped."""
            from jupyter_core.utils import run_sync

            for _ in range(self.max_restarts + 1):
                try:
                    if self.kc is not None:
                        self.kc.stop_channels()
                    run_sync(self.km.restart_kernel)(now=True)
                    self.start_new_kernel_client()
                    culprit, before = None, None
                    for prev in list(self._ran):
                        try:
                            run_sync(self.kc.execute_interactive)(
                                prev.source, store_history=False, allow_stdin=False, output_hook=lambda msg: None,
                                timeout=max(1.0, min(self.timeout or 180, self._deadline - time.monotonic())))
                        except TimeoutError:
                            if run_sync(self.km.is_alive)():
                                raise
                            culprit = before or prev  # it died of the cell before (exit() after its reply)
                            break
                        if not self._alive(prev.source):
                            culprit = prev
                            break
                        before = prev
                    if culprit is None:
                        return
                    self._ran.remove(culprit)
                    self.course_flags.append("a cell ended the Python process after it finished (e.g. exit()); "
                                             "it was left out when the kernel was restarted")
                except Exception as err:  # noqa: BLE001
                    self.course_flags.append(f"the kernel could not be restarted ({type(err).__name__}); grading stopped")
                    self._deadline = time.monotonic()
                    return

        def _cap_outputs(self, cell, index=None):
            """Say where outputs were cut (and why), on the cell where it happened; keep every error."""
            cap, used, kept, cut = self._limits.output_bytes, 0, [], index in self._cut_cells
            for out in cell.get("outputs", []):
                size = len(json.dumps(out, default=str))
                if used + size > cap and out.get("output_type") != "error":
                    cut = True
                    continue
                used += size
                kept.append(out)
            if cut:
                notebook_full = self._cut_cells.get(index) == "notebook"
                why = (f"the notebook's outputs passed {self._limits.notebook_output_bytes >> 10} KiB" if notebook_full
                       else f"over {cap >> 10} KiB in this cell")
                kept.append(new_output("stream", name="stdout", text=f"\n... output cut by the grader: {why} ...\n"))
                flag = (f"outputs over {self._limits.notebook_output_bytes >> 10} KiB per notebook were cut "
                        f"(from cell {index + 1 if index is not None else '?'} on)" if notebook_full
                        else f"outputs over {cap >> 10} KiB per cell were cut")
                if not any(f.split(" (")[0] == flag.split(" (")[0] for f in self.course_flags):
                    self.course_flags.append(flag)
            cell.outputs = kept

    return SandboxedExecute
