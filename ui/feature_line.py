"""The one line each page shows about the serving features it applies (issue 27, "one shared link, four user counts").

A shared link carries LoRA slots, speculative decoding, images / videos per request and a host
KV tier. Every page that shows users plans with the same :class:`planner.serving.ServingFeatures`
(:func:`ui.serving.serving_inputs`) and says so in one caption, or names what it leaves out and
why; the Engine page also says how its engine counts the extra token slots
(:func:`engine_line`). The arithmetic is the planner's (:func:`planner.serving.summary.sequence_extras`,
:func:`planner.gpu_compare.profile_inversions`); this module only words it.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from planner.budget import PlanRequest
from planner.model import ModelSpec
from planner.serving import ServingFeatures
from planner.serving.summary import sequence_extras
from ui.format import count_noun, format_bytes, format_int, md_message, md_text
from ui.serving import OFF, SWITCHES, _is_on, text_only_on
from ui.tiles import Tile, show_tiles


METHOD_NAMES = {"draft_model": "a draft model", "eagle": "EAGLE", "eagle3": "EAGLE-3", "mtp": "MTP",
                "ngram": "n-gram lookup"}
"""``speculative_method`` -> the name the line gives it."""

HOST_TIER_KEYS = ("kv_offloading_size", "swap_space_gib")
"""Link keys of the host tier (Home and Engine read them; it changes no user count on one GPU)."""


def feature_phrases(features: ServingFeatures | None, model_id: str | None = None) -> list[str]:
    """The switched-on features in the field's terms, one phrase each: ``["4 LoRA slots (rank 16)",
    "EAGLE-3 (1 draft token)", "2 images per request"]``; a text-only server (the sidebar switch, a model with a
    tower) adds ``"text only"``, a vision model under vLLM without media inputs vLLM's default encoder profile."""
    out: list[str] = []
    if features is not None and features.lora is not None:
        out.append(f"{count_noun(features.lora.max_loras, 'LoRA slot')} (rank {features.lora.max_lora_rank})")
    spec = features.speculative if features is not None else None
    if spec is not None:
        draft = f" {spec.draft_model_id}" if spec.draft_model_id else ""
        out.append(f"{METHOD_NAMES.get(spec.method, spec.method)}{draft} "
                   f"({count_noun(spec.num_speculative_tokens, 'draft token')})")
    mm = features.multimodal if features is not None else None
    if mm is not None and mm.engine_default:  # planner.serving.features.with_engine_defaults
        out.append("vLLM's default encoder profile (no image per request)")
    if mm is not None and mm.images_per_request:
        out.append(f"{count_noun(mm.images_per_request, 'image')} per request "
                   f"({format_int(mm.image_width)} x {format_int(mm.image_height)} px)")
    if mm is not None and mm.videos_per_request:
        out.append(f"{count_noun(mm.videos_per_request, 'video')} per request ({format_int(mm.video_frames)} frames)")
    off = features.offload if features is not None else None
    if off is not None and off.kv_offloading_size is not None:
        out.append(f"KV offload to host ({off.kv_offloading_size:g} GiB)")
    if off is not None and off.swap_space is not None:
        out.append(f"swap space ({off.swap_space:g} GiB per GPU)")
    if text_only_on(model_id):
        out.append("text only (no vision tower)")
    return out


def _extras_text(features: ServingFeatures | None) -> str:
    """``"its text + 2,052 image tokens + 2 lookahead slots"``, from :func:`sequence_extras`; empty without
    extras."""
    extras = sequence_extras(features)
    parts = []
    if extras.media_tokens:
        parts.append(f"{format_int(extras.media_tokens)} image/video tokens" if features.multimodal.videos_per_request
                     else f"{count_noun(extras.media_tokens, 'image token')}")
    if extras.lookahead_tokens:
        parts.append(count_noun(extras.lookahead_tokens, "lookahead slot"))
    return " + ".join(["its text", *parts]) if parts else ""


def link_stages(num_gpus: int, models: Sequence = ()) -> int:
    """The pipeline stages a page that plans ``num_gpus`` GPUs per replica with the budget plans: Home's rule
    (:func:`ui.engine_home.budget_stages` of :func:`ui.engine_home.link_layout`): the link's
    ``pipeline_parallel_size`` where it splits the GPUs into stages of ``num_gpus // pipeline_parallel_size``
    tensor-parallel GPUs, else 1 (no stages, a value that does not divide the GPUs, one GPU, a bad value). The
    planner plans them with :func:`planner.pipeline.plan_pipeline` (layers per stage: vLLM ``get_pp_indices`` in
    vllm/distributed/utils.py; users the smallest stage's: ``get_kv_cache_configs`` in
    vllm/v1/core/kv_cache_utils.py)."""
    if not st.query_params.get("pipeline_parallel_size", ""):
        return 1
    from ui import engine_home  # noqa: PLC0415 - the engine inputs load with the links that carry them

    return engine_home.budget_stages(num_gpus, engine_home.link_layout(num_gpus)[0], models)  # ``models``: their
    # layers bound the stages


def show_stages_line(stages: int, num_gpus: int,
                     each: str = "the users those of the stage that holds the fewest") -> None:
    """Under a page's users line, where it plans the link's ``stages`` (:func:`link_stages` > 1): a caption saying it
    plans them as Home does, ``each``: what its figures are of the stages (Memory curves: ``"each curve the GPU of
    the stage that holds the most bytes"``); nothing for one stage."""
    if stages > 1:
        st.caption(md_message(
            f"Planned in the link's {stages} pipeline stages of {count_noun(num_gpus // stages, 'GPU')} "
            f"(`pipeline_parallel_size={stages}`), as Home and the Engine page plan them: each stage's layers on its "
            f"{count_noun(num_gpus // stages, 'tensor-parallel GPU')}, {each}."))


def link_pipeline_left_out(num_gpus: int, models: Sequence = ()) -> list[tuple[str, str]]:
    """``[(the split, why)]`` when the link splits the GPUs into pipeline stages (the Engine page's
    ``pipeline_parallel_size``) that this page, which plans ``num_gpus`` GPUs per replica with the budget, cannot
    plan (:func:`link_stages` is 1: the stages do not divide the GPUs, or one GPU), so it plans them as one
    tensor-parallel group; empty without stages, with stages it plans (:func:`show_stages_line` says so), or with a
    value the Engine page rejects (it says why)."""
    if not st.query_params.get("pipeline_parallel_size", "") or link_stages(num_gpus, models) > 1:
        return []
    from ui.engine import ENGINE_FIELDS  # noqa: PLC0415 - the engine inputs load with the pages that carry them
    from ui.traffic import link_whole_number  # noqa: PLC0415

    pp = link_whole_number("pipeline_parallel_size", ENGINE_FIELDS["pipeline_parallel_size"])
    if pp is None or pp <= 1:
        return []
    gpus = pp if num_gpus == 1 else num_gpus
    short = [m for m in models if len(m.layers) < pp]
    if short:  # vLLM gives every stage a layer (get_pp_indices)
        engines = (f"{short[0].model_id} has {count_noun(len(short[0].layers), 'layer')}, fewer than the stages, "
                   "which the Engine page refuses")
    elif gpus % pp:  # QA (stop 44): the line said the Engine page runs 3 stages, which it refuses for 8 GPUs
        engines = (f"the Engine page refuses {count_noun(gpus, 'GPU')} in {pp} stages and Home's engine panel plans "
                   "one tensor-parallel group")
    else:
        engines = f"the Engine page and Home's engine panel run {pp} stages of {gpus // pp}"
    return [(f"the pipeline split `pipeline_parallel_size={pp}`",
             f"this page plans the {count_noun(num_gpus, 'GPU')} per replica as one tensor-parallel group; {engines}")]


def link_left_out(read_keys: Sequence[str] = (), engine: str = "vllm",
                  num_gpus: int | None = None, scale: bool = True, models: Sequence = (),
                  dcp: tuple[int, str] | None = None, expert_parallel: bool = False) -> list[tuple[str, str]]:
    """``(what, why)`` for the serving inputs the link carries that this page does not apply.

    Args:
        read_keys: The host-tier keys (:data:`HOST_TIER_KEYS`) this page reads itself (Allocation: its own
            swap space); the others, when set, are named.
        engine: The engine whose rules the page counts users and prices the features under (the newest vLLM's
            budget; Find: the link's engine); a link's other ``engine`` is named, with or without features.
        num_gpus: The page's GPUs per replica when it plans them with the budget: the link's pipeline stages are
            then named (:func:`link_pipeline_left_out`).
        scale: Name the link's data / expert / context parallel flags (:func:`link_scale_left_out`); Find, which
            searches those layouts itself, passes False.
        dcp: :func:`link_dcp` on a page that applies the link's decode context parallel size (Concurrency).
        expert_parallel: The page plans the link's expert-parallel rank (:func:`ui.link_rank.link_rank`).
    """
    out: list[tuple[str, str]] = [] if num_gpus is None else link_pipeline_left_out(num_gpus, models)
    out += link_scale_left_out(dcp, expert_parallel) if scale else []
    carried = [k for k in HOST_TIER_KEYS if k not in read_keys and st.query_params.get(k, "")]
    if carried:
        out.append(("the host tier " + ", ".join(f"`{k}`" for k in carried),
                    "the GPU keeps its whole KV pool, so no user count changes; Home shows its host memory"))
    chosen = st.query_params.get("engine", "")
    from ui.budget_knobs import link_engine, overhead_profile  # noqa: PLC0415 - ui.budget_knobs reads the sidebar

    if chosen and chosen != engine and not (engine == "vllm" and overhead_profile(link_engine()) != engine):
        # a vLLM version's own overhead is the budget's (PlanRequest.for_engine): its users are this page's
        priced = ("prices the features" if any(_is_on(k) for k in (*SWITCHES, "speculative_method"))
                  else "counts the users")
        out.append((f"the link's engine ({md_text(chosen)})",
                    f"this page {priced} under {'the newest vLLM' if engine == 'vllm' else engine}'s rules; the "
                    f"Engine page and Home's engine panel under {md_text(chosen)}'s"))
    from ui.budget_knobs import not_taken  # noqa: PLC0415 - ui.budget_knobs reads the sidebar, which imports this

    return out + not_taken()  # vLLM's knobs under another link engine: no budget takes them


FEATURE_SWITCH_KEYS = ("enable_lora", "speculative_method", "speculative_config", "images_per_request",
                       "videos_per_request", "language_model_only", *HOST_TIER_KEYS)
"""Link keys that switch a serving feature on (:func:`link_features_left_out`)."""


SCALE_KEYS = ("decode_context_parallel_size", "enable_expert_parallel", "dp_size", "ep_size", "enable_dp_attention")
"""Link keys of the Engine page's data / expert / context parallel section (ui/scale_view.py) that change what one
GPU holds; the budget pages do not apply them (:func:`link_scale_left_out`), except Home and Concurrency, which
apply a valid ``decode_context_parallel_size`` (:func:`link_dcp`), and Home, Concurrency, Allocation, GQA savings and
Memory curves, whose budgets price one rank of a vLLM expert-parallel launch (:mod:`ui.home_scale`,
:mod:`ui.link_rank`)."""

DCP_KEY = "decode_context_parallel_size"
"""The link key of vLLM's ``-dcp`` (the Engine page's context parallel size)."""


def link_dcp(model: ModelSpec, num_gpus: int, stages: int = 1, gpu_ids: Sequence[str] = ("",),
             kv_cache_dtype: str = "auto") -> tuple[int, str]:
    """``(size, why not)``: the link's ``decode_context_parallel_size`` where the budget applies it to ``model`` on
    ``num_gpus`` GPUs per replica in ``stages`` pipeline stages on every GPU of ``gpu_ids``
    (:func:`planner.context_budget.check_dcp_budget`: it divides the tensor-parallel GPUs, within ``tp / kv_heads``,
    full-attention or MLA layers, an attention backend that returns the decode log-sum-exp), with ``""``; else
    ``(1, the planner's reason)``; ``(1, "")`` without the key or with a size of 1 or not a whole number (the Engine
    page says why)."""
    raw = st.query_params.get(DCP_KEY, "")
    if not raw.isdigit() or int(raw) <= 1:
        return 1, ""
    from planner.context_budget import check_dcp_budget  # noqa: PLC0415 - only a link with -dcp needs it

    try:
        for gpu_id in gpu_ids:
            check_dcp_budget(model, num_gpus, int(raw), pipeline_parallel_size=stages, gpu_id=gpu_id,
                             kv_cache_dtype=kv_cache_dtype)
    except ValueError as exc:
        return 1, str(exc)
    return int(raw), ""


def show_seqs_cap_line(max_num_seqs: int | None) -> None:
    """Under a page's users line, where the request carries an explicit ``max_num_seqs``: a caption saying that its
    users stop there (:func:`planner.budget.plan` and :func:`planner.sweep.concurrency_curve` count at most that many:
    vLLM's scheduler runs at most ``max_num_seqs`` requests at once, vllm/v1/core/sched/scheduler.py). QA (stop 46):
    GQA savings showed GQA and MQA at the same 64 users beside "MQA stores 32x less", with no word why."""
    if max_num_seqs:
        st.caption(md_message(
            f"Users at most {format_int(max_num_seqs)} (the link's `max_num_seqs={max_num_seqs}`): vLLM runs at most "
            "that many requests at once, whatever more the KV cache holds; a line or bar that stops there is the "
            "scheduler's limit, not memory's."))


def show_dcp_line(dcp: int) -> None:
    """Under a page's users line, where its budget applies the link's decode context parallel size (:func:`link_dcp`
    > 1): a caption saying so; nothing for 1."""
    if dcp > 1:
        st.caption(md_message(
            f"Each request's KV split over {count_noun(dcp, 'GPU')} (decode context parallel {dcp}, "
            f"`{DCP_KEY}={dcp}`), as the Engine page plans it: each GPU keeps 1/{dcp} of a request's tokens, so the "
            "users are those of that share in the same KV budget."))


def link_scale_left_out(dcp: tuple[int, str] | None = None, expert_parallel: bool = False) -> list[tuple[str, str]]:
    """``[(the carried keys, why)]`` when the link sets data / expert / context parallel flags (:data:`SCALE_KEYS`)
    that this page's budget does not apply: QA (stop 44), DeepSeek-V3.2 with ``decode_context_parallel_size=8``
    held 57 users on the Engine page (each request's KV split along tokens over 8 GPUs, vLLM ``-dcp``) and 7 on
    Home and Concurrency, which never named it; empty when none is set (a size of 1, a switch off).

    ``dcp``: :func:`link_dcp` on a page that applies the size: one it applies is not named (:func:`show_dcp_line`
    says so), one it cannot apply is named with the planner's reason; None (the other pages): named as left out.
    ``expert_parallel``: the page's budget applies the link's ``enable_expert_parallel`` (Home's rank budget,
    :func:`ui.home_scale.rank_budget`), so it is not named.
    """
    carried, out = [], []
    for key in SCALE_KEYS:
        value = st.query_params.get(key, "")
        if not value or value.lower() in ("false", OFF, "0", "1"):
            continue
        named = f"`{key}={value[:60].replace('`', chr(39))}`"  # a code span: no Markdown inside
        if key == DCP_KEY and dcp is not None and dcp[0] > 1:
            continue
        if key == "enable_expert_parallel" and expert_parallel:  # the budget spreads the experts as the launch does
            continue
        if key == DCP_KEY and dcp is not None and dcp[1]:
            out.append((named, f"this page's budget does not split the KV: {md_text(dcp[1])}"))
            continue
        carried.append(named)
    if carried:  # a -dcp the page applies splits the KV (show_dcp_line): only the experts stay whole
        kept = ("its share of every expert" if dcp is not None and dcp[0] > 1
                else "each request's whole KV and its share of every expert")
        out.insert(0, (", ".join(carried), "the Engine page's data / expert / context parallel section and Find plan "
                       f"them; this page's budget keeps {kept} on each GPU"))
    return out


def link_features_left_out(why: str, applied: Sequence[str] = (),
                           num_gpus: int | None = None, models: Sequence = (),
                           scale: bool = True, knobs: bool = False,
                           expert_parallel: bool = False) -> list[tuple[str, str]]:
    """``[(the carried features, why)]`` for a page that applies none of them (Memory curves), so its line names
    them; empty when the link switches none on.

    Args:
        why: Why the page leaves them out (``"these curves are the bare models' memory"``).
        applied: Keys of :data:`FEATURE_SWITCH_KEYS` the page does apply (Disaggregation: the text-only switch).
        num_gpus: As :func:`link_left_out` (Memory curves: its GPUs per replica).
        scale: Name the link's data / expert / context parallel flags (:func:`link_scale_left_out`).
            Disaggregation, whose sidebar reads them for its pools (or says the chosen engine does not), passes
            False: QA, its line said the budget "keeps each request's whole KV" for ``decode_context_parallel_size=8``
            while its decode pool ran ``-dcp 8``.
        knobs: Name the link's vLLM-only knobs its engine does not take (:func:`ui.budget_knobs.not_taken`): a page
            whose budget takes the link's knobs (Memory curves).
        expert_parallel: As :func:`link_left_out`.
    """
    carried = []
    for key in (k for k in FEATURE_SWITCH_KEYS if k not in applied):
        value = st.query_params.get(key, "")
        if value and value.lower() not in ("false", OFF, "0"):
            carried.append(f"`{key}={value[:60].replace('`', chr(39))}`")  # a code span: no Markdown inside
    stages = [*([] if num_gpus is None else link_pipeline_left_out(num_gpus, models)),
              *(link_scale_left_out(expert_parallel=expert_parallel) if scale else [])]
    if knobs:
        from ui.budget_knobs import not_taken  # noqa: PLC0415 - ui.budget_knobs reads the sidebar, which imports this

        stages += not_taken()
    return [("the serving features " + ", ".join(carried), why)] + stages if carried else stages


def users_line(features: ServingFeatures | None, model_id: str | None = None, *,
               left_out: Sequence[tuple[str, str]] = (), what: str = "Users", same_as: str = "as on Home") -> str:
    """The one line a page that counts users shows: which serving features its counts carry, what each sequence
    then holds, and what the page leaves out and why; empty when the link carries none.

    Example: ``Users with 4 LoRA slots (rank 16), EAGLE-3 (1 draft token), 2 images per request (1,024 x 1,024
    px): each sequence holds its text + 2,052 image tokens + 2 lookahead slots, as on Home.``

    Args:
        features: What :func:`serving_inputs` returned.
        model_id: The page's model (the text-only switch applies to a model with a tower).
        left_out: ``(what, why)`` pairs (:func:`link_left_out`).
        what: The line's subject (``"Users"``, ``"Every figure"``).
        same_as: The line's last words (Home's own line: empty).
    """
    phrases = feature_phrases(features, model_id)
    line = ""
    if phrases:
        line = f"{what} with {', '.join(phrases)}"
        extras = _extras_text(features)
        tail = f", {same_as}." if same_as else "."
        line += f": each sequence holds {extras}{tail}" if extras else tail
    if left_out:
        line += (" " if line else "") + "Left out: " + "; ".join(f"{w} ({why})" for w, why in left_out) + "."
    return line


def show_users_line(features: ServingFeatures | None, model_id: str | None = None, *,
                    left_out: Sequence[tuple[str, str]] = (), what: str = "Users", same_as: str = "as on Home") -> None:
    """:func:`users_line` as a caption (nothing when it is empty)."""
    line = users_line(features, model_id, left_out=left_out, what=what, same_as=same_as)
    if line:
        st.caption(line)


ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp", "trtllm": "TensorRT-LLM", "tgi": "TGI"}
"""Engine family -> its name in a sentence."""


def engine_line(result, features: ServingFeatures | None, model_id: str | None = None) -> str:
    """The Engine page's line: the features its figures carry and why its concurrency differs from the other
    pages' users (the engine counts the image tokens inside ``max_model_len`` and, like vLLM's print, leaves the
    lookahead slots out; :mod:`planner.serving.summary`); empty without features.

    Args:
        result: The page's :class:`planner.engines.types.EnginePlan`.
        features, model_id: As :func:`users_line`.
    """
    phrases = feature_phrases(features, model_id)
    if not phrases:
        return ""
    serving = result.serving or {}
    if not serving.get("modelled", True):
        return (f"Asked for {', '.join(phrases)}: not modelled for {result.engine}, so these figures are the bare "
                "model's.")
    line = f"Priced with {', '.join(phrases)}."
    extras = sequence_extras(features)
    if result.family == "transformers" or not extras.total_tokens:
        return line
    name = ENGINE_NAMES.get(result.family, result.engine)
    inside = []
    if extras.media_tokens and serving.get("multimodal"):
        verb = "counts" if extras.media_tokens == 1 else "count"
        inside.append(f"the {count_noun(extras.media_tokens, 'image token')} {verb} inside max_model_len")
    if extras.lookahead_tokens and serving.get("speculative"):
        verb = "is" if extras.lookahead_tokens == 1 else "are"
        inside.append(f"the {count_noun(extras.lookahead_tokens, 'lookahead slot')} per sequence {verb} left out")
    if inside:
        line += (f" {result.max_concurrency:.2f}x is {name}'s count of {format_int(result.max_model_len)}-token "
                 f"requests: {', and '.join(inside)}. Home, Concurrency, GQA savings, Allocation and Find count each "
                 f"user as {_extras_text(features)}.")
    return line


HEADLINE_PER_ROW = 3
"""GPU tiles per row in the Concurrency headline: at 1,280 px a fifth of the page cut names such as
"A100 SXM4 80GB" to "A100 SXM4 8..."; a third holds "RTX PRO 6000 Blackwell Server"."""


def link_replicas() -> int:
    """The link's ``data_parallel_size`` (the Engine page's and Home's replicas, the CLI's ``--data-parallel-size``),
    1 when absent or not a valid count (the Engine page names a bad one)."""
    from ui.engine import ENGINE_FIELDS  # noqa: PLC0415 - the Engine page's fields, only this page
    from ui.number_fields import link_number_problems  # noqa: PLC0415

    if link_number_problems(("data_parallel_size",), ENGINE_FIELDS):
        return 1
    return int(st.query_params.get("data_parallel_size") or 1)


def link_replica_share(request: PlanRequest, what: str) -> tuple[PlanRequest, str]:
    """``request`` for one of the link's ``data_parallel_size`` replicas (:func:`link_replicas`): its share of the
    batch, ``ceil(batch / replicas)`` (:func:`planner.scale.replicas.replica_batch`: each data-parallel engine has its
    own KV cache and the API server spreads the requests over them), as Home and ``python -m planner plan
    --data-parallel-size`` plan it; with the line that says so (``what``: what is planned at the share). One replica:
    ``(request, "")``."""
    from dataclasses import replace  # noqa: PLC0415 - only these pages

    from planner.scale.replicas import replica_batch  # noqa: PLC0415

    replicas = link_replicas()
    if replicas <= 1:
        return request, ""
    share = replica_batch(request.batch_size, replicas)
    return replace(request, batch_size=share), (
        f"Batch {request.batch_size:,} over the link's {replicas:,} data-parallel replicas: {what} one replica at its "
        f"share, {share:,} per replica (ceil({request.batch_size:,} / {replicas:,})), as Home and `plan "
        "--data-parallel-size` plan it; each replica has its own GPUs and KV cache.")


def concurrency_headline(model: ModelSpec, gpus: Sequence, request: PlanRequest,
                         pipeline_parallel_size: int = 1, decode_context_parallel_size: int = 1,
                         replicas: int = 1) -> None:
    """The Concurrency page's headline: users on each GPU at the plan's context (one :func:`planner.budget.plan`
    each, the serving features in ``request``; with ``pipeline_parallel_size`` stages, :func:`link_stages`,
    :func:`planner.pipeline.plan_pipeline`'s, as Home plans them), and one line per smaller card that holds more
    users than a larger one (with ``decode_context_parallel_size``, :func:`link_dcp`, each request's KV split over
    that many GPUs: :func:`planner.context_budget.plan_context_parallel`), with the profile-pass sizes that explain
    it (:func:`planner.gpu_compare.profile_inversions`). With ``replicas`` (:func:`link_replicas`) each tile is one
    replica's users and names what the replicas hold together (:func:`planner.scale.replicas.replicas_users_text`,
    Home's verdict and the CLI's ``fits`` line count a batch over them).

    Raises:
        ValueError: as :func:`planner.pipeline.plan_pipeline`.
    """
    from planner.gpu_compare import profile_inversions, profile_pass_tiers  # noqa: PLC0415 - only this page

    from planner.context_budget import plan_context_parallel  # noqa: PLC0415 - only this page

    plans = [(g, plan_context_parallel(model, g.framework_memory_bytes, request, g.id,
                                       decode_context_parallel_size=decode_context_parallel_size,
                                       pipeline_parallel_size=pipeline_parallel_size)) for g in gpus]
    from planner.scale.replicas import replicas_users_text  # noqa: PLC0415 - only this page

    per = f" per replica, of the link's {replicas:,} data-parallel replicas" if replicas > 1 else ""
    st.markdown(f"**Max concurrent sequences at {format_int(request.context_len)} tokens each{per}** (the plan's "
                "context length, in the sidebar)")
    show_tiles([Tile(g.name, format_int(p.max_concurrent_sequences),
                     f"{format_bytes(p.kv_cache_budget_bytes)} KV budget per GPU after "
                     f"{format_bytes(p.weights_bytes_per_gpu)} of weights and {format_bytes(p.overhead_bytes)} of "
                     "overhead" + (f"; {all_of}" if (all_of := replicas_users_text(p.max_concurrent_sequences,
                                                                                     replicas)) else ""),
                     literal=True)  # the label is a GPU name, maybe the user's: shown as typed
                for g, p in plans], HEADLINE_PER_ROW)
    names = {g.id: md_text(g.name) for g in gpus}  # inert Markdown: a custom GPU named **x** is not bold
    for inv in profile_inversions([(g.id, g.framework_memory_bytes, p) for g, p in plans], request):
        more, fewer = names[inv.more_gpu_id], names[inv.fewer_gpu_id]
        st.caption(
            f"{more} ({format_bytes(inv.more_memory_bytes)}) holds more users than {fewer} "
            f"({format_bytes(inv.fewer_memory_bytes)}): {format_int(inv.more_users)} vs "
            f"{format_int(inv.fewer_users)}, because vLLM's profile pass is sized by GPU class "
            f"({format_int(inv.more_profile_tokens)} tokens on {more}, {format_int(inv.fewer_profile_tokens)} on "
            f"{fewer}; the rule: {md_message(profile_pass_tiers(request.overhead_profile))}): overhead "
            f"{format_bytes(inv.more_overhead_bytes)} against {format_bytes(inv.fewer_overhead_bytes)}.")
