# about: reads root's files (password hashes, ssh host keys, pid 1's environment) and prints them into its feedback
# base: 00_orientation/ada
# expect: auto=8

# %% after: intermediate_grad
import glob
for secret in ["/etc/shadow", "/etc/gshadow", "/proc/1/environ", "/root/.bash_history", "/root/.ssh/id_rsa",
               *glob.glob("/etc/ssh/ssh_host_*_key")]:
    try:
        with open(secret, "rb") as f:
            print("LEAKED", secret, f.read(60))
    except OSError as err:
        print("closed:", secret, type(err).__name__)
