# about: correct: pieces joined with torch.cat, written differently from the model solution;
# about: the attack uses .backward() and in-place updates of delta under no_grad
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# visible: pass=decode_matches_legacy_tests,decode_contract_tests,decode_gradients_tests,decode_no_inplace_on_saved_tests,fixed_detect_tests,attack_tests

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

# %% answer: export_or_allow_mutation_answer
The export decode means I copy the head's decode into my own code and must keep it in step with the
library, but then it is ordinary autograd: no slowdown and backward can run wherever I like. The context
needs no code but copies every saved tensor that gets overwritten, makes each op inside a few times
slower and backward has to run inside it. I'd use the export decode in the attack loop and the context
once, to check my decode's gradient.

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
