# about: empty: downloaded the assignment and handed it in untouched
# expect: auto=0
