"""What the LLM coders (coders/openai.py, vllm.py, hf.py) share: the Chat protocol, the prompt
(coders/prompts/*.md), code extraction, the menu, `LLMCoder` itself and `HybridCoder` (another coder's
port first).

    coder = HybridCoder(TemplateCoder(), LLMCoder(OpenAIChat(base_url, model), "openai", TemplateMenu()))
"""

from coders.llm.chat import Chat, ChatError, Message, Reply
from coders.llm.extract import extract_program
from coders.llm.hybrid import HybridCoder
from coders.llm.llm_coder import LLMCoder
from coders.llm.prompt import build_messages

__all__ = ["Chat", "ChatError", "HybridCoder", "LLMCoder", "Message", "Reply", "build_messages",
           "extract_program"]
