"""A launch's command blocks: one, or one per node where the engine runs a command on each (SGLang's ``--nnodes``).

SGLang spans nodes with the same command on every node but its ``--node-rank`` (python/sglang/srt/server_args.py
``nnodes``, ``node_rank``, ``dist_init_addr``): :func:`planner.engines.launch.node_commands` gives them, node 0's
first; the first node's address stands in as ``HEAD_IP``. A vLLM launch over nodes runs one command, on the first
node of its Ray cluster, and keeps its one block.
"""

from __future__ import annotations

import streamlit as st

from planner.engines.launch import SGLANG_HEAD, node_commands
from ui.format import format_command


def node_caption(rank: int, nodes: int) -> str:
    """The line above node ``rank``'s command of a launch over ``nodes`` nodes."""
    where = f" (the first: `{SGLANG_HEAD}` in every command is its address)" if rank == 0 else ""
    return f"Node {rank} of {nodes}{where}"


def launch_code(command: str, **code_args) -> None:
    """``command`` as a bash block, or each node's command under its caption (:func:`node_caption`) for a launch
    that runs one per node; ``code_args`` go to ``st.code`` (``wrap_lines``)."""
    commands = node_commands(command)
    for rank, one in enumerate(commands):
        if len(commands) > 1:
            st.caption(node_caption(rank, len(commands)))
        st.code(format_command(one), language="bash", **code_args)
