"""The course on The Littlest JupyterHub: formgrader as a hub service, and the students' nbgrader view.

install.sh copies this file to /opt/tljh/config/jupyterhub_config.d/ (TLJH loads every ``*.py`` there
after its own settings). It takes the course's parts from the one-machine hub's config,
``hub/jupyterhub_config.py`` in the course checkout, so both deployments define the formgrader service
the same way: the service ``inplace-course`` run by the shared grader account, its command, its
environment (the grader's Jupyter config, a TMPDIR no student can enter), its token, and the role
that lets the graders' group open it. The rest of that file (PAM, the local process spawner, ports,
the proxy) is the one-machine hub's own and is not used here: TLJH brings its own.

Settings (environment of TLJH's hub, set by install.sh in a systemd drop-in; defaults below):

* ``INPLACE_HUB_PREFIX``: the prefix ``python -m instructor.classroom.hub setup`` made (``/srv/inplace-hub``);
* ``INPLACE_CHECKOUT``: the course checkout (``/opt/inplace-course``), closed to other accounts;
* ``<prefix>/graders.txt``: the TLJH user names (one a line) who may open formgrader. TLJH's own
  accounts are named ``jupyter-<name>``; the hub's names are the plain ones.
"""
import os
from pathlib import Path

from traitlets.config import Config

c = get_config()  # noqa: F821 - provided by traitlets when JupyterHub loads this file

PREFIX = Path(os.environ.get("INPLACE_HUB_PREFIX", "/srv/inplace-hub"))
CHECKOUT = Path(os.environ.get("INPLACE_CHECKOUT", "/opt/inplace-course"))


def course_hub_config(checkout: Path, prefix: Path) -> Config:
    """What the one-machine hub's config sets, computed for ``prefix``, in a separate Config."""
    path = checkout / "hub" / "jupyterhub_config.py"
    scratch = Config()
    saved = os.environ.get("HUB_PREFIX")
    os.environ["HUB_PREFIX"] = str(prefix)
    try:
        exec(compile(path.read_text(), str(path), "exec"),
             {"get_config": lambda: scratch, "__file__": str(path), "__name__": "inplace_course_hub_config"})
    finally:
        if saved is None:
            os.environ.pop("HUB_PREFIX", None)
        else:
            os.environ["HUB_PREFIX"] = saved
    return scratch


def graders(prefix: Path) -> list[str]:
    f = prefix / "graders.txt"
    if not f.is_file():
        return []
    return sorted({line.strip() for line in f.read_text().splitlines()
                   if line.strip() and not line.lstrip().startswith("#")})


course = course_hub_config(CHECKOUT, PREFIX)
service = course.JupyterHub.services[0]
role = course.JupyterHub.load_roles[0]

# Formgrader: the one-machine hub's service, unchanged (TLJH's hub runs as root, so it can start the
# service as the grader account); and the root-owned grading service it hands submissions to, from the
# checkout's environment (instructor/service/__init__.py), when the one-machine hub's config has it.
c.JupyterHub.services.append(service)
c.JupyterHub.services.extend(course.JupyterHub.services[1:])
# Who may open it: the graders named in graders.txt (TLJH names), through the same group and role.
group = role["groups"][0]
c.JupyterHub.load_groups = {group: {"users": graders(PREFIX)}}
c.JupyterHub.load_roles.append(role)

# Students' servers (TLJH's systemd spawner, TLJH's user environment with the course installed):
# nbgrader's student view, the course id and the exchange, from the Jupyter config folder setup wrote.
c.Spawner.environment.update({"JUPYTER_CONFIG_PATH": str(PREFIX / "etc" / "student"),
                              "PYTHONNOUSERSITE": "1"})
c.Spawner.default_url = "/lab"
