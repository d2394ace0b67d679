# about: IPython's exit() in the middle of the notebook; graded as far as it ran, and the rest still runs
# base: 00_orientation/ada
# expect: auto=8
# flag: ended the python process

# %% after: environment_report_tests
exit()
