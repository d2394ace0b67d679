# about: a PGD attack with ten times its budget of gradients that switches off every counter it can find and
# about: puts each back before it returns, unseen: the first stage's forward pre-hooks are saved, cleared and
# about: restored, and every dispatch mode is taken off the stack and pushed back. Nothing is counted, and the
# about: old probe accepted a count of 0 (16/16). Now "the image moved, no gradient counted" fails the case
# base: 03_yolo_head/cat_style
# expect: auto=13
# expect: decode_matches_legacy_tests=3 decode_contract_tests=2 decode_gradients_tests=3 decode_no_inplace_on_saved_tests=2 fixed_detect_tests=3 attack_tests=0

# %% solution: attack
def attack(model, image, eps, steps):
    hooks = dict(model.stem._forward_pre_hooks)
    model.stem._forward_pre_hooks.clear()
    modes = []
    while torch._C._len_torch_dispatch_stack():
        modes.append(torch._C._pop_torch_dispatch_stack(None))
    try:
        step = 2.5 * eps / steps
        delta = torch.zeros_like(image)
        for _ in tqdm(range(10 * steps)):
            delta.requires_grad_(True)
            best = model(image + delta)[0][..., 4].amax()
            (g,) = torch.autograd.grad(best, delta)
            delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
            delta = (image + delta).clamp(0, 1) - image
    finally:
        for mode in reversed(modes):
            torch._C._push_on_torch_dispatch_stack(mode)
        model.stem._forward_pre_hooks.update(hooks)
    return delta.detach()
