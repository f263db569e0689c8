"""What a loaded LLM does and where it runs, in plain words (the page's "About this app" panel)."""

from __future__ import annotations


def llm_note(spec: str) -> str:
    """What the LLM `spec` does and where it runs."""
    from interactive_ir.backends.llms import ROUTER_URL, is_tiny_llm

    name, _, args = spec.partition(":")
    if name == "hf-router":
        model = args.partition("@")[0] or "the default model"
        return (f"Questions and query rewriting: {model}, asked through the Hugging Face inference router "
                f"({ROUTER_URL}) with this Space's HF_TOKEN. Change it with IIR_HF_MODEL or IIR_LLM.")
    if name == "openai":
        return f"Questions and query rewriting: {args.partition('@')[0]} on an OpenAI-compatible server ({spec})."
    if is_tiny_llm(spec):
        return ("Questions: a very small offline model (SmolLM2-135M), because nothing better can run here "
                "(no HF_TOKEN, no OpenAI key, no GPU). Its written questions are often odd, so the app asks "
                "picture questions (click the closest image) by default. For better questions set HF_TOKEN or "
                "IIR_LLM.")
    if name == "transformers":
        return f"Questions and query rewriting: {args} running on this machine ({spec})."
    if name == "fake":
        return f"LLM {spec}: scripted replies for tests (not a real model)."
    return f"LLM {spec}: asks the questions and rewrites queries."
