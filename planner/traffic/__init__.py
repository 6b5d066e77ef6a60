"""Traffic: how requests share the KV budget, and what setup holds them.

* :mod:`~planner.traffic.allocation`: naive vs paged vs paged + prefix caching.
* :mod:`~planner.traffic.prefix`: prefix sharing and parallel sampling.
* :mod:`~planner.traffic.workload`: request-length distributions and the growth model;
  :mod:`~planner.traffic.lengths_csv` reads them from a CSV;
  :mod:`~planner.traffic.simulation` is the seeded Monte-Carlo of concurrent users.
* :mod:`~planner.traffic.kvquant`: KV-cache dtypes side by side.
* :mod:`~planner.traffic.offload`: swapping KV to host memory.
* :mod:`~planner.traffic.reverse`: the reverse planner (cheapest setups for N users),
  with its request and result records in :mod:`~planner.traffic.find_types`, each setup as the engine
  sizes it (:mod:`~planner.traffic.find_engine`) and, for MoE / MLA models, its data + expert parallel,
  decode context parallel and disaggregated setups (:mod:`~planner.traffic.find_scale`).
* :mod:`~planner.traffic.throughput`: bandwidth / compute roofline estimates.

May import: :mod:`planner.model`, :mod:`planner.budget`, :mod:`planner.sweep`,
:mod:`planner.engines`, :mod:`planner.scale` (Find's setups at scale), :mod:`planner.units` and numpy;
never the catalog, Streamlit, pydantic or transformers.
"""
