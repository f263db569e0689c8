"""The `blip:` embedder on tiny random BLIP models: a retrieval checkpoint loads and embeds; a checkpoint
whose retrieval weights do not all load (a captioning model) is refused, naming what is missing."""

from __future__ import annotations

import numpy as np
import pytest

WORDS = ["a", "dog", "cat", "red", "blue", "on", "the", "grass"]


@pytest.fixture(scope="module")
def tiny_blip(tmp_path_factory):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("blip")
    (root / "vocab").mkdir()
    (root / "vocab" / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tok = transformers.BertTokenizerFast.from_pretrained(str(root / "vocab"))
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    cfg = transformers.BlipConfig(
        text_config=dict(small, vocab_size=len(tok), encoder_hidden_size=32, max_position_embeddings=64,
                         bos_token_id=2, eos_token_id=3, sep_token_id=3, pad_token_id=0),
        vision_config=dict(small, image_size=32, patch_size=8), projection_dim=16, image_text_hidden_size=16)
    proc = transformers.BlipProcessor(transformers.BlipImageProcessor(size={"height": 32, "width": 32}), tok)
    dirs = {}
    for name, cls in (("itm", transformers.BlipForImageTextRetrieval),
                      ("caption", transformers.BlipForConditionalGeneration)):
        dirs[name] = root / name
        cls(cfg).save_pretrained(dirs[name])
        proc.save_pretrained(dirs[name])
    return dirs


def test_blip_retrieval_checkpoint_embeds_texts_and_images(tiny_blip):
    from PIL import Image

    from interactive_ir.backends import make_embedder

    emb = make_embedder(f"blip:{tiny_blip['itm']}")
    t = emb.embed_texts(["a red dog", "a blue cat on the grass", "a red dog"])
    i = emb.embed_images([Image.new("RGB", (40, 30), (200, 10, 10)), Image.new("RGB", (20, 20), (0, 0, 200))])
    assert t.shape == (3, emb.dim) and i.shape == (2, emb.dim) and emb.dim == 16
    assert np.allclose(np.linalg.norm(t, axis=1), 1, atol=1e-5) and np.allclose(t[0], t[2], atol=1e-5)
    assert not np.allclose(t[0], t[1])


def test_a_checkpoint_without_the_retrieval_weights_is_refused_naming_them(tiny_blip):
    from interactive_ir.backends import make_embedder
    from interactive_ir.errors import BackendUnavailable

    with pytest.raises(BackendUnavailable) as e:
        make_embedder(f"blip:{tiny_blip['caption']}")
    msg = str(e.value)
    assert "not a complete BLIP image-text retrieval checkpoint" in msg and "weights did not load" in msg
    assert "text_proj" in msg or "vision_proj" in msg or "text_encoder" in msg
    assert "\n" not in msg


def test_blip_spec_needs_a_model():
    from interactive_ir.backends import make_embedder
    from interactive_ir.errors import BadInputError

    with pytest.raises(BadInputError, match="blip:REPO_OR_DIR"):
        make_embedder("blip:")
