"""PlugIR (Lee et al., 2024), the conversation mode's parts, each usable alone:

- `prompts`: every prompt (paper Tables 17-20) in one place;
- `parsers`: junk-proof parsing of questions, filter answers and new captions;
- `reformulate`: context reformulation (CR);
- `rce`: retrieval context extraction (Algorithm 1);
- `questioner`: q_n questions in one LLM call, and the fallback question from captions;
- `filtering`: the filter and the KL choice (Algorithm 2);
- `pipeline`: one question step (RCE -> questioner -> filter -> KL);
- `grounded`: questions without an LLM (which cluster is closest, or yes/no on a splitting word) and how
  a click reshapes the query;
- `config`: `PlugIRConfig`.
The engine side is `interactive_ir.modes.conversation.mode.Conversation` (rounds) and `interactive_ir.modes.conversation.asking.Asker`
(the question step).
"""
