"""A fake of Hugging Face's `spaces` package (ZeroGPU), on sys.path only in tests.

Like the real one it refuses to start once CUDA may have been touched: the real check is
torch.cuda.is_initialized(), which never turns true on a CPU machine, so the fake refuses when torch was
imported before it at all (stricter; set `sys._fake_spaces_lenient = True` to load it in a test process
that already holds torch). `GPU(duration=...)` records each decorated call: its name and the seconds it
asked for (a number, or the duration function applied to the call's arguments), in `calls`.
"""

import functools
import sys

if "torch" in sys.modules and not getattr(sys, "_fake_spaces_lenient", False):
    raise RuntimeError("CUDA has been initialized before importing the `spaces` package")

calls = []  # (function name, seconds asked) per decorated call
decorated = []  # names of the functions wrapped


def GPU(fn=None, duration=60):  # noqa: N802 - the real name
    def wrap(f):
        decorated.append(f.__name__)

        @functools.wraps(f)
        def call(*args, **kwargs):
            seconds = duration(*args, **kwargs) if callable(duration) else duration
            calls.append((f.__name__, seconds))
            return f(*args, **kwargs)

        return call

    return wrap(fn) if fn is not None else wrap
