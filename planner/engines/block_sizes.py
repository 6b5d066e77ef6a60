"""The ``--block-size`` values vLLM starts with, so a launch it refuses is refused here, not planned.

vLLM's own check of a user's block size (QA: ``--block-size 7`` planned "starts yes" with ``--block-size 7`` in the
launch command, and ``/Engine?block_size=7`` said vLLM starts):

* vllm/config/cache.py, ``CacheConfig.block_size``: the current source takes any positive whole number (unset
  stands for ``DEFAULT_BLOCK_SIZE``, 16); the 2025 releases took one of a ``BlockSize`` literal of 1, 8, 16, 32,
  64 and 128 (256 added later).
* The attention backend then has to take it. vllm/v1/attention/backend.py ``AttentionBackend.supports_block_size``
  accepts a block size that is a multiple of one of the backend's ``get_supported_kernel_block_sizes()``, and
  ``validate_configuration`` lists "block_size not supported" for any other, so no CUDA backend is found for it.
  FlashAttention and Triton attention take ``MultipleOf(16)`` (vllm/v1/attention/backends/flash_attn.py, whose
  ``get_kv_cache_shape`` also refuses any other size; triton_attn.py), FlashInfer 16, 32
  or 64, and the MLA backends 16 (Triton MLA), 64 (FlashMLA) or 128 (CUTLASS MLA), sizes
  :func:`planner.engines.vllm_specs.mla_forced_block_size` raises a smaller block to.

* Older releases also refused a size outside that literal before any backend ran (``vllm serve`` derives the
  flag's argparse choices from it; vLLM issue 42510 quotes "listed as valid choices"), per profile
  (:data:`VLLM_BLOCK_CHOICES`): the 0.10 line's ``vllm/config.py`` has ``BlockSize = Literal[1, 8, 16, 32, 64, 128]``
  (a ``CacheConfig`` beside ``RunnerOption`` with "draft"), as does the 0.8 / 0.9 one (``CacheDType`` without
  ``fp8_inc``), and the docs of late 2024 listed 8 to 128 (vLLM PR 10938); the v0.11 line's ``vllm/config/cache.py``
  (``CacheDType`` with ``fp8_ds_mla``, and still beside ``MambaCacheMode``) has ``Literal[1, 8, 16, 32, 64, 128, 256]``
  under ``SkipValidation``, so the literal bounds the flag, not the field. The 2026 source
  (``block_size: int = Field(default=None, gt=0)``) has no list: the newest profiles take any multiple of 16.

So on the GPUs this planner prices, vLLM starts only with a multiple of 16: 1 and 8, which the old literal
listed, have no CUDA kernel either. Only the user's value is checked: the sizes vLLM picks itself (an attention
+ Mamba hybrid's raised block, :func:`planner.engines.vllm_specs.vllm_block_size`; an MLA backend's forced size;
DeepSeek-V4's 256) are multiples of 16 already. SGLang's ``--page-size`` (any positive size; 1 by default),
TensorRT-LLM's ``tokens_per_block`` and TGI's block are other engines' rules and are not checked here.
"""

from __future__ import annotations

VLLM_BLOCK_MULTIPLE = 16
"""vLLM's CUDA attention kernels take KV blocks of a multiple of this many tokens (module docstring)."""

VLLM_BLOCK_EXAMPLES: tuple[int, ...] = (16, 32, 64, 128, 256)
"""Block sizes a message offers (vLLM's default 16 first)."""


_LITERAL_TO_128 = (1, 8, 16, 32, 64, 128)

VLLM_BLOCK_CHOICES: dict[str, tuple[int, ...]] = {
    "vllm-v0.11": (*_LITERAL_TO_128, 256),
    "vllm-v0.10": _LITERAL_TO_128,
    "vllm-v1-2025": _LITERAL_TO_128,
    "vllm-v1-jan2025": (8, 16, 32, 64, 128),
    "vllm-v0": (8, 16, 32, 64, 128),
}
"""The ``--block-size`` choices of the releases a vLLM profile models (module docstring); a profile not here (the
2026 builds) takes any positive size."""


def _joined(sizes: tuple[int, ...]) -> str:
    return ", ".join(str(n) for n in sizes[:-1]) + f" or {sizes[-1]}"


def vllm_block_size_problem(block_size: int, flag: str = "--block-size", profile_id: str | None = None) -> str | None:
    """Why vLLM refuses ``block_size`` [tokens] as the user's ``--block-size``, or None when it starts with it.

    Args:
        block_size: The asked block size [tokens].
        flag: How the message names the setting (``--block-size`` on the CLI, ``block_size`` on the pages).
        profile_id: The vLLM profile whose release is asked (:data:`VLLM_BLOCK_CHOICES`); None = the newest.

    Returns:
        E.g. "vLLM refuses --block-size 7: its CUDA attention kernels take KV blocks of a multiple of 16 tokens;
        use 16, 32, 64, 128 or 256 (any multiple of 16)" (vllm/v1/attention/backend.py ``supports_block_size``).
    """
    choices = VLLM_BLOCK_CHOICES.get(profile_id or "")
    if choices is not None:
        taken = tuple(n for n in choices if n % VLLM_BLOCK_MULTIPLE == 0)
        if block_size in taken:
            return None
        return (f"vLLM refuses {flag} {block_size:,}: {profile_id} models releases whose --block-size choices are "
                f"{_joined(choices)} (CacheConfig's BlockSize), and its CUDA attention kernels take a multiple of "
                f"{VLLM_BLOCK_MULTIPLE}; use {_joined(taken)}")
    if block_size > 0 and block_size % VLLM_BLOCK_MULTIPLE == 0:
        return None
    shown = ", ".join(str(n) for n in VLLM_BLOCK_EXAMPLES[:-1])
    return (f"vLLM refuses {flag} {block_size:,}: its CUDA attention kernels take KV blocks of a multiple of "
            f"{VLLM_BLOCK_MULTIPLE} tokens; use {shown} or "
            f"{VLLM_BLOCK_EXAMPLES[-1]} (any multiple of {VLLM_BLOCK_MULTIPLE})")
