# about: returns objects whose __eq__ is always true (a list subclass, a str subclass, a dict subclass)
# base: 00_orientation/cy
# expect: auto=0

# %% solution: grad_fn_chain
class Anything(list):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
def grad_fn_chain(t):
    return Anything()

# %% solution: environment_report
class S(str):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = str.__hash__
class D(dict):
    def __eq__(self, other): return True
def environment_report():
    return D(torch=S("?"), device=S("?"), cuda=S("?"))
