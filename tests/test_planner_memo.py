"""The speed-ups of a single plan change no number (issue "Ten times faster than the closest peer").

* :mod:`planner.model.memo`: one memo per live model object, dropped with the object.
* Warm (memoized) plans equal cold ones: the same request on a fresh, equal copy of
  the model (an empty memo) gives an equal :class:`~planner.budget.Plan` /
  :class:`~planner.engines.EnginePlan`, over contexts, batch sizes, TP sizes and the
  knobs the memo keys hold (fitting and non-fitting cases, every vLLM era).
* ``_from_parts`` builds the same records as their constructors.
* Integer shortcuts (``StorageFormat.bytes_for``, :func:`~planner.engines.pages.concurrency_ratio`)
  equal the ``Fraction`` arithmetic they replace.
* :func:`planner.model.fastinit.fast_frozen_init` builds the same request objects as the
  ``__init__`` ``dataclasses`` generates (same ``__dict__``, signature, errors); the one-pass
  per-sequence sums, the full-attention shortcut of the vLLM plan and the read-back of two
  printed decimals equal what they replace.

No timings here (scripts/bench_peer.py measures them).
"""

from __future__ import annotations

import copy
import gc
import inspect
import pickle
import re
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields, make_dataclass, replace
from fractions import Fraction

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import Plan, PlanRequest, plan_base, plan
from planner.engines import EngineRequest, plan_engine
from planner.engines.pages import concurrency_ratio, max_concurrency, printed_tokens, printed_tokens_for_ratio
from planner.engines.profiles import ENGINE_PROFILES, engine_profile
from planner.engines.types import EnginePlan
from planner.engines.vllm import _static_plan
from planner.model.dtypes import KV_CACHE_DTYPES, WEIGHT_DTYPES
from planner.model.fastinit import fast_frozen_init
from planner.model.kv import _build_kv_profile, cache_dtypes, kv_profile
from planner.model.layers import NoCache
from planner.model.memo import _MEMOS, model_memo
from planner.sweep import catalog_sweep, concurrency_curve
from planner.units import ceil_div
from tests.factories import dense_model

H100 = get_gpu("nvidia-h100-sxm-80gb")
L4 = get_gpu("nvidia-l4")
MODELS = ("meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3.1-70B",
          "google/gemma-3-4b-it", "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V2-Lite", "tiiuae/falcon-7b",
          "mistralai/Mixtral-8x7B-v0.1", "ai21labs/Jamba-v0.1")
CONTEXTS = (1, 17, 4096, 4097, 32768, 131072, 1 << 20)


def cold(model):
    """An equal copy of ``model`` with an empty memo (a distinct object)."""
    copy = replace(model)
    assert copy == model and copy is not model and not model_memo(copy)
    return copy


def test_one_memo_per_live_object_dropped_with_it():
    model = dense_model()
    memo = model_memo(model)
    assert model_memo(model) is memo
    twin = replace(model)
    assert model_memo(twin) is not memo
    key = id(twin)
    del twin
    gc.collect()
    assert key not in _MEMOS


@pytest.mark.parametrize("model_id", MODELS)
def test_memoized_kv_profiles_equal_fresh_ones(model_id):
    model = model_spec(model_id)
    for kv in ("auto", "fp8", "fp16"):
        dtypes = cache_dtypes(model, "auto", kv)
        for tp in (1, 2, 8):
            for block in (1, 16, 64):
                assert kv_profile(model, dtypes, tp, block) == _build_kv_profile(model, dtypes, tp, block)


@pytest.mark.parametrize("model_id", MODELS)
def test_warm_plans_equal_cold_plans(model_id):
    model = model_spec(model_id)
    for gpu in (H100, L4):
        for tp in (1, 2, 3):
            for weight, kv in (("auto", "auto"), ("int4", "fp8"), ("bf16", "auto")):
                for batch in (1, 64):
                    for context in CONTEXTS:
                        request = PlanRequest(context_len=context, batch_size=batch, num_gpus=tp, weight_dtype=weight,
                                              kv_cache_dtype=kv)
                        warm = plan(model, gpu.framework_memory_bytes, request, gpu.id)
                        assert warm == plan(model, gpu.framework_memory_bytes, request, gpu.id)
                        assert warm == plan(cold(model), gpu.framework_memory_bytes, request, gpu.id)


def test_warm_plans_follow_every_knob_of_the_key():
    model = model_spec("meta-llama/Meta-Llama-3-8B")
    base = PlanRequest(context_len=100_000, batch_size=4)
    for change in ({}, {"gpu_memory_utilization": 0.5}, {"block_size": 32}, {"max_num_batched_tokens": 512},
                   {"overhead_bytes": 3 << 30}, {"num_gpus": 2}, {"kv_cache_dtype": "fp8"}, {"weight_dtype": "fp8"}):
        request = replace(base, **change)
        for memory, gpu_id in ((H100.framework_memory_bytes, H100.id), (L4.framework_memory_bytes, L4.id),
                               (L4.framework_memory_bytes, "")):
            assert plan(model, memory, request, gpu_id) == plan(cold(model), memory, request, gpu_id)


ENGINES = tuple(name for name, profile in ENGINE_PROFILES.items() if profile.family == "vllm")
"""Every vLLM era: the static part is vLLM's."""


@pytest.mark.parametrize("model_id", MODELS)
def test_warm_engine_plans_equal_cold_ones(model_id):
    assert len(ENGINES) >= 6 and "vllm-v0" in ENGINES
    model = model_spec(model_id)
    for engine in ENGINES:
        for tp, pp in ((1, 1), (2, 1), (1, 2), (3, 1)):
            for context in (1, 4096, 20_000, 32769, 131072, 1 << 20):
                request = EngineRequest(engine=engine, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                        max_model_len=context, gpu_name=H100.name)
                try:
                    warm = plan_engine(model, H100.framework_memory_bytes, request)
                except ValueError as exc:  # e.g. a Mamba hybrid under an era without the hybrid allocator
                    with pytest.raises(ValueError, match="^" + re.escape(str(exc)) + "$"):
                        plan_engine(cold(model), H100.framework_memory_bytes, request)
                    continue
                assert warm == plan_engine(model, H100.framework_memory_bytes, request)
                assert warm == plan_engine(cold(model), H100.framework_memory_bytes, request)


def test_warm_engine_plans_follow_the_knobs_but_not_the_length():
    model = model_spec("google/gemma-3-4b-it")
    base = EngineRequest(engine="vllm", max_model_len=8192, gpu_name=H100.name)
    for change in ({}, {"gpu_memory_utilization": 0.5}, {"block_size": 32}, {"max_num_batched_tokens": 512},
                   {"max_num_seqs": 8}, {"kv_cache_dtype": "fp8"}, {"available_kv_memory_bytes": 1 << 30},
                   {"disable_hybrid_kv_cache_manager": True}, {"data_parallel_size": 2}, {"gpu_name": "A100"}):
        request = replace(base, **change)
        assert plan_engine(model, H100.framework_memory_bytes, request) == plan_engine(
            cold(model), H100.framework_memory_bytes, request)
    profile = engine_profile("vllm")
    a = _static_plan(model, H100.framework_memory_bytes, base, profile, 16384, 1024)
    b = _static_plan(model, H100.framework_memory_bytes, replace(base, max_model_len=1234), profile, 16384, 1024)
    assert a is b  # one static part for every length


def _all_fields(record) -> dict:
    return {f.name: getattr(record, f.name) for f in fields(record)}


def test_from_parts_builds_what_the_constructors_build():
    model = model_spec("meta-llama/Meta-Llama-3-8B")
    result = plan(model, H100.framework_memory_bytes, PlanRequest(context_len=4096))
    values = _all_fields(result)
    assert Plan(**values) == result == Plan._from_parts(values)
    assert vars(Plan._from_parts(values)) == vars(Plan(**values))
    engine = plan_engine(model, H100.framework_memory_bytes, EngineRequest(max_model_len=4096))
    values = _all_fields(engine)
    assert EnginePlan(**values) == engine == EnginePlan._from_parts(values)
    assert vars(EnginePlan._from_parts(values)) == vars(EnginePlan(**values))
    with pytest.raises(TypeError, match="missing fields \\['notes'\\]"):
        Plan._from_parts({k: v for k, v in _all_fields(result).items() if k != "notes"})
    with pytest.raises(TypeError, match="unknown names \\['colour'\\]"):
        EnginePlan._from_parts(values, {"colour": "blue"})
    with pytest.raises(Exception, match="cannot assign"):
        result.fits = False  # still frozen


def test_integer_bytes_for_equals_the_fraction_formula():
    formats = {*WEIGHT_DTYPES.values(), *KV_CACHE_DTYPES.values()}
    for fmt in formats:
        for n in (0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 4095, 4096, 10**9 + 7):
            bits = fmt.bits_per_element * n
            assert fmt.bytes_for(n) == ceil_div(bits.numerator, bits.denominator * 8)


@pytest.mark.parametrize("model_id", ("google/gemma-3-4b-it", "openai/gpt-oss-20b", "meta-llama/Meta-Llama-3-8B"))
def test_concurrency_ratio_equals_max_concurrency(model_id):
    model = model_spec(model_id)
    for engine in ENGINES:
        profile = engine_profile(engine)
        request = EngineRequest(engine=engine, max_model_len=8192, gpu_name=H100.name)
        st = _static_plan(model, H100.framework_memory_bytes, request, profile, 8192, 256)
        for length in (1, 100, 8192, 131072):
            conc = max_concurrency(st.layout, st.num_blocks, length, 8192, profile.concurrency_print)
            ratio = concurrency_ratio(st.layout, st.num_blocks, length, 8192, profile.concurrency_print)
            assert Fraction(*ratio) == conc and ratio[0] / ratio[1] == float(conc)
            for style in ("blocks", "blocks_x_block_size", "blocks_per_group", "concurrency_x_len"):
                assert printed_tokens_for_ratio(st.layout, st.num_blocks, style, ratio, length) == printed_tokens(
                    st.layout, st.num_blocks, style, conc, length)


def test_catalog_sweep_equals_concurrency_curves():
    no_kv = replace(dense_model(), layers=(NoCache(),) * 4)  # every per-sequence size is 0
    models = (*(model_spec(m) for m in MODELS), no_kv)
    gpus = (H100, L4, H100)  # a repeated memory shares its row
    contexts = (1, 1000, 100_000)
    request = PlanRequest(context_len=8192)
    rows = catalog_sweep(models, tuple(g.framework_memory_bytes for g in gpus), request, contexts)
    for model, per_gpu in zip(models, rows):
        for gpu, row in zip(gpus, per_gpu):
            assert row == concurrency_curve(model, gpu.framework_memory_bytes, request, contexts)
    assert rows[-1][0] == (0, 0, 0)


def test_bytes_per_sequences_equals_bytes_per_sequence():
    for model_id in MODELS:
        model = model_spec(model_id)
        for block in (1, 16):
            profile = kv_profile(model, cache_dtypes(model, "auto", "auto"), 2, block)
            counts = [0, 1, 15, 16, 17, 1000, 4097, 131072, 1 << 20]
            assert profile.bytes_per_sequences(counts) == [profile.bytes_per_sequence(n) for n in counts]
    with pytest.raises(ValueError, match="num_tokens must be >= 0"):
        profile.bytes_per_sequences([5, -1])


def _generated_init_twin(cls):
    """A plain frozen dataclass with ``cls``'s fields: its ``__init__`` is the one ``dataclasses`` generates."""
    specs = [(f.name, f.type, field(default=f.default) if f.default is not MISSING
              else field(default_factory=f.default_factory) if f.default_factory is not MISSING else field())
             for f in fields(cls)]
    return make_dataclass(f"{cls.__name__}Twin", specs, frozen=True, kw_only=True)


@pytest.mark.parametrize("cls, arguments", [
    (PlanRequest, {"context_len": 4096, "num_gpus": 2, "block_size": 32, "gpu_memory_utilization": 0.85}),
    (EngineRequest, {"engine": "vllm-v0", "tensor_parallel_size": 2, "max_model_len": 4096, "gpu_name": "L4",
                     "available_kv_memory_per_rank_bytes": (1, 2)}),
])
def test_fast_frozen_init_matches_the_generated_init(cls, arguments):
    twin = _generated_init_twin(cls)
    made, reference = cls(**arguments), twin(**arguments)
    assert vars(made) == vars(reference) and list(vars(made)) == list(vars(reference))
    assert replace(made) == made
    assert vars(replace(made, weight_dtype="fp8")) == vars(twin(**arguments | {"weight_dtype": "fp8"}))
    assert inspect.signature(cls) == inspect.signature(twin)
    assert pickle.loads(pickle.dumps(made)) == made and copy.deepcopy(made) == made
    with pytest.raises(FrozenInstanceError):
        made.block_size = 1
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        cls(**arguments, colour="blue")
    with pytest.raises(TypeError, match="positional argument"):
        cls(1)


def test_fast_frozen_init_errors_and_factories_as_dataclasses_word_them():
    @fast_frozen_init
    @dataclass(frozen=True, kw_only=True)
    class Knobs:
        a: int
        b: int
        tags: tuple = field(default_factory=tuple)
        names: list = field(default_factory=list)

    with pytest.raises(TypeError, match=r"missing 2 required keyword-only arguments: 'a' and 'b'"):
        Knobs()
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'b'"):
        Knobs(a=1)
    one, two = Knobs(a=1, b=2), Knobs(a=1, b=2)
    assert one.names == [] and one.names is not two.names  # one factory call per instance
    assert Knobs(a=1, b=2, names=["x"]).names == ["x"]
    with pytest.raises(TypeError, match="PlanRequest.__init__\\(\\) missing 1 required keyword-only argument"):
        PlanRequest()

    @dataclass(frozen=False, kw_only=True)
    class Mutable:
        a: int

    with pytest.raises(TypeError, match="frozen dataclass"):
        fast_frozen_init(Mutable)


@pytest.mark.parametrize("model_id", MODELS)
def test_plan_base_sums_equal_the_profiles(model_id):
    # _PlanBase.bytes_per_sequence: one pass for the three profiles, the same integers as each profile's own sum.
    model = model_spec(model_id)
    for tp in (1, 2, 8):
        for block in (1, 16, 64):
            base = plan_base(model, H100.framework_memory_bytes, PlanRequest(context_len=1, num_gpus=tp,
                                                                               block_size=block), H100.id)
            for n in (0, 1, 15, 16, 17, 4095, 4096, 4097, 131072, 1 << 20):
                assert list(base.bytes_per_sequence(n)) == [base.paged_gpu.bytes_per_sequence(n),
                                                            base.exact_gpu.bytes_per_sequence(n),
                                                            base.exact_1.bytes_per_sequence(n)]


def test_fitting_messages_are_what_diagnose_says_of_a_fitting_request():
    model = model_spec("meta-llama/Meta-Llama-3-8B")  # 32 heads, 8 KV heads
    for tp in (1, 3, 16):  # splits; cannot split the heads; more GPUs than KV heads (a note)
        base = plan_base(model, H100.framework_memory_bytes, PlanRequest(context_len=4096, num_gpus=tp), H100.id)
        result = plan(model, H100.framework_memory_bytes, PlanRequest(context_len=4096, num_gpus=tp), H100.id)
        assert (result.reasons, result.suggestions, result.notes) == base.fitting_messages
    assert base.fitting_messages[2] and "KV heads are replicated" in base.fitting_messages[2][0]


@pytest.mark.parametrize("model_id", MODELS)
def test_full_attention_terms_equal_the_layout_sums(model_id):
    # _StaticPlan.full_attention: ceil(L / B) blocks per group and per layer, as KVLayout sums them.
    model = model_spec(model_id)
    for engine in ("vllm", "vllm-v0.11", "vllm-v0"):
        if engine == "vllm-v0" and model_id == "ai21labs/Jamba-v0.1":
            continue  # V0 refuses attention + Mamba hybrids (a ValueError)
        for tp in (1, 2):
            request = EngineRequest(engine=engine, tensor_parallel_size=tp, max_model_len=4096, gpu_name=H100.name)
            st = _static_plan(model, H100.framework_memory_bytes, request, engine_profile(engine), 8192, 256)
            if st.full_attention is None:
                continue
            block, groups, per_block = st.full_attention
            for length in (1, 15, 16, 17, 8192, 131071):
                blocks = ceil_div(length, block)
                assert blocks * groups == st.layout.blocks_per_request(length, 8192)
                assert blocks * per_block == st.layout.needed_bytes(length, 8192)


def test_two_decimals_read_back_equal_round():
    # plan_vllm takes round(conc, 2) as float(f"{conc:.2f}"): both round the float's exact value (dtoa mode 3).
    for numerator in range(0, 5000, 7):
        for denominator in (1, 3, 7, 8, 40, 137, 1024, 1161):
            conc = numerator / denominator
            assert float(f"{conc:.2f}") == round(conc, 2)
    for conc in (0.005, 0.015, 0.125, 0.375, 1.005, 2.675, 284.245, 1e-9):  # halves and near-halves
        assert float(f"{conc:.2f}") == round(conc, 2)


def test_a_warm_request_is_still_checked_for_what_its_memo_key_leaves_out():
    # plan() validates a knob set once (its _PlanBase entry); plan_engine() once per checked request.
    # What the keys leave out (context_len / batch_size, max_model_len) is checked on every call.
    model, memory = cold(model_spec("meta-llama/Meta-Llama-3-8B")), H100.framework_memory_bytes
    plan(model, memory, PlanRequest(context_len=4096), H100.id)
    for bad, message in (({"context_len": 0}, "context_len must be at least 1"),
                         ({"context_len": (1 << 24) + 1}, "context_len must be at most"),
                         ({"batch_size": 0}, "batch_size must be at least 1"),
                         ({"num_gpus": 0}, "num_gpus must be at least 1"),
                         ({"kv_cache_dtype": "fp7"}, "unknown KV-cache dtype")):
        with pytest.raises(ValueError, match=message):
            plan(model, memory, PlanRequest(**{"context_len": 4096, **bad}), H100.id)
    with pytest.raises(ValueError, match="gpu_memory_bytes must be > 0"):
        plan(model, 0, PlanRequest(context_len=4096), H100.id)

    request = EngineRequest(engine="vllm", max_model_len=4096, gpu_name=H100.name)
    assert plan_engine(model, memory, request).starts
    with pytest.raises(ValueError, match="max_model_len must be at least 1"):
        plan_engine(model, memory, replace(request, max_model_len=0))
    with pytest.raises(ValueError, match="tensor_parallel_size must be at least 1"):
        plan_engine(model, memory, replace(request, tensor_parallel_size=0))
    with pytest.raises(ValueError, match="does not offer KV-cache dtype"):
        plan_engine(model, memory, replace(request, engine="llama.cpp", kv_cache_dtype="fp8"))
    # another spelling of the engine, twice: the checked request keeps the resolved name
    for _ in range(2):
        spelled = plan_engine(model, memory, replace(request, engine="vLLM", max_model_len=8192))
        assert spelled == plan_engine(cold(model), memory, replace(request, max_model_len=8192))
    # heads that four GPUs split, then three that cannot: the second is refused at the config check, warm or cold
    for tp, refused in ((4, False), (3, True), (3, True)):
        result = plan_engine(model, memory, replace(request, tensor_parallel_size=tp))
        assert result.stopped_at_config_check is refused


def test_namespaced_memos_are_kept_for_the_most_recent_models_only():
    """The Find search's memo (``model_memo(model, "find")``) holds every setup it planned; only the
    :data:`~planner.model.memo.MAX_NAMESPACED_MODELS` most recently searched models keep theirs, so stepping
    through the catalog cannot grow the server by every model's search. The plain memo is not affected."""
    from planner.model import memo as memo_module

    class Model:  # weak-referenceable stand-in for a ModelSpec
        pass

    models = [Model() for _ in range(memo_module.MAX_NAMESPACED_MODELS + 2)]
    memos = []
    for m in models:
        memo = memo_module.model_memo(m, "find")
        memo["setup"] = id(m)
        memo_module.model_memo(m)["plain"] = id(m)
        memos.append(memo)
    kept = memo_module.MAX_NAMESPACED_MODELS
    assert [bool(m) for m in memos] == [False, False] + [True] * kept  # the two oldest were emptied
    assert memo_module.model_memo(models[-1], "find") is memos[-1]  # a recent one is the same dict
    assert memo_module.model_memo(models[0], "find") == {}  # an emptied one starts afresh
    assert all(memo_module.model_memo(m)["plain"] == id(m) for m in models)  # the shared memo keeps its values
