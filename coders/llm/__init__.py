"""What the LLM coders (coders/openai.py, vllm.py, hf.py) share: the Chat protocol, the prompt
(coders/prompts/*.md), code extraction, the menu and hybrid start, and `LLMCoder` itself.

    coder = LLMCoder(chat=OpenAIChat(base_url, model), name="openai")
"""

from coders.llm.chat import Chat, ChatError, Message, Reply
from coders.llm.extract import extract_program
from coders.llm.llm_coder import LLMCoder
from coders.llm.prompt import build_messages

__all__ = ["Chat", "ChatError", "LLMCoder", "Message", "Reply", "build_messages", "extract_program"]
