"""The `hf:REPO_OR_DIR` embedder (transformers CLIP / SigLIP) on tiny randomly initialised models saved to a
temporary folder, through the project's own factory and CLI.

The weights are random, so the vectors mean nothing: the tests check shapes, dtype, unit norms, determinism,
the dimension, and that an image query finds itself in an index. Importing torch and transformers alone
takes seconds, so those tests are `integration`; the output-unwrapping helper and the missing-folder error
are tested without them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image, ImageDraw

from interactive_ir.backends import make_embedder
from interactive_ir.backends.embedders import HFClipEmbedder
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError

WORDS = "a an the of red green blue yellow square circle photo dog cat on".split()
PROJECTION_DIM = 24  # CLIP; the SigLIP text head projects to its text hidden size


# --- without torch / transformers -------------------------------------------------------------------


class _Output(dict):
    """Stands in for transformers' ModelOutput (a dict whose keys are also attributes)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def test_features_accepts_tensors_and_model_outputs():
    t = np.ones((2, 3), np.float32)
    assert HFClipEmbedder._features(t) is t  # transformers 4: a tensor
    assert HFClipEmbedder._features(_Output(last_hidden_state=0, pooler_output=t)) is t  # 5: BaseModelOutputWithPooling
    assert HFClipEmbedder._features(_Output(text_embeds=t, pooler_output=0), "text") is t
    assert HFClipEmbedder._features(_Output(image_embeds=t, pooler_output=0), "image") is t

    class Plain:  # an output object that is not a dict
        pooler_output = t

    assert HFClipEmbedder._features(Plain()) is t
    with pytest.raises(BackendError, match="unexpected image features"):
        HFClipEmbedder._features(_Output(last_hidden_state=t), "image")


@pytest.fixture
def offline(monkeypatch):
    """No hub probing or downloads; restores HF_HUB_OFFLINE (the registry sets it when the hub is unreachable)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.mark.parametrize("where", ["{tmp}/no_such_model", "./no/such/model", "~/no_such_model_dir_iir"])
def test_missing_folder_is_a_clear_error(tmp_path, offline, where):
    with pytest.raises(BackendUnavailable, match="model folder .* does not exist.*local folder"):
        make_embedder("hf:" + where.format(tmp=tmp_path))


def test_empty_spec_is_bad_input():
    with pytest.raises(BadInputError, match="hf:REPO_OR_DIR"):
        make_embedder("hf:")


def test_missing_folder_check_imports_neither_torch_nor_transformers(tmp_path):
    code = ("import sys\nfrom interactive_ir.backends.embedders import HFClipEmbedder\n"
            f"try:\n    HFClipEmbedder({str(tmp_path / 'nope')!r}, spec='hf:x')\nexcept Exception as e:\n"
            "    print(type(e).__name__)\n"
            "print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["BackendUnavailable", "[]"], out.stderr


# --- tiny real models -------------------------------------------------------------------------------


def _clip_tokenizer(root):
    """A byte-level BPE CLIP tokenizer: the 256 byte symbols (plain and word-final) plus merges spelling WORDS."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import CLIPTokenizerFast

    folder = root / "clip_vocab"
    folder.mkdir()
    symbols = sorted(ByteLevel.alphabet())
    vocab = {s: i for i, s in enumerate(symbols + [s + "</w>" for s in symbols])}
    merges: list[str] = []
    for word in WORDS:
        if len(word) < 2:
            continue
        left = word[0]
        for i, ch in enumerate(word[1:], start=1):
            right = ch + "</w>" if i == len(word) - 1 else ch
            if f"{left} {right}" not in merges:
                merges.append(f"{left} {right}")
            left += right
            vocab.setdefault(left, len(vocab))
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    return CLIPTokenizerFast.from_pretrained(str(folder), model_max_length=16)  # from a folder: transformers 4 and 5


def _siglip_tokenizer():
    """A word-level fast tokenizer ending texts with </s>, as SigLIP's (sentencepiece is not needed)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2} | {"▁" + w: i + 3 for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   model_max_length=16)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """{"clip": folder, "siglip": folder} of tiny random models with their processors, via save_pretrained."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torch

    root = tmp_path_factory.mktemp("hf_embedders")
    small = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2)
    vision = dict(small, image_size=32, patch_size=8)
    torch.manual_seed(0)

    tok = _clip_tokenizer(root)
    clip = transformers.CLIPConfig(
        text_config=dict(small, vocab_size=len(tok), max_position_embeddings=16, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id),
        vision_config=vision, projection_dim=PROJECTION_DIM)
    transformers.CLIPModel(clip).save_pretrained(root / "clip")
    transformers.CLIPProcessor(
        image_processor=transformers.CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=tok).save_pretrained(root / "clip")

    stok = _siglip_tokenizer()
    siglip = transformers.SiglipConfig(
        text_config=dict(small, vocab_size=len(stok), max_position_embeddings=16, bos_token_id=1, eos_token_id=1,
                         pad_token_id=0),
        vision_config=vision)
    transformers.SiglipModel(siglip).save_pretrained(root / "siglip")
    transformers.SiglipProcessor(image_processor=transformers.SiglipImageProcessor(size={"height": 32, "width": 32}),
                                 tokenizer=stok).save_pretrained(root / "siglip")
    return {"clip": str(root / "clip"), "siglip": str(root / "siglip")}


def _pictures():
    """Distinct pictures: solid colours, a shape, a greyscale and an odd-sized one."""
    red = Image.new("RGB", (40, 30), (220, 30, 30))
    blue = Image.new("RGB", (30, 30), (30, 60, 220))
    shape = Image.new("RGB", (64, 48), (250, 250, 250))
    ImageDraw.Draw(shape).ellipse([8, 8, 40, 40], fill=(20, 160, 40))
    stripes = Image.new("RGB", (50, 50), (0, 0, 0))
    for x in range(0, 50, 10):
        ImageDraw.Draw(stripes).rectangle([x, 0, x + 4, 49], fill=(255, 220, 0))
    grey = Image.new("L", (90, 20), 128)
    return [red, blue, shape, stripes, grey]


def _unit_rows(v, n, dim):
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and v.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_embeds_texts_and_images(tiny_models, offline, kind):
    emb = make_embedder("hf:" + tiny_models[kind], batch_size=3)
    assert isinstance(emb, HFClipEmbedder) and emb.has_vision is True
    assert emb._siglip is (kind == "siglip")
    assert emb.dim == (PROJECTION_DIM if kind == "clip" else 32)  # SigLIP: text projection_size = hidden size

    texts = ["a red square", "a photo of a blue dog", "a red square", "zebra unknown words", "cat " * 40]
    t = emb.embed_texts(texts)  # two batches of 3 and 2; the last text is longer than the context
    _unit_rows(t, len(texts), emb.dim)
    np.testing.assert_allclose(t[0], t[2], atol=1e-6)
    assert not np.allclose(t[0], t[1])
    np.testing.assert_allclose(emb.embed_texts(["a red square"])[0], t[0], atol=1e-5)  # batch-independent
    assert emb.embed_texts([]).shape == (0, emb.dim)

    pictures = _pictures()
    v = emb.embed_images(pictures)
    _unit_rows(v, len(pictures), emb.dim)
    again = emb.embed_images([pictures[2], pictures[2]])
    np.testing.assert_allclose(again[0], again[1], atol=1e-6)
    np.testing.assert_allclose(again[0], v[2], atol=1e-5)
    assert not np.allclose(v[0], v[1])
    assert emb.embed_images([]).shape == (0, emb.dim)

    # the index builder's split path (preprocess on CPU, then encode) matches embed_images
    np.testing.assert_allclose(emb.encode_preprocessed(emb.preprocess_images(pictures[:2])), v[:2], atol=1e-5)


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_cli_index_and_search(tiny_models, offline, tmp_path, capsys, kind):
    from interactive_ir.cli import main

    images = tmp_path / "images"
    images.mkdir()
    names = [f"pic{i}.png" for i in range(len(_pictures()))]
    for name, im in zip(names, _pictures()):
        im.save(images / name)
    out = tmp_path / "idx"
    assert main(["index", "--images", str(images), "--out", str(out), "--embedder", "hf:" + tiny_models[kind],
                 "--batch-size", "2"]) == 0
    assert f"indexed {len(names)} images" in capsys.readouterr().out

    assert main(["search", "--index", str(out), "--text", "a red square", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and {h["id"] for h in hits} <= set(names)
    assert all(-1.01 <= h["score"] <= 1.01 for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    for name in (names[2], names[4]):
        assert main(["search", "--index", str(out), "--image", str(images / name), "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        assert hits[0]["id"] == name
        assert hits[0]["score"] == pytest.approx(1.0, abs=2e-3)  # vectors are stored as float16


@pytest.mark.integration
def test_a_blip_checkpoint_is_refused_with_the_right_spec(tmp_path, offline):
    """Issue 29 item 5: hf: loaded a BLIP retrieval checkpoint with its text tower and projections random
    (transformers printed MISSING and the index built); now it says to use blip:."""
    pytest.importorskip("transformers")
    from transformers import BlipConfig

    cfg = BlipConfig(text_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "intermediate_size": 37, "vocab_size": 99},
                     vision_config={"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                                    "intermediate_size": 37, "image_size": 32, "patch_size": 16},
                     projection_dim=16)
    cfg.architectures = ["BlipForImageTextRetrieval"]
    cfg.save_pretrained(tmp_path / "blip")
    with pytest.raises(BackendUnavailable, match=r"is a BLIP checkpoint \(BlipForImageTextRetrieval\): load it with blip:"):
        make_embedder(f"hf:{tmp_path / 'blip'}")
