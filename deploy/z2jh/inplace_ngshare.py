"""ngshare's nbgrader exchange for the course's formgrader service on Zero to JupyterHub.

ngshare_exchange sends the hub API token it finds in the process environment. The formgrader
service must not keep its token there: grading runs bubblewrap with the service's environment, and a
submission can read it (docs/deploying.md, threat model). The grader's Jupyter config (written by
``instructor.classroom.hub.jupyter_configs``) moves the token out of the environment into
``sys._inplace_hub_token``; these classes send that one. Students' servers use ngshare_exchange's own
classes (their token is their own). Selected by ``deploy/z2jh/nbgrader_config_grader.py``.
"""
import importlib
import os
import sys

import requests


def hub_token() -> str:
    """The service's hub token: kept in the process by the grader's config, else the environment's."""
    return getattr(sys, "_inplace_hub_token", "") or os.environ.get("JUPYTERHUB_API_TOKEN", "")


class TokenFromProcess:
    """Replaces ngshare_exchange's request: the same URL and error handling, the token from hub_token()."""

    def ngshare_api_request(self, method, url, data=None, params=None):
        token = hub_token()
        headers = {"Authorization": f"token {token}"} if token else None
        try:
            response = requests.request(method, self.ngshare_url + self.encode_url(url), headers=headers,
                                        data=data, params=params, timeout=120)
        except requests.RequestException:
            self.log.exception("ngshare: %s %s failed", method, url)
            return None
        return self._ngshare_api_check_error(response, url)


def _course_class(module: str, name: str) -> type:
    base = getattr(importlib.import_module(f"ngshare_exchange.{module}"), name)
    # The same class name as ngshare_exchange's: config sections (c.Exchange...) keep applying.
    return type(name, (TokenFromProcess, base), {"__module__": __name__, "__doc__": base.__doc__})


# nbgrader's exchange steps -> (ngshare_exchange module, class): the names configureExchange uses.
STEPS = {
    "exchange": ("exchange", "Exchange"),
    "fetch_assignment": ("fetch_assignment", "ExchangeFetchAssignment"),
    "fetch_feedback": ("fetch_feedback", "ExchangeFetchFeedback"),
    "release_assignment": ("release_assignment", "ExchangeReleaseAssignment"),
    "release_feedback": ("release_feedback", "ExchangeReleaseFeedback"),
    "list": ("list", "ExchangeList"),
    "submit": ("submit", "ExchangeSubmit"),
    "collect": ("collect", "ExchangeCollect"),
}

Exchange = _course_class(*STEPS["exchange"])
ExchangeFetchAssignment = _course_class(*STEPS["fetch_assignment"])
ExchangeFetchFeedback = _course_class(*STEPS["fetch_feedback"])
ExchangeReleaseAssignment = _course_class(*STEPS["release_assignment"])
ExchangeReleaseFeedback = _course_class(*STEPS["release_feedback"])
ExchangeList = _course_class(*STEPS["list"])
ExchangeSubmit = _course_class(*STEPS["submit"])
ExchangeCollect = _course_class(*STEPS["collect"])
