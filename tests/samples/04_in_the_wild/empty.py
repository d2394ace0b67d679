# about: empty: handed in the released notebook untouched
# expect: auto=0
