# about: decode never returns (an endless loop); the attack is right. The loop costs once (the confirmation
# about: stops calling decode after its first cell limit, the kernel skips what hung): under 2 minutes in all
# expect: auto=3
# expect: decode_matches_legacy_tests=0 decode_contract_tests=0 decode_gradients_tests=0 decode_no_inplace_on_saved_tests=0 fixed_detect_tests=0 attack_tests=3

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    while True:  # forgot the exit condition
        pass
    s = torch.sigmoid(p)
    centre = ((2 * s[..., :2] - 0.5 + grid) * stride).type(p.dtype)
    size = (4 * s[..., 2:4] ** 2 * anchor_grid).type(p.dtype)
    return torch.cat([centre, size, s[..., 4:]], dim=p.dim() - 1)

# %% solution: FixedDetect
class FixedDetect(LegacyDetect):
    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not (self.training or self.export):
                if self.grid[i].shape[2:4] != x[i].shape[2:4] or self.grid[i].device != x[i].device:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                z.append(decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).view(bs, -1, self.no))
        return x if (self.training or self.export) else (torch.cat(z, 1), x)

# %% answer: silent_fixes_answer
no_grad records nothing, so nothing is saved and there is nothing to check; detach leaves the graph.
Both remove the error by removing the gradient: the attack gets no gradient for the image. .data
changes the numbers behind autograd's back: no version bump, no error, but backward then uses the
decoded values instead of the sigmoid output, so the box gradients are wrong and nobody notices.

# %% solution: attack
def attack(model, image, eps, steps):
    delta = torch.zeros_like(image, requires_grad=True)
    alpha = 2 * eps / steps
    for _ in tqdm(range(steps), desc="attack"):
        objectness = model(image + delta)[0][..., 4]
        objectness.max().backward()
        with torch.no_grad():
            delta -= alpha * delta.grad.sign()
            delta.clamp_(-eps, eps)
            delta.copy_((image + delta).clamp(0, 1) - image)
        delta.grad = None
    return delta.detach()
