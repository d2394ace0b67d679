# about: decode and head correct; the attack takes steps of eps and never projects:
# about: |delta| grows past the budget and the image leaves [0, 1]
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
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
    delta = torch.zeros_like(image)
    for _ in tqdm(range(steps)):
        delta.requires_grad_(True)
        best = model(image + delta)[0][..., 4].max()
        (g,) = torch.autograd.grad(best, delta)
        delta = delta.detach() - eps * g.sign()   # a step of eps each time, never projected back
    return delta
