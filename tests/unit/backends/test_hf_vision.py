"""hf: captioners and VQA models loaded with transformers' Auto classes (transformers 5 has no image-to-text
or visual-question-answering pipeline), on tiny randomly initialised models saved to a temporary folder.

The weights are random, so captions and answers mean nothing: the tests check types, counts, label sets
and that nothing raises. Those tests are `integration` (importing torch and transformers takes seconds);
the captioner seam (an injected `pipeline`) is tested without transformers.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from PIL import Image

from interactive_ir.backends import make_captioner, make_vlm
from interactive_ir.backends.captioners import HFCaptioner
from interactive_ir.errors import BackendError, BackendUnavailable

RED = Image.new("RGB", (40, 30), (200, 40, 40))
BLUE = Image.new("RGB", (20, 30), (40, 70, 200))
WIDE = Image.new("L", (300, 90), 128)  # greyscale: converted to RGB on the way in
WORDS = ("a the is it red blue green car dog cat yes no what colour of in on left right image photo "
         "and or , . ?").split()
VQA_LABELS = {0: "yes", 1: "no", 2: "red", 3: "2"}
LONG_QUESTION = " ".join(["is the car on the left red and the dog on the right blue ?"] * 6)  # ~80 tokens


# --- without transformers -------------------------------------------------------------------------


def test_hf_captioner_batches_strips_and_wraps_failures():
    calls = []

    def pipe(images, max_new_tokens):
        calls.append((len(images), {im.mode for im in images}, max_new_tokens))
        return [f" cap {len(calls)} "] * len(images)

    cap = HFCaptioner("dummy", spec="hf:dummy", batch_size=2, max_new_tokens=9, pipeline=pipe)
    assert cap.caption([RED, BLUE, WIDE]) == ["cap 1", "cap 1", "cap 2"]
    assert calls == [(2, {"RGB"}, 9), (1, {"RGB"}, 9)]
    assert cap.caption([]) == []

    short = HFCaptioner("dummy", spec="hf:dummy", pipeline=lambda images, max_new_tokens: ["one"])
    with pytest.raises(BackendError, match="1 captions for 2 images"):
        short.caption([RED, BLUE])

    def broken(images, max_new_tokens):
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(BackendError, match="hf:dummy failed: CUDA out of memory"):
        HFCaptioner("dummy", spec="hf:dummy", pipeline=broken).caption([RED])


def test_backend_modules_import_neither_torch_nor_transformers():
    code = ("import sys, interactive_ir.backends.captioners, interactive_ir.backends.vlms, "
            "interactive_ir.backends.hf_vision; print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- tiny real models -----------------------------------------------------------------------------


def _tokenizer(root, **kwargs):
    """A BERT tokenizer over WORDS (a fresh instance per call)."""
    from transformers import BertTokenizerFast

    vocab = root / "vocab"
    if not vocab.exists():
        vocab.mkdir()
        (vocab / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return BertTokenizerFast.from_pretrained(str(vocab), **kwargs)  # from a folder: works on transformers 4 and 5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """{name: folder} of tiny random models: BLIP captioning, BLIP-VQA, ViLT-VQA, ViT+BERT captioning, LLaVA chat."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("hf_models")
    n = len(_tokenizer(root))  # a fresh tokenizer per processor: saving one records its processor_class
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    dirs = {}

    blip = transformers.BlipConfig(
        text_config=dict(small, vocab_size=n, encoder_hidden_size=32, max_position_embeddings=64, bos_token_id=2,
                         eos_token_id=3, sep_token_id=3, pad_token_id=0, projection_dim=16),
        vision_config=dict(small, image_size=32, patch_size=8, projection_dim=16), projection_dim=16)
    blip_processor = transformers.BlipProcessor(transformers.BlipImageProcessor(size={"height": 32, "width": 32}),
                                              _tokenizer(root))
    for name, cls in (("blip_caption", transformers.BlipForConditionalGeneration),
                      ("blip_vqa", transformers.BlipForQuestionAnswering)):
        dirs[name] = root / name
        cls(blip).save_pretrained(dirs[name])
        blip_processor.save_pretrained(dirs[name])

    dirs["vilt"] = root / "vilt"
    vilt = transformers.ViltConfig(vocab_size=n, max_position_embeddings=40, image_size=64, patch_size=32,
                                   id2label=VQA_LABELS, label2id={v: k for k, v in VQA_LABELS.items()}, **small)
    transformers.ViltForQuestionAnswering(vilt).save_pretrained(dirs["vilt"])
    transformers.ViltProcessor(transformers.ViltImageProcessor(size={"shortest_edge": 64}),
                               _tokenizer(root)).save_pretrained(dirs["vilt"])

    # ViT encoder + text decoder (the nlpconnect/vit-gpt2-image-captioning layout): AutoProcessor gives the tokenizer
    dirs["vit_captioner"] = root / "vit_captioner"
    ved = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(
        transformers.ViTConfig(image_size=32, patch_size=8, **small),
        transformers.BertConfig(vocab_size=n, is_decoder=True, add_cross_attention=True, max_position_embeddings=64, **small))
    ved.decoder_start_token_id, ved.pad_token_id, ved.eos_token_id = 2, 0, 3
    model = transformers.VisionEncoderDecoderModel(config=ved)
    model.generation_config.decoder_start_token_id, model.generation_config.pad_token_id = 2, 0
    model.generation_config.eos_token_id = 3
    model.save_pretrained(dirs["vit_captioner"])
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(dirs["vit_captioner"])
    _tokenizer(root).save_pretrained(dirs["vit_captioner"])

    # a chat VLM for the image-text-to-text pipeline (still in transformers 5)
    dirs["llava"] = root / "llava"
    chat_tok = _tokenizer(root, model_input_names=["input_ids", "attention_mask"])  # as LLaVA's: no token_type_ids
    chat_tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    llava = transformers.LlavaConfig(
        vision_config=transformers.CLIPVisionConfig(image_size=32, patch_size=8, projection_dim=16, **small),
        text_config=transformers.LlamaConfig(vocab_size=len(chat_tok), num_key_value_heads=2, max_position_embeddings=256,
                                             bos_token_id=2, eos_token_id=3, pad_token_id=0, **small),
        image_token_index=chat_tok.convert_tokens_to_ids("<image>"), vision_feature_layer=-1)
    model = transformers.LlavaForConditionalGeneration(llava)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = 0, 3
    model.save_pretrained(dirs["llava"])
    template = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>"
                "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endfor %}")
    transformers.LlavaProcessor(
        image_processor=transformers.CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=chat_tok, patch_size=8, vision_feature_select_strategy="full", chat_template=template,
        image_token="<image>").save_pretrained(dirs["llava"])
    return {k: str(v) for k, v in dirs.items()}


@pytest.mark.integration
@pytest.mark.parametrize("name", ["blip_caption", "vit_captioner"])
def test_hf_captioner_writes_one_string_per_image(tiny, name):
    cap = make_captioner("hf:" + tiny[name], max_new_tokens=5, batch_size=2)
    out = cap.caption([RED, BLUE, WIDE])
    assert len(out) == 3 and all(isinstance(c, str) for c in out)
    assert cap.caption([]) == []


@pytest.mark.integration
def test_vilt_answers_are_labels_even_for_long_questions_and_two_images(tiny):
    vlm = make_vlm("hf:" + tiny["vilt"])  # the task is read from the config: a VQA head
    assert vlm.task == "visual-question-answering"
    out = vlm.ask([[RED], [RED, BLUE], [WIDE]], ["is it red ?", "left or right ?", LONG_QUESTION])
    assert len(out) == 3 and set(out) <= set(VQA_LABELS.values())
    assert len(vlm.pipe.tokenizer(LONG_QUESTION)["input_ids"]) > 40  # really longer than ViLT's text encoder


@pytest.mark.integration
def test_blip_vqa_generates_one_string_per_question(tiny):
    vlm = make_vlm("hf:" + tiny["blip_vqa"] + "#vqa")
    out = vlm.ask([[RED, BLUE], [BLUE]], ["what colour is the car ?", LONG_QUESTION], max_tokens=4)
    assert len(out) == 2 and all(isinstance(a, str) for a in out)


@pytest.mark.integration
def test_chat_vlm_goes_through_the_image_text_to_text_pipeline(tiny):
    vlm = make_vlm("hf:" + tiny["llava"])
    assert vlm.task == "image-text-to-text"
    out = vlm.ask([[RED, BLUE]], ["is the car red ?"], max_tokens=3)
    assert len(out) == 1 and isinstance(out[0], str)


@pytest.mark.integration
def test_missing_folders_and_wrong_models_are_backend_unavailable(tiny, tmp_path):
    missing = "hf:" + str(tmp_path / "no" / "such" / "model")
    for build in (make_captioner, make_vlm, lambda spec: make_vlm(spec + "#vqa")):
        with pytest.raises(BackendUnavailable, match="hf:/path"):
            build(missing)
    with pytest.raises(BackendUnavailable, match="not an image captioning model"):
        make_captioner("hf:" + tiny["vilt"])
