"""Property tests over planner inputs (hypothesis): invariants that must always hold."""

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.budget import PlanRequest, plan
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.units import GiB
from tests.factories import dense_model

heads = st.sampled_from([1, 2, 4, 8, 16, 32])


@st.composite
def models(draw):
    num_attention_heads = draw(heads)
    kv = draw(st.sampled_from([h for h in (1, 2, 4, 8, 16, 32) if h <= num_attention_heads]))
    window = draw(st.one_of(st.none(), st.integers(1, 1 << 16)))
    return dense_model(
        num_layers=draw(st.integers(1, 8)), num_attention_heads=num_attention_heads, num_key_value_heads=kv,
        head_dim=draw(st.sampled_from([32, 64, 96, 128, 256])), hidden_size=num_attention_heads * 64,
        sliding_window=window, max_position_embeddings=draw(st.one_of(st.none(), st.integers(1, 1 << 20))),
    )


requests = st.builds(
    PlanRequest,
    context_len=st.integers(1, 1 << 20),
    batch_size=st.integers(1, 4096),
    weight_dtype=st.sampled_from(tuple(WEIGHT_DTYPES)),
    kv_cache_dtype=st.sampled_from(KV_CACHE_DTYPE_CHOICES),
    num_gpus=st.sampled_from([1, 2, 4, 8, 16]),
    gpu_memory_utilization=st.floats(0.05, 1.0),
    block_size=st.sampled_from([1, 8, 16, 32, 64, 128, 256]),
    overhead_bytes=st.one_of(st.none(), st.integers(0, 8 * GiB)),
)
memory = st.integers(1, 256 * GiB)


@settings(max_examples=200, deadline=None)
@given(models(), requests, memory)
def test_no_negative_sizes_and_capacity_within_budget(model, request, mem):
    result = plan(model, mem, request)
    for key, value in result.to_dict().items():
        if isinstance(value, int) and key != "kv_cache_budget_bytes":
            assert value >= 0, key
    if result.kv_cache_budget_bytes > 0:
        assert result.kv_cache_capacity_tokens * result.kv_cache_bytes_per_token_per_gpu <= result.kv_cache_budget_bytes
        assert result.kv_cache_bytes_in_use <= result.kv_cache_budget_bytes
    assert result.fits == (not result.reasons)


@settings(max_examples=150, deadline=None)
@given(models(), requests, memory, st.integers(1, 1 << 16))
def test_monotonic_in_context_and_batch(model, request, mem, extra):
    base = plan(model, mem, request)
    longer = plan(model, mem, PlanRequest(**{**request.__dict__, "context_len": request.context_len + extra}))
    bigger = plan(model, mem, PlanRequest(**{**request.__dict__, "batch_size": request.batch_size + 1}))
    assert longer.kv_cache_bytes_per_sequence >= base.kv_cache_bytes_per_sequence
    assert longer.max_concurrent_sequences <= base.max_concurrent_sequences
    assert bigger.kv_cache_bytes_total >= base.kv_cache_bytes_total
    assert bigger.max_context_len <= base.max_context_len


@settings(max_examples=150, deadline=None)
@given(models(), requests, memory)
def test_gqa_never_costs_more_than_mha(model, request, mem):
    mha = dense_model(
        num_layers=model.num_layers, num_attention_heads=model.num_attention_heads,
        num_key_value_heads=model.num_attention_heads, head_dim=model.head_dim,
        hidden_size=model.hidden_size,
        layers=tuple(
            type(layer)(**{**layer.__dict__, "num_key_value_heads": model.num_attention_heads})
            for layer in model.layers
        ),
    )
    gqa_result = plan(model, mem, request)
    mha_result = plan(mha, mem, request)
    assert gqa_result.kv_cache_bytes_per_token <= mha_result.kv_cache_bytes_per_token
    assert gqa_result.kv_cache_bytes_per_sequence <= mha_result.kv_cache_bytes_per_sequence


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-10, 0) | st.integers(1 << 40, 1 << 41),
    st.sampled_from(["context_len", "batch_size", "num_gpus", "block_size"]),
)
def test_bad_values_raise_only_value_error_with_message(value, field):
    request_kwargs = {"context_len": 8, field: value}
    model = dense_model()
    try:
        plan(model, 80 * GiB, PlanRequest(**request_kwargs))
    except ValueError as exc:
        assert field in str(exc)
