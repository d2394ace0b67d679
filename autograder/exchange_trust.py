"""A student's side of the hub's exchange: only what the course's account made is listed, fetched or trusted.

nbgrader's exchange root is writable by everyone (mode 1777), and plain nbgrader trusts whatever
``<root>/<course>/`` holds. A student account that makes ``<root>/<course>/outbound/<assignment>/`` first
(before the instructor's first release) owns the course's folder: the instructor's release then fails
("You don't own the directory"), and her classmates' Assignments panel offers her assignment; Fetch
gives them her notebook, which they run as themselves. A course folder she made could also hold an
``inbound/`` she can read (everyone's submissions) or a ``feedback/`` she writes.

The hub's set-up (``instructor/classroom/hub.py``) makes ``<root>/<course>/{outbound,inbound,feedback}``
owned by the course's account before any student logs in, and points the students' servers at these
classes (``etc/student/nbgrader_config.py``)::

    c.ExchangeFactory.list = "autograder.exchange_trust.CourseExchangeList"
    c.ExchangeFactory.fetch_assignment = "autograder.exchange_trust.CourseExchangeFetchAssignment"
    c.ExchangeFactory.fetch_feedback = "autograder.exchange_trust.CourseExchangeFetchFeedback"
    c.ExchangeFactory.submit = "autograder.exchange_trust.CourseExchangeSubmit"
    c.CourseOwnedExchange.course_accounts = ["inplace-grader"]

Each checks, before it reads or writes, that the course's folder and the folder it uses
(``outbound/<assignment>``, ``feedback``, ``inbound``) are real folders (not links) owned by one of
``course_accounts``; anything else is refused with a message naming the folder and its owner (the
list leaves such an assignment out and logs why). With ``course_accounts`` empty (a course on one
account, ``make lab``) they are nbgrader's classes unchanged.
"""
from __future__ import annotations

import os
import stat

from nbgrader.exchange.default.fetch_assignment import ExchangeFetchAssignment
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback
from nbgrader.exchange.default.list import ExchangeList
from nbgrader.exchange.default.submit import ExchangeSubmit
from traitlets import List, Unicode
from traitlets.config import LoggingConfigurable

__all__ = ["CourseOwnedExchange", "CourseExchangeList", "CourseExchangeFetchAssignment",
           "CourseExchangeFetchFeedback", "CourseExchangeSubmit"]


def _account(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


class CourseOwnedExchange(LoggingConfigurable):
    """The check every class here shares: folders of the course's exchange belong to the course's account."""

    course_accounts = List(
        Unicode(), help="OS accounts (names or numeric uids) that own the course's folder in the exchange "
                        "(the account that releases: the hub's grader account). Empty: no check (nbgrader's "
                        "own behaviour, for a course on one account).").tag(config=True)

    def course_uids(self) -> set[int]:
        import pwd

        uids = set()
        for name in self.course_accounts:
            name = str(name).strip()
            if name.isdigit():
                uids.add(int(name))
                continue
            try:
                uids.add(pwd.getpwnam(name).pw_uid)
            except KeyError:
                self.log.error("course_accounts: no OS account named %r on this machine", name)
        return uids

    def not_the_course(self, path: str, uids: set[int] | None = None) -> str | None:
        """Why ``path`` is not a folder the course's account made; None when it is (or when it does not
        exist: nbgrader says so itself), or when there is no check."""
        if not self.course_accounts:
            return None
        uids = self.course_uids() if uids is None else uids
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as err:
            return f"{path} cannot be read ({err.strerror})"
        if stat.S_ISLNK(st.st_mode):
            return f"{path} is a symbolic link, not the course's folder"
        if not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder"
        if st.st_uid not in uids:
            return (f"{path} belongs to {_account(st.st_uid)}, not to the course's account "
                    f"({', '.join(map(str, self.course_accounts))}): your instructor did not make it")
        return None

    def refuse_unless_course(self, *paths: str) -> None:
        uids = self.course_uids()
        for path in paths:
            why = self.not_the_course(path, uids)
            if why:
                self.fail(f"Refused: {why}. Nothing was read from or written to it; tell your instructor.")


class CourseExchangeList(CourseOwnedExchange, ExchangeList):
    """nbgrader's list, leaving out every released assignment (and submission) in a folder the course's
    account does not own."""

    def init_dest(self):
        super().init_dest()
        if not self.course_accounts or self.cached:
            return
        uids = self.course_uids()
        kept = []
        for path in self.assignments:
            where = os.path.dirname(path)                 # .../<course>/outbound or .../<course>/inbound
            chain = [os.path.dirname(where), where] + ([path] if not self.inbound else [])
            why = next((w for w in (self.not_the_course(p, uids) for p in chain) if w), None)
            if why:
                self.log.error("Not listed: %s (%s)", path, why)
            else:
                kept.append(path)
        self.assignments = kept


class CourseExchangeFetchAssignment(CourseOwnedExchange, ExchangeFetchAssignment):
    """nbgrader's fetch, refusing an assignment the course's account did not release."""

    def init_src(self):
        super().init_src()
        self.refuse_unless_course(self.course_path, self.outbound_path, self.src_path)


class CourseExchangeFetchFeedback(CourseOwnedExchange, ExchangeFetchFeedback):
    """nbgrader's fetch_feedback, only from the course account's ``feedback/``."""

    def init_src(self):
        super().init_src()
        self.refuse_unless_course(self.course_path, self.outbound_path)


class CourseExchangeSubmit(CourseOwnedExchange, ExchangeSubmit):
    """nbgrader's submit, only into the course account's ``inbound/`` (a squatter's could be read by her)."""

    def init_dest(self):
        self.refuse_unless_course(os.path.join(self.root, self.coursedir.course_id),
                                  os.path.join(self.root, self.coursedir.course_id, "inbound"))
        super().init_dest()
