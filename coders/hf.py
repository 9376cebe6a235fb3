"""The coder on transformers `generate`: a local folder or a hub model, no server.

    mtmc optimize task=softmax_lastdim coder=hf coder.model=/models/my-coder coder.max_new_tokens=4096

Slow next to vLLM (no batching, no paged attention) but it runs wherever transformers runs, the
GPU machine and the CPU included, which makes it the coder for small local models and for tests.
Generation is serialized by a lock: one model, one `generate` at a time.
"""

from __future__ import annotations

import logging
import threading
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

from coders.llm import LLMCoder, Message, Reply
from coders.llm.hybrid import llm_coder
from mtmc.protocols import Coder, Menu

log = logging.getLogger(__name__)


class HFChat:
    def __init__(self, model: str, device: str = "auto", dtype: str = "auto", max_new_tokens: int = 4096,
                 temperature: float = 0.2, top_p: float = 0.95, seed: int = 0,
                 trust_remote_code: bool = False) -> None:
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.model = AutoModelForCausalLM.from_pretrained(
            model, dtype=dtype, trust_remote_code=trust_remote_code)
        self.model.to(self.device).eval()
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        if self.tokenizer.chat_template is None:
            log.warning("%s has no chat template: prompts are sent as plain text with role headers", model)
        set_seed(seed)
        self._lock = threading.Lock()

    def complete(self, messages: list[Message]) -> Reply:
        start = time.monotonic()
        prompt = self._encode(messages)
        sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p} \
            if self.temperature > 0 else {"do_sample": False}
        with self._lock, torch.inference_mode():
            output = self.model.generate(**prompt, max_new_tokens=self.max_new_tokens, **sampling,
                                         pad_token_id=self._pad_id())
        new = output[0, prompt["input_ids"].shape[1]:].tolist()
        return Reply(text=self.tokenizer.decode(new, skip_special_tokens=True),
                     prompt_tokens=prompt["input_ids"].shape[1], completion_tokens=len(new),
                     latency_s=time.monotonic() - start, finish_reason=self._finish_reason(new))

    def _encode(self, messages: list[Message]) -> dict[str, torch.Tensor]:
        if self.tokenizer.chat_template is not None:
            encoded = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                         return_dict=True, return_tensors="pt")
        else:
            text = "".join(f"### {m['role']}\n{m['content']}\n\n" for m in messages) + "### assistant\n"
            encoded = self.tokenizer(text, return_tensors="pt")
        return {k: v.to(self.device) for k, v in encoded.items()}

    def _pad_id(self) -> int | None:
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else self.tokenizer.eos_token_id

    def _finish_reason(self, new: list[int]) -> str:
        stopped = bool(new) and new[-1] == self.tokenizer.eos_token_id
        return "length" if len(new) >= self.max_new_tokens and not stopped else "stop"


def hf_coder(model: str, device: str = "auto", dtype: str = "auto", max_new_tokens: int = 4096,
             temperature: float = 0.2, top_p: float = 0.95, seed: int = 0, trust_remote_code: bool = False,
             hybrid_start: bool = True, start: Coder | None = None, menu: Menu | None = None) -> Coder:
    chat = HFChat(model, device=device, dtype=dtype, max_new_tokens=max_new_tokens, temperature=temperature,
                  top_p=top_p, seed=seed, trust_remote_code=trust_remote_code)
    return llm_coder(LLMCoder(chat, name="hf", menu=menu), start, hybrid_start)
