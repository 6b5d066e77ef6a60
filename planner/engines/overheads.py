"""What a serving engine spends before its KV cache: weights as loaded, activation peak, runtime.

These are *models* of what the engines *measure* (vLLM's profile run, SGLang's
free-memory probes, TensorRT-LLM's dummy requests), calibrated on the breakdown
rows of shared/reference/engine_cases.csv and on the llm-d H100 measurements.
Every term can be overridden in :class:`planner.engines.EngineRequest`.

Formulas (per GPU; ``e`` = activation bytes per element, 2 for bf16):

* Weights as loaded = :func:`planner.model.params.weight_bytes` of this pipeline
  stage's tensors at tensor-parallel size ``tp``, plus vLLM's rotary cos/sin
  cache (``max_position_embeddings x head_dim x e``, replicated), with MXFP4
  expert matrices padded as vLLM pads them (:data:`MXFP4_PADDING`).
  Llama-3.1-8B: 16,060,522,496 + 33,554,432 B = 14.99 GiB, the "Model
  loading took 14.99 GiB" of cases V01 and V20.
* Forward peak of a profile pass of ``T`` tokens =
  ``T x e x (3 h + max(attention, mlp))`` with ``attention = 2 q / tp + 2 kv / tp``
  (q/k/v projections and the attention output) and ``mlp = 3 I / tp`` for a
  dense MLP (gate+up and the activated product), ``k (3 I_e / tp + h)`` for ``k``
  routed experts (vLLM fused-MoE intermediate caches). ``3 h``: residual, hidden
  and normed input live together.
* Sampler peak = ``min(max_num_seqs, T) x vocab x bytes_per_logit`` +
  ``T x h x e`` (the profile pass's hidden states stay alive), on the last
  pipeline stage only; ``bytes_per_logit`` 38 with PyTorch top-k/top-p, 12
  with the FlashInfer sampler (see :mod:`planner.engines.profiles`).
* Activation peak = ``max(forward, sampler)``.
* Non-torch = the profile's constant, plus the multi-GPU extra when the model
  spans several GPUs. CUDA graphs = the profile's constant (only deducted by
  engines that say so).

Calibration (available KV predicted vs printed, reference cases; reproduced by
tests/test_engine_cases.py): V01 (V0, Llama-3.1-8B, RTX 3090) 3.82 vs 3.81 GiB
+0.4 %; V07 (v0.10.1.1, Qwen2-7B, A100, util 0.25) 5.04 vs 5.01 +0.6 %; V15
(v0.10.1.1, gpt-oss-120b TP 4, A100) 45.08 vs 45.32 -0.5 %; V20 (late 2025,
Llama-3.1-8B, H100) 51.43 vs 51.38 +0.1 %; V21 (late 2025, gpt-oss-20b, H100)
50.34 vs 50.28 +0.1 %. Other llm-d H100 rows (not in the CSV): Qwen3-0.6B
+0.1 %, Qwen3-32B +1.4 %, Llama-3.3-70B-FP8 TP 2 +0.2 %. Not independent: the
38 B/logit sampler constant was fitted on V20, V21 and those llm-d rows, the
12 B/logit FlashInfer constant on V07, V0's 0.35 GiB non-torch on V01 itself,
and the v0.10 MXFP4 padding on V15's printed weights; only the structure
(which terms, which tokens and sequences) carries over to new cases.

Sources: vLLM ``Worker.determine_available_memory``
(vllm/v1/worker/gpu_worker.py), ``memory_profiling`` (vllm/utils/mem_utils.py),
``GPUModelRunner.profile_run`` / ``_dummy_sampler_run``
(vllm/v1/worker/gpu_model_runner.py), ``get_rope`` cos/sin cache
(vllm/model_executor/layers/rotary_embedding.py), ``Mxfp4MoEMethod.create_weights``
(vllm/model_executor/layers/quantization/mxfp4.py), fused-MoE workspaces
(vllm/model_executor/layers/fused_moe/fused_moe.py); ENGINES.md 1.4.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.model import ModelSpec
from planner.model.dtypes import StorageFormat, activation_dtype
from planner.model.params import ParamGroup, weight_bytes
from planner.units import ceil_div

MXFP4_PADDING: tuple[int, int] = (256, 0)
"""How vLLM pads MXFP4 expert matrices: (multiple of the per-GPU intermediate
size, multiple of the hidden size; 0 = none). The padding depends on the MoE
kernel vLLM picks for the GPU and version (64, 128 or 256 in
``Mxfp4MoEMethod.create_weights``); (256, 0) reproduces the weights late-2025
vLLM printed on H100 (gpt-oss-20b 13.46 GiB vs "13.47", gpt-oss-120b 64.57 vs
"64.38", llm-d), and the v0.10 profile uses (256, 256) (gpt-oss-120b TP 4 on
A100, v0.10.1.1: see :mod:`planner.engines.profiles`)."""


def pipeline_layer_ranges(num_layers: int, pipeline_parallel_size: int) -> tuple[range, ...]:
    """Decoder layers held by each pipeline stage.

    ``num_layers // pp`` each; the remainder goes one each to the stages just
    before the last (the last stage also holds the LM head). Worked example:
    30 layers over 4 stages -> 7, 8, 8, 7.

    Raises:
        ValueError: ``pipeline_parallel_size`` < 1 or > ``num_layers``.

    Sources: vLLM ``get_pp_indices`` (vllm/distributed/utils.py).
    """
    pp = pipeline_parallel_size
    if pp < 1 or pp > num_layers:
        raise ValueError(f"pipeline_parallel_size must be between 1 and the {num_layers} layers, got {pp}")
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    ranges, start = [], 0
    for size in sizes:
        ranges.append(range(start, start + size))
        start += size
    return tuple(ranges)


def stage_params(model: ModelSpec, stage: int, pipeline_parallel_size: int) -> tuple[ParamGroup, ...]:
    """Parameter groups one pipeline stage holds.

    Per-layer groups (names starting with ``layers.``) are apportioned by the
    stage's share of layers (groups present in only some layers, e.g. the dense
    MLP of DeepSeek's first layers, are apportioned proportionally: an
    approximation); the embedding goes to the first stage, the final norm and
    ``lm_head`` to the last. A tied model's last stage also holds a copy of the
    embedding table as its LM head when ``pp > 1``.

    Sources: vLLM ``PPMissingLayer`` / ``make_layers`` (vllm/model_executor/models/utils.py).
    """
    pp = pipeline_parallel_size
    if pp == 1:
        return model.params
    ranges = pipeline_layer_ranges(model.num_layers, pp)
    share = len(ranges[stage])
    first, last = stage == 0, stage == pp - 1
    has_lm_head = any(g.kind == "lm_head" for g in model.params)
    out = []
    for group in model.params:
        if group.name.startswith("layers."):
            count = group.count * share // model.num_layers if group.count % model.num_layers == 0 \
                else round(group.count * share / model.num_layers)
            if count:
                out.append(replace(group, count=count))
        elif group.kind == "embedding":
            if first:
                out.append(group)
            if last and not has_lm_head:
                out.append(replace(group, name="lm_head.weight", kind="lm_head"))
        elif last:
            out.append(group)
    return tuple(out)


def _mxfp4_expert_bytes(group: ParamGroup, fmt: StorageFormat, other: StorageFormat, tp: int,
                        padding: tuple[int, int]) -> int | None:
    """Per-GPU bytes of an MXFP4 expert group with vLLM's padding, or None if not one.

    ``padding`` = (multiple for the per-GPU intermediate size, multiple for the
    hidden size; 0 = none).
    """
    if ".experts." not in group.name or fmt.name != "mxfp4":
        return None
    name = group.name.rsplit(".", 1)[-1]
    inter_multiple, hidden_multiple = padding
    if name == "gate_up_proj":
        inter, hidden = group.shape[0] // 2, group.shape[1]
        shape = (2 * _pad(ceil_div(inter, tp), inter_multiple), _pad(hidden, hidden_multiple))
        return fmt.bytes_for_matrix(shape) * group.count
    if name == "down_proj":
        hidden, inter = group.shape
        shape = (_pad(hidden, hidden_multiple), _pad(ceil_div(inter, tp), inter_multiple))
        return fmt.bytes_for_matrix(shape) * group.count
    if name == "gate_up_proj_bias":
        return other.bytes_for(2 * _pad(ceil_div(group.shape[0] // 2, tp), inter_multiple)) * group.count
    return None


def _pad(n: int, multiple: int) -> int:
    return ceil_div(n, multiple) * multiple if multiple else n


def rope_cache_bytes(model: ModelSpec, activation_bytes: int) -> int:
    """vLLM's rotary cos/sin cache: ``max_position_embeddings x head_dim x e`` [bytes].

    Llama-3.1-8B: 131,072 x 128 x 2 B = 32 MiB. MLA models cache the rope part
    only (``qk_rope_head_dim``), approximated here by ``head_dim``.

    Sources: vLLM ``RotaryEmbedding._compute_cos_sin_cache``
    (vllm/model_executor/layers/rotary_embedding.py).
    """
    return (model.max_position_embeddings or 0) * model.head_dim * activation_bytes


def loaded_weight_bytes(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1,
                        stage: int = 0, pipeline_parallel_size: int = 1, *, engine_extras: bool = True,
                        mxfp4_padding: tuple[int, int] = MXFP4_PADDING) -> int:
    """Weights one GPU holds after loading, as vLLM reports them [bytes].

    Args:
        model: The model.
        weight_format: Format of the linear layers.
        tensor_parallel_size: GPUs each layer is split over.
        stage: Pipeline stage of this GPU.
        pipeline_parallel_size: Pipeline stages.
        engine_extras: Add vLLM's rope cache and MXFP4 padding (module docstring).
        mxfp4_padding: See :data:`MXFP4_PADDING`.

    MXFP4 checkpoints (gpt-oss) quantize only the routed experts; attention,
    router, embeddings and ``lm_head`` stay in bf16 (the checkpoint's
    ``quantization_config.modules_to_not_convert``), so with ``mxfp4`` only
    ``.experts.`` groups use it here. (:func:`planner.model.params.weight_bytes`
    applies the format to every linear layer.)

    Sources: see the module docstring.
    """
    params = stage_params(model, stage, pipeline_parallel_size)
    other = activation_dtype(weight_format, model.torch_dtype)
    tp = tensor_parallel_size
    total = 0
    plain, unquantized = [], []
    for group in params:
        padded = _mxfp4_expert_bytes(group, weight_format, other, tp, mxfp4_padding) if engine_extras else None
        if padded is not None:
            total += padded
        elif weight_format.name == "mxfp4" and ".experts." not in group.name:
            unquantized.append(group)
        else:
            plain.append(group)
    total += weight_bytes(tuple(plain), weight_format, model.torch_dtype, tp)
    total += weight_bytes(tuple(unquantized), other, model.torch_dtype, tp)
    if engine_extras:
        total += rope_cache_bytes(model, other.bytes_for(1))
    return total


def mlp_width(model: ModelSpec) -> int:
    """Widest MLP activation of one token [elements], before tensor parallelism.

    ``model.intermediate_size`` when the catalog fills it; else read from the
    parameter shapes: dense ``up_proj`` (or ``c_fc`` / ``dense_h_to_4h`` / ``up``)
    rows, or ``num_experts_per_tok x`` the expert width plus shared experts;
    ``4 x hidden`` as a last resort.
    """
    if model.intermediate_size:
        return model.intermediate_size
    dense = routed = shared = 0
    for g in model.params:
        if g.kind != "linear" or not g.shape:
            continue
        leaf = g.name.rsplit(".weight", 1)[0].rsplit(".", 1)[-1]
        if ".experts." in g.name and leaf == "gate_up_proj":
            routed = max(routed, g.shape[0] // 2)
        elif "shared_expert" in g.name and leaf in ("up_proj", "gate_up_proj"):
            shared = max(shared, g.shape[0] // (2 if leaf == "gate_up_proj" else 1))
        elif leaf in ("up_proj", "c_fc", "dense_h_to_4h", "up", "fc1", "w1"):
            dense = max(dense, g.shape[0])
    width = max(dense, model.num_experts_per_tok * routed + shared)
    return width or 4 * model.hidden_size


def forward_peak_bytes(model: ModelSpec, num_tokens: int, activation_bytes: int, tensor_parallel_size: int = 1) -> int:
    """Activation peak of one forward pass over ``num_tokens`` tokens [bytes].

    ``T x e x (3 h + max(attention, mlp))`` (module docstring). Worked example
    (case V01, V0 profile of 20,000 tokens, Llama-3.1-8B): 20,000 x 2 x
    (12,288 + 43,008) = 2,211,840,000 B = 2.06 GiB; vLLM measured 2.07 GiB.

    Sources: vLLM ``profile_run`` (a dummy forward of ``max_num_batched_tokens``).
    """
    tp = tensor_parallel_size
    h = model.hidden_size
    q = model.num_attention_heads * model.head_dim
    kv = model.num_key_value_heads * model.head_dim
    attention = ceil_div(2 * q + 2 * kv, tp)
    mlp = ceil_div(3 * mlp_width(model), tp) + model.num_experts_per_tok * h
    return num_tokens * activation_bytes * (3 * h + max(attention, mlp))


def sampler_peak_bytes(model: ModelSpec, num_tokens: int, num_seqs: int, bytes_per_logit: int,
                       activation_bytes: int) -> int:
    """Peak of the dummy sampler run [bytes]: logits pipeline + kept hidden states.

    ``min(num_seqs, T) x vocab x bytes_per_logit + T x h x e``. Worked example
    (case V20, Llama-3.1-8B, 8192 tokens, 1024 sequences, PyTorch sampler):
    1024 x 128,256 x 38 + 8192 x 4096 x 2 = 5,057,527,808 B = 4.71 GiB; vLLM
    measured 4.76 GiB.

    Sources: vLLM ``_dummy_sampler_run`` (vllm/v1/worker/gpu_model_runner.py).
    """
    rows = min(num_seqs, num_tokens)
    return rows * model.vocab_size * bytes_per_logit + num_tokens * model.hidden_size * activation_bytes


@dataclass(frozen=True, kw_only=True)
class ActivationEstimate:
    """The activation-peak model's parts for one GPU [bytes].

    Attributes:
        forward_bytes: Forward-pass peak.
        sampler_bytes: Sampler-run peak (0 off the last pipeline stage).
        formula: The arithmetic as text.
    """

    forward_bytes: int
    sampler_bytes: int
    formula: str

    @property
    def peak_bytes(self) -> int:
        """``max(forward, sampler)`` [bytes]."""
        return max(self.forward_bytes, self.sampler_bytes)


def activation_estimate(model: ModelSpec, *, num_tokens: int, num_seqs: int, bytes_per_logit: int,
                        activation_bytes: int, tensor_parallel_size: int = 1,
                        last_stage: bool = True) -> ActivationEstimate:
    """Forward and sampler peaks of an engine's profile run on one GPU (module docstring)."""
    forward = forward_peak_bytes(model, num_tokens, activation_bytes, tensor_parallel_size)
    sampler = 0
    if last_stage and bytes_per_logit:
        sampler = sampler_peak_bytes(model, num_tokens, num_seqs, bytes_per_logit, activation_bytes)
    formula = (f"max(forward {num_tokens:,} tok x {activation_bytes} B x (3 x {model.hidden_size:,} + "
               f"max(attention, mlp) / tp {tensor_parallel_size}), sampler min({num_seqs}, {num_tokens:,}) x "
               f"{model.vocab_size:,} vocab x {bytes_per_logit} B + hidden states)")
    return ActivationEstimate(forward_bytes=forward, sampler_bytes=sampler, formula=formula)
