# about: correct answers, and a trap for whoever is graded next: names the next notebook uses taken in /tmp, a daemon keeping them taken, files in /tmp, a key in its uid's keyring (its own score is what its answers earn)
# base: ada
# expect: auto=8

# %% after: environment_report
import ctypes, os, subprocess, sys
for name in ("/tmp/course-plot.png", "/tmp/answer.pt"):
    os.makedirs(name, exist_ok=True)
with open("/tmp/filler.bin", "wb") as f:
    f.write(b"\0" * (1 << 20))
_keep_taken = ("import os, time\n"
               "end = time.monotonic() + 300\n"
               "while time.monotonic() < end:\n"
               "    for n in ('/tmp/course-plot.png', '/tmp/answer.pt'):\n"
               "        try: os.makedirs(n, exist_ok=True)\n"
               "        except OSError: pass\n"
               "    time.sleep(0.01)\n")
subprocess.Popen([sys.executable, "-c", _keep_taken], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall({"x86_64": 248, "aarch64": 217}.get(os.uname().machine, -1), b"user", b"course-trap", b"x", 1,
                  ctypes.c_long(-4))
except Exception:
    pass
