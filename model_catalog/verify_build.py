"""Shrunken copies of catalog models for :mod:`model_catalog.verify` (dev-only: needs torch).

What is shrunk and how the copy is built, as :mod:`model_catalog.verify`'s design notes 1-3 say:

1. *What is shrunk.* Only sizes that never reach a cache tensor (the hidden width where the family reads
   ``head_dim`` from the config, MLP / expert widths, the vocabulary, the expert count, ``q_lora_rank``,
   Mamba's ``dt_rank``); layer count, ``layer_types``, KV heads, head dims, windows, MLA ranks and
   recurrent-state shapes stay real (:func:`shrink_overrides`).
2. *Weights.* Parameters are created on the meta device, then materialised with one shared random tensor
   per distinct shape (:func:`build_shrunken_model`); buffers stay the model's own.
3. *Attention kernel.* Long runs use a registered stand-in kernel (:data:`STUB_ATTENTION`) returning zeros
   of the right shape; projections, RoPE and ``cache.update`` stay transformers' own code.

The meta-device parameter counts (:func:`transformers_parameter_count`,
:func:`transformers_full_parameter_count`) are here too: they build the same classes unshrunk.

torch and transformers are imported inside functions only.

Sources: transformers 5.24 models/auto/auto_factory.py (``from_config``), models/auto/modeling_auto.py
(``AutoModelForImageTextToText``), modeling_utils.py (``AttentionInterface``), each family's
configuration_*.py for the fields overridden.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

STUB_ATTENTION = "planner_verify_stub"
"""Name the stand-in kernel is registered under in transformers' AttentionInterface."""
SHRUNK_HIDDEN = 64
SHRUNK_FFN = 32
SHRUNK_EXPERT_FFN = 16
SHRUNK_VOCAB = 512
SHRUNK_EXPERTS = 4
SHRUNK_EXPERTS_PER_TOKEN = 2
SHRUNK_LORA_RANK = 32
SHRUNK_DT_RANK = 8
SHARED_WEIGHT_STD = 0.02

EXPLICIT_HEAD_DIM_FAMILIES: frozenset[str] = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "qwen3_next", "gemma2", "gemma3_text",
    "phi3", "cohere", "starcoder2", "gpt_oss", "llama4_text", "jamba", "qwen3_5_text", "qwen3_5_moe_text",
    "qwen3_vl_text", "qwen3_vl_moe_text", "mimo_v2_flash", "minimax_m2", "minimax_m3_vl_text", "glm4_moe",
    "step3p5", "nemotron_h", "deepseek_v4",
})
"""Families whose attention reads ``getattr(config, "head_dim", ...)``: their hidden width can shrink."""

PER_LAYER_HEAD_FAMILIES: frozenset[str] = frozenset({"gemma4_text"})
"""Families whose head shapes live in ``per_layer_config``: only the width shrinks, heads stay."""

MLA_FAMILIES: frozenset[str] = frozenset({"deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa",
                                          "glm4_moe_lite", "kimi_linear"})
"""Families whose cache is the MLA latent: the width shrinks to a multiple of the query heads."""



# --- config shrinking --------------------------------------------------------------------


def _shrink_experts(cfg: Any, out: dict) -> None:
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value > SHRUNK_EXPERTS:
            out[key] = SHRUNK_EXPERTS
    for key in ("num_experts_per_tok", "top_k_experts"):  # Gemma 4 names it top_k_experts
        per_token = getattr(cfg, key, None)
        if isinstance(per_token, int) and per_token > SHRUNK_EXPERTS_PER_TOKEN:
            out[key] = SHRUNK_EXPERTS_PER_TOKEN
    if getattr(cfg, "n_group", None) is not None:
        out["n_group"] = 1
        out["topk_group"] = 1


def shrink_overrides(cfg: Any, head_dim: int) -> dict[str, Any]:
    """Config overrides that shrink a model without touching its cache shapes (design note 1).

    Args:
        cfg: The transformers text config of the real model.
        head_dim: The planner's per-head K width [elements] (kept explicitly).

    Returns:
        Keyword overrides for the config class.
    """
    out: dict[str, Any] = {"vocab_size": SHRUNK_VOCAB}
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value >= SHRUNK_VOCAB:
            out[key] = 0
    family = cfg.model_type
    if family in PER_LAYER_HEAD_FAMILIES:
        heads = cfg.num_attention_heads
        out["hidden_size"] = heads * -(-SHRUNK_HIDDEN // heads)
    elif family in EXPLICIT_HEAD_DIM_FAMILIES:
        out["head_dim"] = head_dim
        heads = getattr(cfg, "num_key_value_heads", None)
        if isinstance(heads, int) and heads >= 1:
            if family == "mimo_v2_flash":
                heads *= 2  # its sliding layers have twice the KV heads
            out["num_attention_heads"] = heads  # query heads never reach the cache
        else:
            heads = cfg.num_attention_heads
        # Some config classes insist on hidden_size % num_attention_heads == 0 (Llama-2-13B: 40 heads -> 80).
        hidden = heads * -(-SHRUNK_HIDDEN // heads)
        if family == "jamba":
            d_inner = cfg.mamba_expand * cfg.hidden_size
            if d_inner % hidden == 0:
                out["hidden_size"] = hidden
                out["mamba_expand"] = d_inner // hidden
            out["mamba_dt_rank"] = SHRUNK_DT_RANK
        else:
            out["hidden_size"] = hidden
    elif family in MLA_FAMILIES:
        # The latent cache does not depend on the width; DeepseekV2Config wants it a multiple of the heads.
        heads = cfg.num_attention_heads
        out["hidden_size"] = heads * -(-SHRUNK_HIDDEN // heads)
        if getattr(cfg, "q_lora_rank", None) is not None:
            out["q_lora_rank"] = SHRUNK_LORA_RANK
    if family == "deepseek_v4":
        out["q_lora_rank"] = SHRUNK_LORA_RANK
        out["o_lora_rank"] = SHRUNK_LORA_RANK
    if family == "nemotron_h" and getattr(cfg, "moe_latent_size", None) is not None:
        out["moe_latent_size"] = SHRUNK_LORA_RANK
    for key, size in (("intermediate_size", SHRUNK_FFN), ("intermediate_size_mlp", SHRUNK_FFN),
                      ("moe_intermediate_size", SHRUNK_EXPERT_FFN), ("shared_expert_intermediate_size", SHRUNK_EXPERT_FFN),
                      ("n_inner", SHRUNK_FFN), ("ffn_hidden_size", SHRUNK_FFN),
                      ("dense_intermediate_size", SHRUNK_FFN), ("shared_intermediate_size", SHRUNK_EXPERT_FFN),
                      ("share_expert_dim", SHRUNK_EXPERT_FFN),
                      ("moe_shared_expert_intermediate_size", SHRUNK_EXPERT_FFN)):
        if isinstance(getattr(cfg, key, None), int):
            out[key] = size
    _shrink_experts(cfg, out)
    return out


def shrunken_config(cfg: Any, head_dim: int) -> Any:
    """A copy of ``cfg`` with :func:`shrink_overrides` applied (same config class)."""
    from model_catalog.hf_config import _quiet_transformers

    kwargs = cfg.to_dict()
    kwargs.pop("model_type", None)
    kwargs.pop("transformers_version", None)
    kwargs.update(shrink_overrides(cfg, head_dim))
    with _quiet_transformers():
        return type(cfg)(**kwargs)


def shrunken_full_config(full: Any, text: Any, small_text: Any) -> Any:
    """The wrapper config with its text config replaced by ``small_text`` (``full`` itself for text models)."""
    from model_catalog.hf_config import _quiet_transformers

    if full is text:
        return small_text
    kwargs = full.to_dict()
    kwargs.pop("model_type", None)
    kwargs.pop("transformers_version", None)
    kwargs["text_config"] = small_text.to_dict()
    with _quiet_transformers():
        return type(full)(**kwargs)


# --- model building ----------------------------------------------------------------------


@contextmanager
def _parameters_on_meta() -> Any:
    """Register every new ``nn.Parameter`` on the meta device; buffers stay real (design note 2)."""
    import torch

    original = torch.nn.Module.register_parameter

    def register(module, name, param):
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.detach().to("meta"), requires_grad=False)
        original(module, name, param)

    torch.nn.Module.register_parameter = register
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def _materialise_shared(model: Any, seed: int = 0) -> None:
    """Replace meta parameters with one shared real tensor per (shape, dtype) (design note 2)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    pool: dict[tuple, Any] = {}
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is None or param.device.type != "meta":
                continue
            key = (tuple(param.shape), param.dtype)
            if key not in pool:
                if param.dim() <= 1:
                    pool[key] = torch.ones(param.shape, dtype=param.dtype)
                else:
                    values = torch.randn(param.shape, generator=generator, dtype=torch.float32)
                    pool[key] = values.mul_(SHARED_WEIGHT_STD).to(param.dtype)
            module._parameters[name] = torch.nn.Parameter(pool[key], requires_grad=False)


def _stub_attention(module, query, key, value, attention_mask, **kwargs):
    """Stand-in kernel: zeros shaped like the real output ``(batch, q_len, heads, v_dim)`` (design note 3)."""
    batch, heads, q_len, _ = query.shape
    return query.new_zeros(batch, q_len, heads, value.shape[-1]), None


def _register_stub() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(STUB_ATTENTION, _stub_attention)


def _from_config(text: Any, full: Any, **kwargs: Any) -> tuple[Any, bool]:
    """``(model, text_only)``: the ``*ForCausalLM`` of the text config, else the wrapper's
    ``*ForConditionalGeneration`` (Qwen3-VL, Step 3.7 have no causal-LM class for their text config)."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    try:
        return AutoModelForCausalLM.from_config(text, **kwargs), True
    except ValueError:
        if full is text:
            raise
        return AutoModelForImageTextToText.from_config(full, **kwargs), False


LANGUAGE_PREFIXES: tuple[str, ...] = ("model.language_model.", "language_model.", "lm_head.")
"""Parameter-name prefixes of the language model inside a ``*ForConditionalGeneration``."""


def build_shrunken_model(cfg: Any, attention: str | None, full: Any = None) -> Any:
    """Build the shrunken model in bf16 with shared weights, eval mode.

    Args:
        cfg: Shrunken text config.
        attention: ``attn_implementation`` (None = the model's default).
        full: Shrunken wrapper config, used when the text config has no causal-LM class.
    """
    import torch

    from model_catalog.hf_config import _quiet_transformers

    if attention == STUB_ATTENTION:
        _register_stub()
    with _quiet_transformers(), _parameters_on_meta():
        model, _ = _from_config(cfg, cfg if full is None else full, dtype=torch.bfloat16,
                                attn_implementation=attention)
    _materialise_shared(model)
    return model.eval()


def transformers_parameter_count(cfg: Any, full: Any = None) -> tuple[int, str]:
    """``(parameters, class name)`` of the language model transformers builds on meta.

    ``AutoModelForCausalLM.from_config(cfg)``; for a text config without a causal-LM
    class, the wrapper's ``*ForConditionalGeneration`` counted over its language
    model and ``lm_head`` (:data:`LANGUAGE_PREFIXES`; tied weights once).
    """
    import torch

    from model_catalog.hf_config import _quiet_transformers

    with _quiet_transformers(), torch.device("meta"):
        model, text_only = _from_config(cfg, cfg if full is None else full)
    if text_only:
        return sum(p.numel() for p in model.parameters()), type(model).__name__
    count = sum(p.numel() for name, p in model.named_parameters() if name.startswith(LANGUAGE_PREFIXES))
    return count, f"{type(model).__name__} (language model)"


def transformers_full_parameter_count(full: Any) -> int:
    """Parameters of the whole multimodal model transformers builds on meta (towers, projectors, language
    model, ``lm_head``; tied weights once): ``AutoModelForImageTextToText.from_config(full)``
    (models/auto/modeling_auto.py), ``sum(p.numel())``."""
    import torch
    from transformers import AutoModelForImageTextToText

    from model_catalog.hf_config import _quiet_transformers

    with _quiet_transformers(), torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(full)
    return sum(p.numel() for p in model.parameters())
