"""Collect accepts only what the named student handed in: nbgrader's ``ExchangeCollect``, made strict.

nbgrader's exchange names a submission ``<student>+<assignment>+<timestamp>[+<random>]`` in the
course's ``inbound/`` folder, a folder every student may write. Plain ``nbgrader collect`` believes the
name: a folder ``bob+00_orientation+2099-01-01 00:00:00.000000 UTC`` that another account made is
collected as bob's submission (nbgrader only logs "cheating attempt?" when the owner's name differs
from the student's), and its far-future timestamp makes it the newest, so it wins every later collect.

:class:`CourseExchangeCollect` (``c.ExchangeFactory.collect`` in the course's ``nbgrader_config.py``,
so ``nbgrader collect`` and formgrader's **Collect** button both use it) refuses a folder that

* is not a plain folder (a symbolic link to somebody's files, a file), or holds a link, a special
  file (a FIFO would hang the copy), a file with a second hard link, or a file of another account;
* is owned by an account other than the student's own (the OS account of that name, when there is
  one) or the accounts that hand in for students without one: the account collecting, the owner of
  the course's folder in the exchange (who released it), and ``submitter_accounts`` — on an exchange
  shared by accounts, somebody else handed it in under that name;
* is stamped in the future (more than ``clock_skew_seconds`` ahead of this machine's clock), or whose
  ``timestamp.txt`` (what nbgrader's late penalty reads) is missing or says another time than its name.

Nothing is collected when the course's folder in the exchange or its ``inbound/`` belongs to another account
than the one collecting (or ``course_accounts``): a student who made the course's folder before the first
release would count as "the owner of the course's folder" above and could hand in under any name.

A folder stamped in the past is believed no further than its change times: a student can name and stamp
a folder she makes days late "an hour before the due date" (and backdate its modification times), but
not its ``st_ctime``, which the kernel sets at every change of a file or folder. When the folder's stamp is
more than ``clock_skew_seconds`` earlier than the latest ``st_ctime`` among the folder, its subfolders and
its regular files, the submission is collected **re-stamped**: it is kept (a student's work is never
lost), its collected ``timestamp.txt`` says that latest change time, nbgrader's late penalty
(:mod:`.late`) counts from it, and the collect logs a ``RE-STAMPED`` line naming the folder and both
times. The gradebook's submission time (formgrader's Manage Submissions), the late penalty in the
student's feedback and the exports' "late" note all follow from that time. ``restamp_backdated = False``
turns this off (an exchange restored from a backup has new change times everywhere).

Each refusal is logged as an error naming the folder and why; the other submissions are collected
(each student's newest acceptable one: a forged newer folder never hides the student's own); then the
collect fails (``nbgrader collect`` exits 1, formgrader shows its error dialog with the log), and does
so at every collect while the folder is there: the instructor looks at it and removes it. A copy that
an earlier collect (before this class) took from a folder refused now, or one stamped in the future,
is moved aside to ``replaced_submissions/<time>/`` (never deleted) so the student's own can be collected.
"""
from __future__ import annotations

import datetime
import glob
import os
import shutil
import stat
import time

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import parse_utc
from traitlets import Bool, Float, Int, List, Unicode

from ..layout import RESTAMP_NOTE

__all__ = ["CourseExchangeCollect", "handed_in_at", "utc_now"]


def utc_now() -> datetime.datetime:
    """Now, as nbgrader's ``parse_utc`` gives times: naive, in UTC."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def handed_in_at(path: str) -> datetime.datetime:
    """The latest ``st_ctime`` among the folder ``path``, its subfolders and its regular files (never
    through a link), as naive UTC: when its contents last changed, which its owner cannot set back."""
    latest = os.lstat(path).st_ctime
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                latest = max(latest, st.st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)


def _account(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid} (no account of that number here)"


def _read_small(path: str, limit: int = 200) -> str | None:
    """The start of a regular file, never through a link; None when it is not one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


class CourseExchangeCollect(ExchangeCollect):
    """``nbgrader collect`` that refuses what the named student did not hand in (see the module)."""

    clock_skew_seconds = Float(
        120.0, help="How far ahead of this machine's clock a submission's timestamp may be (clocks of the "
                    "machines sharing an exchange differ a little); later is in the future: refused.").tag(config=True)
    submitter_accounts = List(
        Unicode(), help="OS accounts (names or numeric uids) that may hand in for a student who has no OS "
                        "account of that name, besides the account collecting and the owner of the course's "
                        "folder in the exchange (e.g. the one account every student's server runs as)."
    ).tag(config=True)
    max_entries = Int(10000, help="More files and folders than this in one submission: refused.").tag(config=True)
    course_accounts = List(
        Unicode(), help="OS accounts (names or numeric uids) besides the account collecting that may own the "
                        "course's folder in the exchange and its inbound/ (nbgrader's release makes them as the "
                        "account that releases; the hub's set-up as the grader account).").tag(config=True)
    restamp_backdated = Bool(
        True, help="Collect a submission whose stamp is more than clock_skew_seconds earlier than the latest "
                   "change time (st_ctime) of its folder and files as handed in at that change time (logged "
                   "RE-STAMPED; the late penalty counts from it). Off: the stamp is believed.").tag(config=True)

    # ------------------------------------------------------------------ which folders
    def init_src(self):
        super().init_src()  # nbgrader's checks of the course and inbound folders, and the due date
        self._refuse_foreign_course()
        self.refused: list[tuple[str, str]] = []
        self.restamped: dict[str, tuple[datetime.datetime, datetime.datetime]] = {}
        self._stamps: dict[str, datetime.datetime] = {}
        self._refused_times: dict[str, set] = {}
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*")
        accepted: dict[str, list[dict]] = {}
        for path in sorted(glob.glob(pattern)):
            rec = self._path_to_record(path)
            why = self.refusal(path, rec)
            if why:
                self.refused.append((path, why))
                self._refused_times.setdefault(rec["username"], set()).add(rec["timestamp"])
                self.log.error("REFUSED, not collected: %s %s", path, why)
            else:
                self._restamp_if_backdated(path, rec)
                accepted.setdefault(rec["username"], []).append(rec)
        self.src_records = [self._choose(recs) for recs in accepted.values()]

    def _refuse_foreign_course(self) -> None:
        """The course's folder (and ``inbound/``) must be the course's: their owner counts as a submitter
        for every student (:meth:`_allowed_uids`), and a student who made them first could read inbound/."""
        import pwd

        allowed = {os.geteuid()}
        for name in self.course_accounts:
            try:
                allowed.add(int(name) if str(name).isdigit() else pwd.getpwnam(name).pw_uid)
            except KeyError:
                self.log.warning("course_accounts: no OS account named %r", name)
        for path in (self.course_path, self.inbound_path):
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
                self.fail(f"{path} is not a folder (a link?): not the course's folder in the exchange; nothing "
                          "collected")
            if st.st_uid not in allowed:
                self.fail(f"{path} belongs to {_account(st.st_uid)}, not to the account collecting "
                          f"({_account(os.geteuid())}) nor course_accounts: another account made the course's "
                          "folder in the exchange; nothing collected. Move it away as root (`python -m "
                          "instructor.classroom.hub setup` does) and release again.")

    def _restamp_if_backdated(self, path: str, rec: dict) -> None:
        """A stamp earlier than the folder's contents last changed (beyond clock skew) is replaced by that
        change time in ``rec`` (so it counts for the choice among the student's folders, and for the late
        penalty: :meth:`do_copy` writes it in the collected ``timestamp.txt``)."""
        if not self.restamp_backdated:
            return
        self._stamps[path] = rec["timestamp"]
        try:
            real = handed_in_at(path)
        except OSError:  # gone since it was checked: its copy fails and says so
            return
        if rec["timestamp"] >= real - datetime.timedelta(seconds=self.clock_skew_seconds):
            return
        self._stamps[path] = real
        self.restamped[path] = (rec["timestamp"], real)
        late = ""
        if self.duedate is not None and rec["timestamp"] <= self.duedate < real:
            late = f"; the due date {self.duedate} UTC lies between them: late"
        self.log.warning("RE-STAMPED: %s is stamped %s UTC, but its folder and files were last changed at %s UTC "
                         "(%s later; a stamp is set by whoever makes the folder, the change time by the system): "
                         "collected as handed in at %s UTC, and the late penalty counts from then%s",
                         path, rec["timestamp"], f"{real:%Y-%m-%d %H:%M:%S}", real - rec["timestamp"],
                         f"{real:%Y-%m-%d %H:%M:%S}", late)
        rec["timestamp"] = real

    def _choose(self, records: list[dict]) -> dict:
        """The newest of a student's acceptable submissions (with ``before_duedate``: the newest before the
        due date, if any), as nbgrader chooses among all of them."""
        records = self._sort_by_timestamp(records)
        if self.duedate is not None and self.before_duedate:
            on_time = [r for r in records if r["timestamp"] <= self.duedate]
            if on_time:
                return on_time[0]
        return records[0]

    def _allowed_uids(self, student: str) -> set[int]:
        import pwd

        allowed = {os.geteuid()}
        try:
            allowed.add(pwd.getpwnam(student).pw_uid)
        except KeyError:
            pass
        try:
            allowed.add(os.lstat(self.course_path).st_uid)
        except OSError:
            pass
        for name in self.submitter_accounts:
            if str(name).isdigit():
                allowed.add(int(name))
                continue
            try:
                allowed.add(pwd.getpwnam(name).pw_uid)
            except KeyError:
                self.log.warning("submitter_accounts: no OS account named %r", name)
        return allowed

    def refusal(self, path: str, rec: dict) -> str | None:
        """Why the folder ``path`` (record ``rec``) is not ``rec['username']``'s submission; None: it is."""
        student = rec["username"]
        try:
            st = os.lstat(path)
        except OSError as err:
            return f"cannot be read ({err.strerror})"
        if stat.S_ISLNK(st.st_mode):
            return "is a symbolic link, not a folder nbgrader's submit made: not followed"
        if not stat.S_ISDIR(st.st_mode):
            return "is not a folder"
        allowed = self._allowed_uids(student)
        if self.check_owner and st.st_uid not in allowed:
            return (f"is owned by {_account(st.st_uid)}, not by {student}'s own account nor the exchange's: "
                    f"another account handed it in under {student}'s name")
        now = utc_now()
        if rec["timestamp"] > now + datetime.timedelta(seconds=self.clock_skew_seconds):
            return (f"is stamped {rec['timestamp']} UTC, in the future (now {now:%Y-%m-%d %H:%M:%S} UTC): a forged "
                    "time, which would make it win every later collect")
        stamp = _read_small(os.path.join(path, "timestamp.txt"))
        if stamp is None:
            return "has no timestamp.txt (nbgrader's submit always writes one; the late penalty reads it)"
        try:
            written = parse_utc(stamp)
        except (ValueError, OverflowError, TypeError):
            return f"has a timestamp.txt that is not a time ({stamp[:60]!r})"
        if written != rec["timestamp"]:
            return (f"has a timestamp.txt that says {written} UTC while its name says {rec['timestamp']} UTC: "
                    "edited after it was handed in")
        return self._contents_refusal(path, st.st_uid, allowed)

    def _contents_refusal(self, path: str, owner: int, allowed: set[int]) -> str | None:
        count = 0
        for dirpath, dirnames, filenames in os.walk(path):  # os.walk never descends into a linked folder
            for name in dirnames + filenames:
                count += 1
                if count > self.max_entries:
                    return f"holds more than {self.max_entries} files and folders"
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, path)
                try:
                    st = os.lstat(full)
                except OSError as err:
                    return f"holds {rel!r}, which cannot be read ({err.strerror})"
                if stat.S_ISLNK(st.st_mode):
                    return f"holds a symbolic link ({rel!r}): links are never followed"
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                    return f"holds {rel!r}, which is not a regular file or folder"
                if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    return f"holds {rel!r}, a hard link ({st.st_nlink} names for one file)"
                if self.check_owner and st.st_uid != owner and st.st_uid not in allowed:
                    return f"holds {rel!r}, owned by {_account(st.st_uid)}: another account's file"
        return None

    # ------------------------------------------------------------------ copying
    def copy_files(self):
        for rec in self.src_records:
            self._set_aside_forged_copy(rec["username"])
        checked, self.check_owner = self.check_owner, False  # checked above, strictly (nbgrader's would only warn)
        try:
            super().copy_files()
        finally:
            self.check_owner = checked
        if self.refused:
            names = "; ".join(f"{os.path.basename(p)}: {why}" for p, why in self.refused)
            self.fail(f"{len(self.refused)} submission(s) in {self.inbound_path} REFUSED, not collected (the others "
                      f"were): {names}. Look at them, then remove them from the exchange; every collect refuses "
                      "them until then.")

    def _set_aside_forged_copy(self, student: str) -> None:
        """An earlier collect's copy of a folder refused now (or stamped in the future) would stop the
        student's own newer one from being collected (nbgrader keeps the newer timestamp): moved aside."""
        dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.coursedir.assignment_id)
        if not os.path.isdir(dest) or os.path.islink(dest):
            return
        stamp = _read_small(os.path.join(dest, "timestamp.txt"))
        try:
            existing = parse_utc(stamp) if stamp else None
        except (ValueError, OverflowError, TypeError):
            return
        if existing is None:
            return
        future = existing > utc_now() + datetime.timedelta(seconds=self.clock_skew_seconds)
        if not future and existing not in self._refused_times.get(student, set()):
            return
        aside = os.path.join(self.coursedir.root, "replaced_submissions", time.strftime("%Y%m%d-%H%M%S"), student,
                             self.coursedir.assignment_id)
        os.makedirs(os.path.dirname(aside), exist_ok=True)
        shutil.move(dest, aside)
        self.log.error("%s held a submission stamped %s UTC (%s), collected before: moved to %s, so that %s's own "
                       "can be collected", dest, existing,
                       "in the future" if future else "from a folder refused now", aside, student)

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy (its size limit, ignore patterns and group sharing), except that a link is copied
        as a link, never followed (the folder was checked, but its owner may race the check): a copy that
        holds one is removed and the submission refused."""
        from nbgrader.utils import ignore_patterns

        limit = 1000 * self.coursedir.max_dir_size
        size = self.get_size(src)
        if size > limit:
            self.log.error("Directory size is too big")
            raise RuntimeError(f"Directory size is too big. Size is {size}, maximum size is {limit}")
        try:
            shutil.copytree(src, dest, symlinks=True,
                            ignore=ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                                   max_file_size=self.coursedir.max_file_size, log=self.log))
            why = next((f"{os.path.relpath(os.path.join(d, n), dest)!r} became a link or special file while it "
                        "was collected" for d, ds, fs in os.walk(dest) for n in ds + fs
                        if not (stat.S_ISREG(os.lstat(os.path.join(d, n)).st_mode)
                                or stat.S_ISDIR(os.lstat(os.path.join(d, n)).st_mode))), None)
        except (shutil.Error, OSError) as err:
            why = f"could not be copied as plain files ({str(err)[:200]})"
        if why:
            shutil.rmtree(dest, ignore_errors=True)
            self.refused.append((src, why))
            self.log.error("REFUSED, not collected: %s %s", src, why)
            return
        if src in self._stamps:  # changed while it was collected (after the check above): the later time counts
            try:
                after = handed_in_at(src)
            except OSError:  # removed meanwhile: the copy is what was there
                after = self._stamps[src]
            if after > self._stamps[src] + datetime.timedelta(seconds=self.clock_skew_seconds):
                self.restamped[src] = (self.restamped.get(src, (self._stamps[src],))[0], after)
                self._stamps[src] = after
        forged_note = os.path.join(dest, RESTAMP_NOTE)
        if os.path.lexists(forged_note):  # only collect writes this note: one the student handed in goes
            os.unlink(forged_note)
        if src in self.restamped:
            stamp, real = self.restamped[src]
            target = os.path.join(dest, "timestamp.txt")
            if os.path.lexists(target):
                os.unlink(target)
            with open(target, "w") as f:
                f.write(real.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
            with open(forged_note, "w") as f:
                f.write(f"handed in at {real:%Y-%m-%d %H:%M:%S} UTC (when its files were last changed), though its "
                        f"folder and timestamp.txt said {stamp:%Y-%m-%d %H:%M:%S} UTC: collected with the real time, "
                        "which the late penalty counts from")
            self.log.warning("RE-STAMPED: %s collected with timestamp.txt %s UTC (its folder said %s UTC)",
                             dest, f"{real:%Y-%m-%d %H:%M:%S.%f}", stamp)
        if self.coursedir.groupshared:
            for dirpath, _, _ in os.walk(dest):
                mode = os.stat(dirpath).st_mode
                if mode & 0o2770 != 0o2770:
                    try:
                        os.chmod(dirpath, (mode | 0o2770) & 0o2777)
                    except PermissionError:
                        self.log.warning("Could not update permissions of %s to make it groupshared", dirpath)
