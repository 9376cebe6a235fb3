"""The coder on vLLM's offline engine (`vllm.LLM`), tensor parallel across the visible GPUs.

    pip install 'mtmc[vllm]'
    mtmc optimize task=softmax_lastdim coder=vllm coder.model=Qwen/Qwen2.5-Coder-32B-Instruct \\
        coder.tensor_parallel_size=4

The engine lives in this process, so no server to start; for a model shared by several runs, or
served elsewhere, use `vllm serve` and coder=openai instead. vllm is imported when the coder is
built, never at import time: configs and tests must load without it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from coders.llm import LLMCoder, Message, Reply
from coders.llm.chat import plain_data
from coders.llm.hybrid import llm_coder
from mtmc.protocols import Coder, Menu

INSTALL_HINT = "pip install 'mtmc[vllm]'"


class VLLMChat:
    def __init__(self, model: str, tensor_parallel_size: int = 1, dtype: str = "auto",
                 max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
                 enforce_eager: bool = False, seed: int = 0, temperature: float = 0.2, top_p: float = 0.95,
                 max_tokens: int = 8192, chat_template_kwargs: Mapping[str, Any] | None = None,
                 trust_remote_code: bool = False) -> None:
        vllm = _import_vllm()
        self.llm = vllm.LLM(model=model, tensor_parallel_size=tensor_parallel_size, dtype=dtype,
                            max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                            enforce_eager=enforce_eager, seed=seed, trust_remote_code=trust_remote_code)
        self.params = vllm.SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
        self.chat_template_kwargs = plain_data(chat_template_kwargs) if chat_template_kwargs else None
        self._lock = threading.Lock()  # one engine; the loop asks for one program at a time anyway

    def complete(self, messages: list[Message]) -> Reply:
        start = time.monotonic()
        with self._lock:
            (result,) = self.llm.chat([messages], self.params, use_tqdm=False,
                                      chat_template_kwargs=self.chat_template_kwargs)
        completion = result.outputs[0]
        return Reply(text=completion.text, prompt_tokens=len(result.prompt_token_ids or []),
                     completion_tokens=len(completion.token_ids), latency_s=time.monotonic() - start,
                     finish_reason=completion.finish_reason)


def vllm_coder(model: str, tensor_parallel_size: int = 1, dtype: str = "auto",
               max_model_len: int | None = None, gpu_memory_utilization: float = 0.9,
               enforce_eager: bool = False, seed: int = 0, temperature: float = 0.2, top_p: float = 0.95,
               max_tokens: int = 8192, chat_template_kwargs: Mapping[str, Any] | None = None,
               trust_remote_code: bool = False, hybrid_start: bool = True, start: Coder | None = None,
               menu: Menu | None = None) -> Coder:
    chat = VLLMChat(model, tensor_parallel_size=tensor_parallel_size, dtype=dtype,
                    max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                    enforce_eager=enforce_eager, seed=seed, temperature=temperature, top_p=top_p,
                    max_tokens=max_tokens, chat_template_kwargs=chat_template_kwargs,
                    trust_remote_code=trust_remote_code)
    return llm_coder(LLMCoder(chat, name="vllm", menu=menu), start, hybrid_start)


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as err:
        raise ImportError(f"coder=vllm needs vLLM, which is not installed: {INSTALL_HINT} (on a CUDA "
                          "machine), or serve the model with `vllm serve` and use coder=openai") from err
    return vllm
