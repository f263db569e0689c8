"""A fake of Hugging Face's `spaces` package (ZeroGPU), on sys.path only in tests.

Like the real one it refuses to start once CUDA may have been touched: the real check is
torch.cuda.is_initialized(), which never turns true on a CPU machine, so the fake refuses when torch was
imported before it at all (stricter; set `sys._fake_spaces_lenient = True` to load it in a test process
that already holds torch). `GPU(duration=...)` records each decorated call: its name and the seconds it
asked for (a number, or the duration function applied to the call's arguments), in `calls`. As the real
one runs the call in a forked worker and sends arguments and result through a queue, the fake pickles
both (an unpicklable argument or result fails here as it would there).

`patch_torch(setattr)` does what the real package does to torch at start-up: a model or tensor moved "to
cuda" outside a slot stays on the CPU (here: for good; there: until a slot moves it to the lent GPU), and
each such move is recorded in `moved`. Pass `monkeypatch.setattr` so that a test undoes it.
"""

import functools
import pickle
import sys

if "torch" in sys.modules and not getattr(sys, "_fake_spaces_lenient", False):
    raise RuntimeError("CUDA has been initialized before importing the `spaces` package")

calls = []  # (function name, seconds asked) per decorated call
decorated = []  # names of the functions wrapped
moved = []  # (what, device asked) per move "to cuda" that patch_torch kept on the CPU


def GPU(fn=None, duration=60):  # noqa: N802 - the real name
    def wrap(f):
        decorated.append(f.__name__)

        @functools.wraps(f)
        def call(*args, **kwargs):
            seconds = duration(*args, **kwargs) if callable(duration) else duration
            calls.append((f.__name__, seconds))
            args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))  # into the worker process
            return pickle.loads(pickle.dumps(f(*args, **kwargs)))  # and back

        return call

    return wrap(fn) if fn is not None else wrap


def _cuda(device) -> bool:
    return str(getattr(device, "type", device)).startswith("cuda")


def patch_torch(setattr=setattr):  # noqa: A002 - monkeypatch.setattr's role
    """torch's `Module.to` and `Tensor.to` keep "cuda" moves on the CPU (recorded in `moved`)."""
    import torch

    module_to, tensor_to = torch.nn.Module.to, torch.Tensor.to

    def on_cpu(what, args, kwargs):
        args = list(args)
        if args and _cuda(args[0]) and not isinstance(args[0], torch.Tensor):
            moved.append((what, str(args[0])))
            args[0] = "cpu"
        if _cuda(kwargs.get("device", "")):
            moved.append((what, str(kwargs["device"])))
            kwargs = {**kwargs, "device": "cpu"}
        return args, kwargs

    def mod_to(self, *args, **kwargs):
        args, kwargs = on_cpu(type(self).__name__, args, kwargs)
        return module_to(self, *args, **kwargs)

    def ten_to(self, *args, **kwargs):
        args, kwargs = on_cpu("Tensor", args, kwargs)
        return tensor_to(self, *args, **kwargs)

    setattr(torch.nn.Module, "to", mod_to)
    setattr(torch.Tensor, "to", ten_to)
