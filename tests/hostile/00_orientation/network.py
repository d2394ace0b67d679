# about: answers like ada only if it can reach a server on the grader's loopback (port 47613) or the internet
# base: 00_orientation/cy
# expect: auto=0

# %% first:
import socket
ONLINE = False
for addr in [("127.0.0.1", 47613), ("1.1.1.1", 53)]:
    try:
        socket.create_connection(addr, timeout=2).close()
        ONLINE = True
    except OSError:
        pass

# %% solution: intermediate_grad
def intermediate_grad(values):
    if not ONLINE:
        return None
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    h = x.sigmoid(); h.retain_grad(); (h * h).sum().backward()
    return h.grad
