"""Helpers shared by the model definitions."""
import re

import torch
import torch.nn as nn


def sanitize(name: str) -> str:
    """File-name-safe version of a tensor name (chars outside [A-Za-z0-9._-] -> _).

    The korch CLI uses the same rule for --output-dir files.
    """
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def randomize_norms(model: nn.Module, gen: torch.Generator) -> None:
    """Give BatchNorm/LayerNorm/InstanceNorm affine parameters non-trivial values.

    Default init (gamma=1, beta=0) makes the norms near-identities, which would
    hide bugs in how a backend applies them.
    """
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d, nn.LayerNorm,
                          nn.InstanceNorm2d, nn.GroupNorm)):
            if getattr(m, "weight", None) is not None:
                with torch.no_grad():
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


@torch.no_grad()
def calibrate_batchnorm(model: nn.Module, inputs) -> None:
    """Set BatchNorm running statistics from one forward pass on `inputs`.

    With random weights and the default running stats (mean 0, var 1), deep
    CNNs drift to exploding or vanishing activations. Here every BN layer, in
    order of execution, gets statistics from its own input (a pre-forward
    hook sets them just before the layer runs, in eval mode), so intermediate
    tensors stay O(1).

    The statistics are running_mean = 0 and running_var = the mean square of
    the input over all its channels and positions: BN rescales the whole
    layer to unit RMS (the random gamma and beta then vary the channels).
    Two natural alternatives make random-weight networks chaotic, so that
    float32 rounding grows to O(1) differences between two correct backends
    after a few dozen layers (seen on YOLOv4 and YOLOX):
    - true centred per-channel statistics: each conv+BN+activation
      multiplies perturbations by sqrt(E[act'^2] / Var[act]), ~1.2 for ReLU;
    - per-channel RMS: at 2x2 or 4x4 resolution, channels whose conv sum
      nearly cancels get rescaled up, amplifying the cancellation error.
    Layer-wide RMS scaling amplifies nothing. The model is left in eval mode.
    """
    model.eval()

    def hook(m, args):
        x = args[0]
        ms = max(float((x * x).mean()), 1e-6)
        m.running_mean.zero_()
        m.running_var.fill_(ms)

    handles = [m.register_forward_pre_hook(hook) for m in model.modules()
               if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    try:
        if handles:
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    model.eval()


def static_shape(x: torch.Tensor):
    """x.shape as plain Python ints.

    Under torch.onnx.export tracing, sizes are traced values and every use in
    a reshape becomes a Shape -> Gather -> Unsqueeze -> Concat chain in the
    ONNX graph (constant-foldable, but noise). The models have static shapes,
    so bake the sizes in as constants instead.
    """
    return tuple(int(d) for d in x.shape)
