# about: grabs memory until something stops it (12 GiB asked), after answering like ada
# base: 00_orientation/ada
# expect: auto=8

# %% after: intermediate_grad
hog = []
for _ in range(48):
    hog.append(bytearray(256 << 20))
    hog[-1][::4096] = b"x" * len(hog[-1][::4096])
