# about: names a kernel that does not exist (and a language that is not Python)
# base: 00_orientation/ada
# expect: auto=8
# flag: kernel was changed

# %% notebook-metadata:
{"kernelspec": {"name": "no-such-kernel-anywhere", "display_name": "Nope", "language": "cobol"}}
