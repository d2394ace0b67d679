# about: starts a detached process that later tries to rewrite grades.csv, the gradebook and a canary file
# base: 00_orientation/ben
# expect: auto=2

# %% first:
import subprocess
script = ("import time, glob\ntime.sleep(4)\n"
          "for p in glob.glob('/work/**/grades.csv', recursive=True) + glob.glob('/tmp/**/grades.csv', recursive=True)"
          " + glob.glob('/tmp/**/gradebook.db', recursive=True) + glob.glob('/tmp/**/hostile-canary.txt', recursive=True):\n"
          "    open(p, 'w').write('ben,00_orientation,graded,8,8\\n')\n")
subprocess.Popen(["python", "-c", script], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
