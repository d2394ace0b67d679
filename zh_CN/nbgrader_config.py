"""nbgrader configuration of the Chinese edition (简体中文版), the course folder ``zh_CN/``.

The course's own configuration (``../nbgrader_config.py``: limits, sandbox, exchange, sanitizing) with only
what a Chinese notebook must say differently: the stubs nbgrader writes where a solution was. Run nbgrader
from this folder (``cd zh_CN && nbgrader ...``) or through ``python -m autograder ... --lang zh_CN``.
"""
import importlib.util
from pathlib import Path

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

_repo = Path(__file__).resolve().parents[1]
if not (_repo / "instructor" / "edition.py").is_file():
    # a copy of this file in a grading folder outside the repository: the repository's, found through its code
    _spec = importlib.util.find_spec("instructor")
    if _spec is not None and _spec.origin:
        _repo = Path(_spec.origin).resolve().parents[1]
_english = _repo / "nbgrader_config.py"
load_subconfig(str(_english))  # noqa: F821 - provided by traitlets
if not _english.is_file():
    raise FileNotFoundError(f"{__file__}: the course's nbgrader_config.py is not at {_english}")

# The same stub as the English edition's (it fails loudly), in Chinese.
c.ClearSolutions.code_stub = {
    "python": "# 在这里写你的代码\n"
              "raise NotImplementedError(\"把这一行换成你的答案，运行这个单元格，再运行下面的测试。\")",
}
c.ClearSolutions.text_stub = "在这里写你的答案"
