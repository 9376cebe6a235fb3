"""The template coder: a deterministic Triton generator driven by a small kernel IR.

    from coders.template import TemplateCoder
    program = TemplateCoder().apply(task, None, Strategy("port"))
"""

from coders.template.coder import TemplateCoder

__all__ = ["TemplateCoder"]
