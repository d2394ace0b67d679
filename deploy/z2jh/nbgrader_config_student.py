"""nbgrader config of students' servers on Zero to JupyterHub: the course id and ngshare's exchange.

The student image installs it as /srv/inplace/etc/student/nbgrader_config.py (JUPYTER_CONFIG_PATH),
beside nbgrader's student view. Every student's pod talks to ngshare through the hub's proxy
(http://proxy-public/services/ngshare inside the namespace), so the exchange works across nodes; ngshare
names the submitter from the hub token, not from a file owner.
"""
import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "inplace-autograd"
# ngshare_exchange's classes (the names its configureExchange sets), as import strings.
for step, dotted in {
    "exchange": "exchange.Exchange",
    "fetch_assignment": "fetch_assignment.ExchangeFetchAssignment",
    "fetch_feedback": "fetch_feedback.ExchangeFetchFeedback",
    "release_assignment": "release_assignment.ExchangeReleaseAssignment",
    "release_feedback": "release_feedback.ExchangeReleaseFeedback",
    "list": "list.ExchangeList",
    "submit": "submit.ExchangeSubmit",
    "collect": "collect.ExchangeCollect",
}.items():
    setattr(c.ExchangeFactory, step, f"ngshare_exchange.{dotted}")
c.Exchange._ngshare_url = os.environ.get("INPLACE_NGSHARE_URL", "http://proxy-public/services/ngshare")
