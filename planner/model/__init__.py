"""What a model stores, independent of any engine.

* :mod:`~planner.model.layers`: one frozen spec per cache kind (full, sliding-window,
  chunked-local and MLA attention, recurrent state, no cache), each answering bytes
  per token and bytes per sequence.
* :mod:`~planner.model.params`: parameter tensors (:class:`~planner.model.params.ParamGroup`)
  and weight bytes per storage format.
* :mod:`~planner.model.dtypes`: storage formats of weights and caches.
* :mod:`~planner.model.spec`: :class:`~planner.model.spec.ModelSpec`, a model as layer
  specs plus parameter groups.
* :mod:`~planner.model.kv`: whole-model KV per token / per sequence, and the
  attention-design variants (MHA / GQA / MQA / MLA).

May import: the standard library and :mod:`planner.units` only (no engine, traffic,
catalog, Streamlit, pydantic or transformers code).
"""

from planner.model.spec import ModelSpec

__all__ = ["ModelSpec"]
