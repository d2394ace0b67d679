"""hub setup and hub remove, as an instructor meets them (issue 38): a demo hub on loopback with a password
per account, the set-up's progress, and `remove` deleting the initial passwords first and naming what it keeps.
No OS account is made here: the steps that make them are replaced by recorders (tests/test_hub.py runs the
real thing)."""
from __future__ import annotations

import pytest

from instructor.classroom import hub as hubmod


@pytest.fixture
def dry_setup(monkeypatch):
    """setup() with every step that touches the system recorded instead of run."""
    calls = []
    monkeypatch.setattr(hubmod.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hubmod.shutil, "which", lambda tool: f"/usr/sbin/{tool}")
    for name in ("ensure_group", "_run", "copy_course", "own_exchange", "student_env", "jupyter_configs",
                 "lock_down", "add_to_gradebook", "release_all", "lock_checkout"):
        monkeypatch.setattr(hubmod, name, lambda *a, _n=name, **k: calls.append(_n))

    def ensure_user(hub, name, groups, *, comment="", password=None):
        calls.append(("user", name, password))
    monkeypatch.setattr(hubmod, "ensure_user", ensure_user)
    return calls


def test_a_demo_hub_listens_on_this_machine_only_unless_told(dry_setup, tmp_path, capsys):
    hub, made = hubmod.setup(tmp_path / "demo", demo=True)
    assert hub.ip == "127.0.0.1"
    hub, _ = hubmod.setup(tmp_path / "open", demo=True, ip="0.0.0.0")
    assert hub.ip == "0.0.0.0"
    hub, _ = hubmod.setup(tmp_path / "class")       # a class hub (roster accounts): every interface, as before
    assert hub.ip == ""
    assert hubmod.listen_address(None, True) == "127.0.0.1" and hubmod.listen_address(None, False) == ""


def test_demo_accounts_get_a_password_each_unless_one_is_asked_for(dry_setup, tmp_path):
    _, made = hubmod.setup(tmp_path / "a", demo=True)
    assert len(made) == 4 and len({pw for _, pw in made}) == 4, made
    _, made = hubmod.setup(tmp_path / "b", demo=True, demo_password="same-for-the-test")
    assert {pw for _, pw in made} == {"same-for-the-test"}


def test_setup_says_each_step_and_releases_with_a_progress_bar(dry_setup, tmp_path, capsys):
    hubmod.setup(tmp_path / "p", demo=True, release=True)
    err = capsys.readouterr().err
    for step in ("demo accounts", "the course folder", "the exchange's course folders",
                 "the students' Python environment", "permissions"):
        assert f"hub setup: {step}" in err, err
    assert "release_all" in dry_setup


def test_releasing_shows_a_progress_bar_over_the_assignments(tmp_path, capsys, monkeypatch):
    import pwd
    import types

    hub = hubmod.Hub(prefix=str(tmp_path / "hub"))
    for a in ("00_a", "01_b"):
        (hub.course / "source" / a).mkdir(parents=True)
    ran = []
    monkeypatch.setattr(hubmod, "_run", lambda argv, **kw: ran.append(argv[-1]))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: types.SimpleNamespace(pw_dir="/nonexistent"))
    hubmod.release_all(hub)
    assert ran == ["00_a", "00_a", "01_b", "01_b"]      # generate, then release, each
    err = capsys.readouterr().err
    assert "hub setup: releasing" in err and "2/2" in err, err


def test_remove_deletes_the_initial_passwords_first_and_names_what_it_keeps(tmp_path, capsys, monkeypatch):
    hub = hubmod.Hub(prefix=str(tmp_path / "hub"))
    for folder in (hub.state, hub.course, hub.exchange):
        folder.mkdir(parents=True)
    (hub.state / hubmod.PASSWORDS).write_text("icxt-student1,secret\n")
    hub.save()
    assert hubmod.main(["remove", "--prefix", str(hub.root)]) == 0
    out = capsys.readouterr().out
    assert not (hub.state / hubmod.PASSWORDS).exists()
    assert f"deleted {hub.state / hubmod.PASSWORDS}" in out
    assert str(hub.course) in out and "gradebook.db" in out and str(hub.exchange) in out
    assert str(hub.env) not in out                  # only what exists is named
