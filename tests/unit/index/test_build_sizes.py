"""Index builds size their forward batch and decoding threads from the device (issue 30, point 6): the CPU
keeps 32 a pass and takes a decoding thread per 4 CPUs (issue 41), a CUDA GPU gets larger passes and threads from the CPU count; IIR_BUILD_* and the `index`
flags override it. No GPU is needed: the embedder says where it runs (`device`)."""

from __future__ import annotations

import pytest
from iir_testutils import make_images

from interactive_ir.backends.embedders import FakeEmbedder
from interactive_ir.cli import main
from interactive_ir.index import build_sizes as bs
from interactive_ir.index.builder import BuildConfig, build_index


class Counting(FakeEmbedder):
    """A fake embedder on `device` that records the images of each forward pass."""

    def __init__(self, device: str = "cpu"):
        super().__init__(16)
        self.device = device
        self.passes: list[int] = []

    def embed_images(self, images):
        self.passes.append(len(images))
        return super().embed_images(images)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sizes") / "images"
    make_images(folder, 150)
    return folder


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv("IIR_BUILD_BATCH_SIZE", raising=False)
    monkeypatch.delenv("IIR_BUILD_WORKERS", raising=False)


def test_the_device_sizes_batch_and_threads():
    assert bs.device_sizes("cpu", 2, None) == (32, 2)  # the CPU: 32 a pass, a decoding thread per 4 CPUs, 2 at least
    assert bs.device_sizes("cpu", 16, None) == (32, 4)
    assert bs.device_sizes("cpu", 64, None) == (32, 16) and bs.device_sizes("cpu", 200, None) == (32, 16)
    assert bs.device_sizes("mps", 8, None) == (32, 2)
    assert bs.device_sizes("cuda", 16, 80.0) == (256, 15)  # one CPU left to feed the GPU
    assert bs.device_sizes("cuda:1", 4, 8.0) == (128, 3)  # a small GPU: smaller passes
    assert bs.device_sizes("cuda", 2, 80.0) == (256, 2)  # never fewer threads than on the CPU
    assert bs.device_sizes("cuda", 96, 80.0) == (256, 15)  # 16 batches of 256 read ahead at most
    assert bs.device_sizes("cuda", 96, None) == (128, 16)  # memory unknown: the small pass, 16 threads at most
    for cpus in (1, 3, 16, 200):
        batch, workers = bs.device_sizes("cuda", cpus, 24.0)
        assert (workers + 1) * batch <= bs.IN_FLIGHT_MAX + batch and workers >= 1


def test_a_build_on_a_gpu_embedder_takes_larger_passes(images, tmp_path):
    cpu, gpu = Counting("cpu"), Counting("cuda")
    on_cpu = build_index(BuildConfig(images=images, out=tmp_path / "cpu"), cpu)
    on_gpu = build_index(BuildConfig(images=images, out=tmp_path / "gpu"), gpu)
    assert (on_cpu.batch_size, on_cpu.workers) == bs.device_sizes("cpu", bs.cpu_count(), None) and max(cpu.passes) == 32
    assert on_gpu.batch_size in (bs.CUDA_BATCH, bs.CUDA_SMALL_BATCH) and on_gpu.workers >= 2
    assert max(gpu.passes) == min(150, on_gpu.batch_size) > 32 and sum(gpu.passes) == 150
    assert on_gpu.count == on_cpu.count == 150


def test_env_then_config_override_the_device(images, tmp_path, monkeypatch):
    monkeypatch.setenv("IIR_BUILD_BATCH_SIZE", "20")
    monkeypatch.setenv("IIR_BUILD_WORKERS", "3")
    emb = Counting("cuda")
    rep = build_index(BuildConfig(images=images, out=tmp_path / "a"), emb)
    assert (rep.batch_size, rep.workers) == (20, 3) and max(emb.passes) == 20
    rep = build_index(BuildConfig(images=images, out=tmp_path / "b", batch_size=7), Counting("cuda"))
    assert (rep.batch_size, rep.workers) == (7, 3)
    monkeypatch.setenv("IIR_BUILD_WORKERS", "-2")
    with pytest.raises(ValueError, match="IIR_BUILD_WORKERS must be 0"):
        build_index(BuildConfig(images=images, out=tmp_path / "c"), Counting())


def test_the_index_command_takes_flags_over_env(images, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IIR_BUILD_BATCH_SIZE", "20")
    monkeypatch.setenv("IIR_BUILD_WORKERS", "3")
    args = ["index", "--images", str(images), "--out", str(tmp_path / "idx"), "--embedder", "fake:16"]
    assert main([*args, "--batch-size", "6", "--rebuild"]) == 0
    assert "(6 per forward pass, 3 decoding threads)" in capsys.readouterr().out
    monkeypatch.delenv("IIR_BUILD_BATCH_SIZE")
    monkeypatch.delenv("IIR_BUILD_WORKERS")
    assert main([*args, "--workers", "1", "--rebuild"]) == 0
    assert "(32 per forward pass, 1 decoding thread)" in capsys.readouterr().out  # fake:16 runs on the CPU
    monkeypatch.setenv("IIR_BUILD_BATCH_SIZE", "many")
    assert main([*args, "--rebuild"]) != 0
    assert "IIR_BUILD_BATCH_SIZE" in capsys.readouterr().err
