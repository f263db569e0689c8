"""Fakes of GPU software that enforce the real limits, for CI on the CPU: a faiss GPU module
(`faiss_gpu`), a CUDA device with a memory limit (`cuda`) and ZeroGPU's `spaces` (`zerogpu/spaces`)."""
