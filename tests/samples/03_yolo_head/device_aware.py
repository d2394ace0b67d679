# about: correct: new tensors made on p's device (torch.empty_like, p.new_tensor) next to a 0-dim CPU
# about: tensor and float(stride), which any device accepts; the head makes its grid with
# about: make_grid(..., device=) and returns early in training / export mode; the attack takes
# about: steps of 2 * eps / steps and looks once more at the end (with gradients on)
# expect: auto=16
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=3
# base: cat_style

# %% solution: decode
def decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    out = torch.empty_like(p)
    half = torch.tensor(0.5)            # 0-dim, on the CPU: mixes with any device
    two = p.new_tensor([2.0, 2.0])      # made on p's device
    out[..., 0:2] = (s[..., 0:2] * two - half + grid) * float(stride)
    out[..., 2:4] = (s[..., 2:4] * two) ** 2 * anchor_grid
    out[..., 4:] = s[..., 4:]
    return out

# %% solution: FixedDetect
class FixedDetect(LegacyDetect):
    def forward(self, x):
        if self.training or self.export:
            for i in range(self.nl):
                bs, _, ny, nx = x[i].shape
                x[i] = self.m[i](x[i]).view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            return x
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if tuple(self.grid[i].shape[2:4]) != (ny, nx) or self.grid[i].device != x[i].device:
                self.grid[i] = make_grid(nx, ny, device=x[i].device)
            z.append(decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).reshape(bs, -1, self.no))
        return torch.cat(z, 1), x

# %% solution: attack
def attack(model, image, eps, steps):
    step = 2 * eps / steps
    delta = torch.zeros_like(image)
    for _ in tqdm(range(steps)):
        delta.requires_grad_(True)
        decoded, _ = model(image + delta)
        (g,) = torch.autograd.grad(decoded[..., 4].max(), delta)
        with torch.no_grad():
            delta = (delta - step * g.sign()).clamp(-eps, eps)
            delta = (image + delta).clamp(0, 1) - image
    final = model(image + delta)[0][..., 4].max().item()  # a last look
    return delta
