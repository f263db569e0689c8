"""What a loaded LLM does and where it runs, in plain words (the page's "About this app" panel)."""

from __future__ import annotations


def llm_note(spec: str) -> str:
    """What the LLM `spec` does and where it runs, as every visitor may read it (no address, no secret)."""
    from interactive_ir.backends.llms import ROUTER_URL, is_tiny_llm
    from interactive_ir.backends.redact import public_spec

    name, _, args = spec.partition(":")
    if name == "hf-router":
        model = public_spec(args.partition("@")[0]) or "the default model"
        return (f"Questions and query rewriting: {model}, asked through the Hugging Face inference router "
                f"({ROUTER_URL}) with this Space's HF_TOKEN. Change it with IIR_HF_MODEL or IIR_LLM.")
    if name == "openai":
        return f"Questions and query rewriting: {public_spec(args.partition('@')[0])} on an OpenAI-compatible server."
    if is_tiny_llm(spec):
        return ("Questions: a very small offline model (SmolLM2-135M), because nothing better can run here "
                "(no HF_TOKEN, no OpenAI key, no GPU). Its written questions are often odd, so the app asks "
                "picture questions (click the closest image) by default. For better questions set HF_TOKEN or "
                "IIR_LLM.")
    if name == "transformers":
        return f"Questions and query rewriting: {public_spec(args)} running on this machine."
    if name == "fake":
        return f"LLM {public_spec(spec)}: scripted replies for tests (not a real model)."
    return f"LLM {public_spec(spec)}: asks the questions and rewrites queries."
