"""Write the course's Binder and "Open in Colab" links from one setting: ``[tool.inplace-course]`` in pyproject.toml.

    python scripts/course_links.py            # rewrite README.md's link blocks and each notebook's Colab line
    python scripts/course_links.py --check    # exit 1, naming what is out of date (tests/test_course_links.py)
    python scripts/course_links.py --root DIR # work on a copy: DIR holds pyproject.toml, README.md, source/, ...

The setting::

    [tool.inplace-course]
    repository = "https://github.com/OWNER/NAME"
    branch = "main"

What it writes (idempotent: a second run changes nothing):

* README.md: the text between ``<!-- course_links:NAME -->`` and ``<!-- /course_links:NAME -->`` for each
  block in ``README_BLOCKS`` (the Binder and Colab badges; the Colab recipe's clone line);
* ``source/<a>/<a>.ipynb`` and ``notebooks/<n>.ipynb``: one markdown line in the first cell, right under its
  title: a Colab badge and the one ``%pip install`` Colab needs. An assignment's line opens the student copy,
  ``release/<a>/<a>.ipynb`` (never the source, which holds the solutions); ``python -m autograder release``
  carries the line into release/, which ``--check`` also reads (it does not write release/).

Standard library only (tomllib): it runs before any ``make setup``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLACEHOLDER_OWNER = "YOUR-ORG"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
START_HERE = "notebooks/00_start_here.ipynb"
# The notebooks' line is a plain link, no badge image: the grader's sanitizer shows markdown that loads
# a remote image as text (an image is a beacon), so a badge would turn each notebook's first cell into
# text in the student's feedback. One such line per notebook; the older badge form is recognised too
# (and replaced).
NOTEBOOK_LINE = re.compile(r"^(\[!\[Open In Colab\]\(" + re.escape(COLAB_BADGE) + r"\)\]|\*\*\[Open in Colab\]\().*$")


@dataclass(frozen=True)
class Setting:
    owner: str
    name: str
    branch: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def placeholder(self) -> bool:
        return self.owner == PLACEHOLDER_OWNER

    def colab(self, path: str) -> str:
        return f"https://colab.research.google.com/github/{self.slug}/blob/{self.branch}/{path}"

    def binder(self, path: str) -> str:
        return f"https://mybinder.org/v2/gh/{self.slug}/{self.branch}?urlpath=lab/tree/{path}"

    def clone(self) -> str:
        return f"https://github.com/{self.slug}"

    def raw(self, path: str) -> str:
        return f"https://raw.githubusercontent.com/{self.slug}/{self.branch}/{path}"

    def pip_install(self) -> str:
        """The one command a Colab notebook needs: the course package from GitHub, at the tested pins."""
        return f"%pip install -q -c {self.raw('constraints.txt')} git+{self.clone()}@{self.branch}"


def read_setting(pyproject: Path) -> Setting:
    data = tomllib.loads(pyproject.read_text())
    try:
        conf = data["tool"]["inplace-course"]
        url, branch = conf["repository"], conf["branch"]
    except KeyError as e:
        raise SystemExit(f"{pyproject}: [tool.inplace-course] needs repository and branch (missing {e})")
    m = re.fullmatch(r"https://github\.com/([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/([A-Za-z0-9._-]+?)(?:\.git)?/?",
                     url)
    if not m:
        raise SystemExit(f"{pyproject}: [tool.inplace-course] repository must be https://github.com/OWNER/NAME, "
                         f"not {url!r} (Binder's and Colab's GitHub links need an owner and a name)")
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", branch) or ".." in branch:
        raise SystemExit(f"{pyproject}: [tool.inplace-course] branch {branch!r} is not a plain branch name")
    return Setting(m.group(1), m.group(2), branch)


# ---- README ---------------------------------------------------------------------------------------------

SETTING_NOTE = ("set `repository` under `[tool.inplace-course]` in pyproject.toml to the course's GitHub "
                "repository, then run `python scripts/course_links.py` and `python -m autograder release`")


def readme_blocks(s: Setting) -> dict[str, str]:
    """The README's generated blocks, by name: what goes between its two markers. While the repository is
    the placeholder, no link to it (each would be broken): the blocks name the setting instead."""
    if s.placeholder:
        return {
            "badges": f"*Binder and Colab links appear here once the course is published: {SETTING_NOTE}.*",
            "colab-recipe": "\n".join([
                "```bash",
                f"!git clone -b {s.branch} https://github.com/OWNER/NAME course   # OWNER/NAME: the course's "
                "repository (pyproject.toml, [tool.inplace-course])",
                "%cd course",
                "!pip install -q -c constraints.txt -e .",
                "!python -m autograder selfgrade release/00_orientation/00_orientation.ipynb",
                "```",
            ]),
        }
    return {
        "badges": "\n".join([
            f"[![Binder]({BINDER_BADGE})]({s.binder(START_HERE)})",
            f"[![Open In Colab]({COLAB_BADGE})]({s.colab(START_HERE)})",
        ]),
        "colab-recipe": "\n".join([
            "```bash",
            f"!git clone -b {s.branch} {s.clone()} course",
            "%cd course",
            "!pip install -q -c constraints.txt -e .",
            "!python -m autograder selfgrade release/00_orientation/00_orientation.ipynb",
            "```",
        ]),
    }


def render_readme(text: str, s: Setting, where: str = "README.md") -> str:
    for name, body in readme_blocks(s).items():
        block = re.compile(rf"(<!-- course_links:{re.escape(name)} -->\n)(.*?)(<!-- /course_links:{re.escape(name)} -->)",
                           re.S)
        found = block.findall(text)
        if len(found) != 1:
            raise SystemExit(f"{where}: needs exactly one '<!-- course_links:{name} -->' ... "
                             f"'<!-- /course_links:{name} -->' block, found {len(found)}")
        text = block.sub(lambda m: m.group(1) + body + "\n" + m.group(3), text)
    return text


# ---- notebooks -----------------------------------------------------------------------------------------

def student_path(root: Path, notebook: Path) -> str:
    """The path, in the repository, of the notebook a student opens for this one."""
    rel = notebook.resolve().relative_to(root.resolve()).as_posix()
    parts = rel.split("/")
    if len(parts) == 3 and parts[0] in ("source", "release") and parts[2] == parts[1] + ".ipynb":
        return f"release/{parts[1]}/{parts[2]}"
    return rel


def notebook_line(s: Setting, path: str) -> str:
    """The markdown line (no newline). Its words count towards the course's word budget: keep it short.
    ``""`` while the repository is the placeholder: a student (and every feedback page) would get a broken link."""
    if s.placeholder:
        return ""
    return f"**[Open in Colab]({s.colab(path)})**; there, first run `{s.pip_install()}`."


def render_notebook(text: str, line: str, where: str) -> str:
    """The notebook with ``line`` right under the first cell's title (replacing an older one)."""
    nb = json.loads(text)
    cells = nb.get("cells") or []
    if not cells or cells[0].get("cell_type") != "markdown":
        raise SystemExit(f"{where}: the first cell must be markdown (the title) to carry the Colab line")
    source = cells[0]["source"]
    lines = ("".join(source) if isinstance(source, list) else source).split("\n")
    old = [i for i, l in enumerate(lines) if NOTEBOOK_LINE.match(l)]
    if len(old) > 1:
        raise SystemExit(f"{where}: {len(old)} Colab lines in the first cell, expected one")
    if old and not line:                      # no line wanted (the placeholder): the old one goes, and a blank
        i = old[0]
        del lines[i:i + (2 if i + 1 < len(lines) and lines[i + 1] == "" else 1)]
        if lines and lines[-1] == "" and len(lines) > 1 and lines[-2] == "":
            lines.pop()
    elif old:
        lines[old[0]] = line
    elif not line:
        pass
    elif lines[0].startswith("#"):            # under the title, a blank line either side
        lines[1:1] = ["", line] + ([""] if len(lines) > 1 and lines[1] != "" else [])
    else:
        lines[0:0] = [line, ""]
    cells[0]["source"] = "\n".join(lines).splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def notebooks(root: Path, kinds=("source", "notebooks")) -> list[Path]:
    found = []
    if "source" in kinds:
        found += sorted((root / "source").glob("*/*.ipynb"))
    if "release" in kinds:
        found += sorted((root / "release").glob("*/*.ipynb"))
    if "notebooks" in kinds:
        found += sorted((root / "notebooks").glob("*.ipynb"))
    return [p for p in found if ".ipynb_checkpoints" not in p.parts]


def plan(root: Path) -> list[tuple[Path, str, str]]:
    """(file, current text, text it should have) for README.md, source/ and notebooks/."""
    s = read_setting(root / "pyproject.toml")
    out = []
    readme = root / "README.md"
    text = readme.read_text()
    out.append((readme, text, render_readme(text, s, str(readme))))
    for nb in notebooks(root):
        text = nb.read_text()
        out.append((nb, text, render_notebook(text, notebook_line(s, student_path(root, nb)), str(nb))))
    return out


def stale_release(root: Path) -> list[str]:
    """release/ notebooks whose first cell does not carry the line generated for it."""
    s = read_setting(root / "pyproject.toml")
    stale = []
    for nb in notebooks(root, ("release",)):
        want = notebook_line(s, student_path(root, nb))
        lines = "".join(json.loads(nb.read_text())["cells"][0]["source"]).split("\n")
        if (want not in lines) if want else any(NOTEBOOK_LINE.match(l) for l in lines):
            stale.append(nb.relative_to(root).as_posix())
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when anything is out of date")
    parser.add_argument("--root", type=Path, default=REPO, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    root = args.root
    s = read_setting(root / "pyproject.toml")
    if s.placeholder:
        print(f"note: [tool.inplace-course] repository is still the placeholder {s.clone()}: no Binder or Colab "
              f"link is written; {SETTING_NOTE}", file=sys.stderr)
    todo = [(p, new) for p, old, new in plan(root) if old != new]
    if args.check:
        stale = [p.relative_to(root).as_posix() for p, _ in todo]
        release = stale_release(root)
        for p in stale:
            print(f"out of date: {p} (run python scripts/course_links.py)", file=sys.stderr)
        for p in release:
            print(f"out of date: {p} (run python -m autograder release after scripts/course_links.py)",
                  file=sys.stderr)
        return 1 if stale or release else 0
    for p, new in todo:
        p.write_text(new)
        print(f"updated {p.relative_to(root).as_posix()}")
    if not todo:
        print(f"links up to date ({s.slug}@{s.branch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
