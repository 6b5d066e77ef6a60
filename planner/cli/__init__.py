"""``python -m planner``: the command line and its subcommands.

* :mod:`~planner.cli.entry`: the parser, ``models`` / ``gpus`` / ``plan`` / ``verify`` and :func:`main`.
* :mod:`~planner.cli.engine`: the ``--engine`` flags of ``plan`` and their JSON.
* :mod:`~planner.cli.traffic`: ``allocation`` and ``find``.
* :mod:`~planner.cli.scale`: the data / expert / context parallel flags of ``plan``, ``disagg`` and ``deploy``.
* :mod:`~planner.cli.args`: argparse value types with one-line errors.

The flags and JSON keys are a public contract. This is the edge that reads the catalog:
it may import :mod:`model_catalog` (inside functions, so ``--help`` stays fast) and every
planner module; never Streamlit.
"""

from planner.cli.entry import build_parser, main, run_plan

__all__ = ["build_parser", "main", "run_plan"]
