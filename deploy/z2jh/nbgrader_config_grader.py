# --- Zero to JupyterHub (deploy/z2jh/nbgrader_config_grader.py): ngshare's exchange for formgrader.
# course-init.sh appends this block to the course folder's nbgrader_config.py, after the course's own
# settings, so it replaces the filesystem exchange's collect (instructor.classroom.exchange checks file
# owners in a shared folder; with ngshare the hub token names the submitter). The classes are
# ngshare_exchange's with the token taken from the process (deploy/z2jh/inplace_ngshare.py).
import os as _os  # noqa: E402

for _step in ("exchange", "fetch_assignment", "fetch_feedback", "release_assignment", "release_feedback",
              "list", "submit", "collect"):
    setattr(c.ExchangeFactory, _step, "inplace_ngshare." + {  # noqa: F821
        "exchange": "Exchange", "fetch_assignment": "ExchangeFetchAssignment",
        "fetch_feedback": "ExchangeFetchFeedback", "release_assignment": "ExchangeReleaseAssignment",
        "release_feedback": "ExchangeReleaseFeedback", "list": "ExchangeList", "submit": "ExchangeSubmit",
        "collect": "ExchangeCollect"}[_step])
c.Exchange._ngshare_url = _os.environ.get("INPLACE_NGSHARE_URL", "http://proxy-public/services/ngshare")  # noqa: F821
