"""The one assembly of index and models: every entry point (the web app and its page start-up, `chat`,
`search`, composed search, `eval`, the study's dry run) opens its index and loads its models here.

- `specs`: the one "no model" vocabulary (`is_no_model`: "", none, off, no, false, 0), a spec from a flag or
  its environment variable, and the one default embedder (`embedder_spec`);
- `llm_choice`: the one default-LLM rule (`choose_llm`);
- `models`: loading the LLM, VLM and captioner from spec strings (the app leaves a failing one out with a
  note; the commands fail loudly); `model_notes`: what a loaded LLM does, in words for the page;
- `indexes`: an index (a folder or hf://USER/NAME; its vectors in Milvus with IIR_STORE) and its embedder as a
  `Retriever` (the commands);
- `app_index`: the app's index: the given one, else the bundled demo gallery (built on first start);
- `options`: the app's options (`AppConfig`, env `IIR_*`), the study's dry run's too;
- `app`: index, models and engine for the app's options (`assemble`), used by the page start-up and the
  study's dry run;
- `step_llm`: the LLM each of the page's model steps uses (a signed-in visitor's, cancellable).

Layer: above `engine`, `index`, `backends` and `config`; below `ui`, `commands` and `study`. Nothing below
imports it. Importing it loads no model.
"""
