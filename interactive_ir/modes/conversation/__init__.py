"""The conversation mode: a description, questions (PlugIR's LLM questioner or grounded picture
questions without an LLM) and their answers."""
