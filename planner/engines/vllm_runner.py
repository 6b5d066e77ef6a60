"""vLLM's two GPU model runners: which one a release runs a model on, and what each charges before the KV cache.

v0.22 added a second GPU model runner ("Model Runner V2", vllm/v1/worker/gpu/model_runner.py) beside the
V1 one (vllm/v1/worker/gpu_model_runner.py) and made it the default for more models release by release;
v0.29 runs every model on it. The runners differ in three things the KV budget sees: whether CUDA-graph
memory is estimated and taken from the KV cache, what the dummy sampler run of the profile pass holds,
and which buffers stay allocated from the worker's first memory snapshot to the end of the profile pass.

Design notes (assumptions):
    1. Runner choice (vllm/config/vllm.py ``VllmConfig.use_v2_model_runner``,
       ``_is_default_v2_model_runner_model``, ``_get_v2_model_runner_unsupported_features``), read in the
       published wheels of each release: v0.22.0 ``Qwen3ForCausalLM`` only, dense and unquantized; v0.23.0
       also Llama and Mistral; v0.24.0 those and DeepSeek-V2 / Qwen2-MoE / Granite-MoE, quantized too;
       v0.25.0-v0.27.1 every generate model that is neither MoE nor hybrid (Mamba / linear-attention
       layers), plus those three MoE architectures; v0.28.0 the same, plus DeepSeek-V4 (and Inkling,
       Kimi-K3, LongCat-Flash-Ngram); v0.29.0 every model. Any release keeps V1 for a feature V2 lacks;
       of the planner's knobs, ngram speculative decoding. ``vllm-v0.28`` follows the v0.28.0 rule
       (:data:`V2_MOE_MODEL_TYPES`), ``vllm`` the v0.29.0 one; on v0.22-v0.24 fewer models ran on V2.
    2. CUDA graphs: the V1 runner estimates them before sizing the KV cache (v0.21+,
       ``profile_cudagraph_memory``); V2's returned 0 up to v0.28.0 (its graphs are captured after the KV
       cache, in the ``1 - gpu_memory_utilization`` headroom) and estimates from v0.29.0
       (vllm/v1/worker/gpu/cudagraph_utils.py): :func:`graphs_charged`.
    3. Dummy sampler: V2's ``_dummy_sampler_run`` computes the logits in the model dtype and samples a dummy
       batch whose requests were never added, so none needs logits processing and the sampler keeps them
       as they are (v0.27.0+ skip the FP32 copy for such a batch, v0.26.0 processed them in place);
       ``gumbel_sample`` adds ``rows x ceil(V / 1024)`` maxima and indices, negligible: ``e`` bytes per logit
       (:func:`sampler_bytes_per_logit`; vllm/v1/worker/gpu/sample/sampler.py, gumbel.py). v0.22-v0.25
       copied the logits to FP32 first (6 B per bf16 logit): not modelled. The V1 runner keeps the
       profile's constant (not re-derived here), except with speculative decoding on the 2026 profiles
       (:data:`V2_RUNNER_PROFILES`, where n-gram puts a model back on V1): V1's ``_dummy_sampler_run``
       (vllm/v1/worker/gpu_model_runner.py) then also runs the rejection sampler on a dummy batch of one draft
       token a request, ``logits = randn(2 x rows, V)`` in the model dtype (``e`` bytes) replacing the first
       logits, and ``RejectionSampler.forward`` (vllm/v1/sample/rejection_sampler.py) first samples the bonus
       rows, copied out of it (the plain sampler's peak over ``rows``), then casts the target rows to FP32,
       clones them and takes their FP32 softmax while the bonus copy is still referenced. Per row and
       vocabulary entry that peaks at ``max(2 e + s, 3 e + 3 x 4)`` bytes (``s`` the profile's constant;
       top-k / top-p temporaries of ``apply_sampling_constraints`` not counted): 18 B for bf16, 3x the plain
       6 B, and independent of ``num_speculative_tokens`` (the dummy batch drafts one token a request). Without
       it n-gram on ``vllm`` charged less than no speculation on V2 (QA: Llama-3.1-8B on an H100, activation
       1.79 -> 0.84 GiB). :func:`sampler_bytes_per_logit`. Older profiles' V1 spec branch (a ``num_reqs``-row
       ``target_logits`` and ``compute_probs``) is not re-derived: they keep the constant.
    4. Persistent V2 state: from v0.27.0 ``memory_profiling`` (vllm/utils/mem_utils.py) charges the drop of
       free memory since the worker's init snapshot (``total_consumed``), so buffers a runner allocates
       after it and keeps are charged; v0.22-v0.26 charged only the torch peak above what was allocated
       before the profile pass, which leaves them out (not modelled). V2 allocates, per sequence slot of
       ``max_num_seqs``, on the last pipeline stage (where the sampler lives): the output-token counts of
       the penalties, ``V`` int32, and the prompt-token bit mask, ``ceil(V / 32)`` int32
       (sample/penalties.py); the structured-output bitmask and logit indices, ``q x (ceil(V / 32) + 1)``
       int32 with ``q`` = 1 + speculative tokens (structured_outputs.py); allowed-token, logit-bias (ids and
       fp32 values) and stop-token tables, 1,024 + 1,024 + 1,024 + 128 x 4 B (sample/logit_bias.py);
       bad-word tokens and offsets, 1,024 + 129 int32 (sample/bad_words.py, ``VLLM_MAX_BAD_WORDS_TOTAL_TOKENS`` /
       ``VLLM_MAX_NUM_BAD_WORDS`` defaults); logprob token ids, 128 int32 (sample/logprob.py,
       ``MAX_LOGPROB_TOKEN_IDS``). On every stage: request state, 3 int32 + 1 int64 + ``k`` int64 draft
       tokens a slot (states.py), and the input buffers, 13 B a batched token (int32 ids, int64
       positions, a padding flag) and 3 int32 a slot plus one (input_batch.py). Tensors backed by
       pinned host memory (``UvaBackedTensor``, the token-id table) hold no device memory.
       Worked example (reference case N12: Qwen3-14B, V = 151,936, 256 slots, 2,048 tokens): per slot
       4 x (151,936 + 4,748 + 4,749 + 3,457 + 1,024) + 32 = 663,688 B; x 256 + 2,048 x 13 + 4 =
       169,930,756 B (0.16 GiB).
    5. Checked against a public vLLM 0.27.1 log that prints the split (enginrect/llmso,
       labs/environment-setup.md, attempts 4 and 7: Qwen2.5-0.5B-Instruct on an RTX 4090 of 23.99 GiB,
       ``--gpu-memory-utilization 0.85 --max-model-len 2048``, so 2,048 tokens / 256 slots; copied in
       tests/data/reference/vllm_runner_logs.json). Relaunched with vLLM's compile cache warm (attempt 7,
       "compilation: 0.11 s") it printed 1.25 GiB consumed, 0.08 GiB peak activation and 19.06 GiB
       available; these notes give 0.93 + 0.16 + 0.13 = 1.22, 0.08 and 19.10. Its first launch, which
       compiled the model during the profile pass (attempt 4), printed 1.49, 0.25 and 18.65: the cold
       torch.compile (Inductor's kernels and their tuning runs) costs about 0.4 GiB that vLLM charges to
       the KV cache. Its size is not in vLLM's code, so it is charged as measured there
       (:data:`FIRST_COMPILE_BYTES`, :func:`first_compile_bytes`): (1.49 - 1.25) GiB more consumed plus
       (0.25 - 0.08) GiB more peak = 0.41 GiB, each printed figure within 0.005 GiB, so within 0.01 GiB of it.
       It is charged on V2 (the runner of that log) unless the launch runs eager (``--enforce-eager``, ``-O0``:
       nothing compiled) or says the compile cache is warm (``EngineRequest.warm_compile_cache``). It is the
       size of what the 0.28 L40S logs of reference cases N12-N14, each a first launch, left unexplained
       before it (0.40-0.69 GiB; those rows were not used to size it). Not modelled: what the V1 runner
       keeps from v0.27.0 on, and a first compile on V1 (no log shows its split).

Sources: vLLM v0.22.0-v0.29.0 wheels, the files named in the notes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from planner.model import ModelSpec
from planner.model.layers import RecurrentState
from planner.model.sparse import AttentionWithState

if TYPE_CHECKING:  # types.py imports the profiles, which import nothing from here
    from planner.engines.profiles import EngineProfile
    from planner.engines.types import EngineRequest

Runner = Literal["v1", "v2"]

V2_RUNNER_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""Profiles whose releases can run a model on Model Runner V2 (design note 1)."""

V2_MOE_MODEL_TYPES = frozenset({"deepseek_v2", "qwen2_moe", "granitemoe", "deepseek_v4"})
"""``model_type`` of the MoE / hybrid architectures v0.28.0 puts on V2 all the same
(vllm/config/vllm.py ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``: DeepseekV2ForCausalLM, Qwen2MoeForCausalLM,
GraniteMoeForCausalLM, DeepseekV4ForCausalLM; the others it names are not in the catalog)."""

NON_ESTIMATING_V2_PROFILES = frozenset({"vllm-v0.28"})
"""Profiles whose V2 runner charges no CUDA graphs before the KV cache (design note 2)."""

SLOT_TABLE_INT32 = 1024 + 1024 + 128 + 1024 + 129 + 128
"""int32 entries of the fixed-size per-slot tables: allowed tokens, logit-bias ids, stop tokens, bad-word
tokens, bad-word offsets, logprob token ids (design note 4)."""
SLOT_TABLE_FP32 = 1024
"""fp32 entries per slot: the logit-bias values (design note 4)."""
SLOT_STATE_BYTES = 3 * 4 + 8 + 3 * 4
"""Request state and input buffers of one slot: total length, computed tokens and next prefill token
(int32), last sampled token (int64), query start, sequence length and DCP length (int32) [bytes]."""
TOKEN_BUFFER_BYTES = 4 + 8 + 1
"""Input buffers of one batched token: id (int32), position (int64), padding flag (bool) [bytes]."""

FIRST_COMPILE_BYTES = 41 * 2**30 // 100
"""What a first launch's torch.compile adds to Model Runner V2's profile pass: 0.41 GiB (440,234,147 B),
measured on a public vLLM 0.27.1 log as the drop of the printed available KV memory from a warm relaunch to
the first launch (design note 5; tests/data/reference/vllm_runner_logs.json) [bytes]."""


def _has_recurrent_state(model: ModelSpec) -> bool:
    """True for vLLM's hybrid / attention-free models: some layer keeps a Mamba or linear-attention state."""
    return any(isinstance(layer, (RecurrentState, AttentionWithState)) for layer in model.layers)


def _speculative_method(request: EngineRequest) -> str | None:
    spec = request.serving.speculative if request.serving is not None else None
    return spec.method if spec is not None else None


def speculative_tokens(request: EngineRequest) -> int:
    """Draft tokens per step of the request's speculative decoding (0 without it)."""
    spec = request.serving.speculative if request.serving is not None else None
    return spec.num_speculative_tokens if spec is not None else 0


def model_runner(model: ModelSpec, profile_id: str, request: EngineRequest) -> Runner:
    """The runner a profile's release runs ``model`` on (design note 1): ``v2`` or ``v1``.

    Examples: Qwen3-14B under ``vllm-v0.28`` -> v2; Qwen3.6-35B-A3B (MoE + Gated DeltaNet) under
    ``vllm-v0.28`` -> v1; any model under ``vllm`` -> v2 (v1 with ngram speculative decoding); every other
    profile -> v1.
    """
    if profile_id not in V2_RUNNER_PROFILES or _speculative_method(request) == "ngram":
        return "v1"
    if profile_id == "vllm-v0.28" and model.model_type not in V2_MOE_MODEL_TYPES:
        if model.is_moe or _has_recurrent_state(model):
            return "v1"
    return "v2"


def graphs_charged(profile: EngineProfile, runner: Runner) -> bool:
    """True when the release takes CUDA-graph memory from the KV budget before sizing it (design note 2)."""
    return profile.subtracts_cudagraph and not (runner == "v2" and profile.id in NON_ESTIMATING_V2_PROFILES)


REJECTION_FP32_ROWS = 3
"""FP32 ``rows x V`` tensors the rejection sampler's dummy run holds at its peak: the target rows cast to FP32,
their clone and their softmax (design note 3; vllm/v1/sample/rejection_sampler.py ``RejectionSampler.forward``)."""


def sampler_bytes_per_logit(profile: EngineProfile, runner: Runner, activation_bytes: int,
                            request: EngineRequest | None = None) -> int:
    """Peak bytes per logit of the dummy sampler run (design note 3): the model-dtype logits
    (``activation_bytes``) on V2, the profile's constant on V1, or on a 2026 profile's V1 with speculative
    decoding the rejection sampler's ``max(2 e + s, 3 e + 3 x 4)`` (``e`` = ``activation_bytes``, ``s`` the
    constant), whichever is larger."""
    if runner == "v2":
        return activation_bytes
    plain = profile.sampler_bytes_per_logit
    if not plain or request is None or not speculative_tokens(request) or profile.id not in V2_RUNNER_PROFILES:
        return plain
    e = activation_bytes
    return max(plain, 2 * e + plain, 3 * e + 4 * REJECTION_FP32_ROWS)


def v2_state_bytes(model: ModelSpec, *, max_num_seqs: int, max_num_batched_tokens: int,
                   num_speculative_tokens: int = 0, last_stage: bool = True) -> int:
    """Device memory V2 allocates after the init snapshot and keeps through the profile pass [bytes].

    ``max_num_seqs x (per-slot sampler state on the last stage + slot state) + max_num_batched_tokens x 13 B
    + 4 B`` (design note 4, with its worked example).

    Args:
        model: The model (``vocab_size``).
        max_num_seqs, max_num_batched_tokens: The scheduler limits vLLM runs with.
        num_speculative_tokens: Draft tokens per step (the bitmask rows and draft-token slots).
        last_stage: Whether this GPU holds the last pipeline stage (the sampler's state).
    """
    k = num_speculative_tokens
    per_slot = SLOT_STATE_BYTES + 8 * k
    if last_stage:
        mask_words = -(-model.vocab_size // 32)
        per_slot += 4 * (model.vocab_size + mask_words + (1 + k) * (mask_words + 1) + SLOT_TABLE_INT32
                         + SLOT_TABLE_FP32)
    return max_num_seqs * per_slot + max_num_batched_tokens * TOKEN_BUFFER_BYTES + 4


def first_compile_bytes(request: EngineRequest, runner: Runner) -> int:
    """Device memory a first launch's torch.compile adds to the profile pass on V2 (design note 5) [bytes].

    :data:`FIRST_COMPILE_BYTES` on Model Runner V2; 0 on V1, with ``--enforce-eager`` or ``-O0`` (nothing is
    compiled), and when ``request.warm_compile_cache`` says vLLM's compile cache already holds the model.
    """
    compiled = not request.enforce_eager and request.optimization_level != 0
    return FIRST_COMPILE_BYTES if runner == "v2" and compiled and not request.warm_compile_cache else 0


def runner_note(runner: Runner, profile: EngineProfile, state_bytes: int, compile_bytes: int = 0) -> str:
    """One line naming the runner and what it charges, "" outside the profiles that have two runners."""
    if profile.id not in V2_RUNNER_PROFILES:
        return ""
    if runner == "v1":
        return ("model runner V1 (this release keeps MoE / hybrid models or this feature on it): CUDA graphs "
                "estimated before the KV cache is sized")
    graphs = ("CUDA graphs estimated before the KV cache is sized" if graphs_charged(profile, runner)
              else "CUDA graphs captured after the KV cache, not charged to it")
    compile_text = (f"a first launch compiles the model during the profile pass: {compile_bytes / 2**30:.2f} GiB more "
                    "(measured on a public vLLM 0.27.1 log; --warm-compile-cache for a relaunch)" if compile_bytes
                    else "no first-compile charge (eager, or the compile cache is warm)")
    return (f"model runner V2: {graphs}; its per-sequence sampler state (token counts for penalties, "
            f"masks, logit-bias tables) stays allocated, {state_bytes / 2**30:.2f} GiB counted in the activation; "
            f"{compile_text}")
