"""The ``python -m planner`` flags that name the sidebar's model and GPU, the custom ones included.

The sidebar's custom model and GPU have the id ``custom``, which the command line does not know (QA, stop 42:
Home's snippet for a pasted config.json read ``--model custom``, refused with "unknown model id 'custom'").
The CLI takes a model of one's own as a file (``--config PATH``, ``--gguf PATH``; planner/cli/entry.py) and a
GPU of one's own as its memory (``--gpu-memory-gib``, ``--gpu-name``; planner/cli/args.py), so the snippet
names those, with a comment line that says which file to save where.
"""

from __future__ import annotations

import shlex

from model_catalog.custom import CustomModel
from planner.units import GiB
from ui import catalog
from ui.format import format_decimal

CONFIG_FILE = "config.json"
"""The file name the snippet asks a pasted or Hub-read config to be saved as."""

GGUF_FILE = "model.gguf"
"""The placeholder for the user's own GGUF file (the panel keeps only its header, not its path)."""


def model_flag(model: CustomModel) -> tuple[str, str | None]:
    """The flag that gives the CLI this custom model, and the comment line saying what file it needs.

    - Hub (source ``hf:REPO@SHA``): ``--model REPO`` when the catalog has the repo (same numbers), else
      ``--config config.json`` with "save REPO's config.json" (the CLI's ``--model`` reads the catalog only).
    - GGUF (reading ``gguf``): ``--gguf model.gguf`` (its header is enough).
    - Uploaded (``file:NAME``) or pasted config: ``--config NAME`` / ``--config config.json``.
    A repository's ``hf_quant_config.json`` beside config.json is read by ``--config`` on its own
    (model_catalog.custom ``load_config_file``), so the comment asks for it too when the model has one.
    """
    source = model.source
    beside = " with its hf_quant_config.json beside it" if model.hf_quant_config is not None else ""
    if model.reading == "gguf":
        return (f"--gguf {GGUF_FILE}", f"# {GGUF_FILE}: your .gguf file (its header, the first 32 MB, is "
                                       "enough), then:")
    if source.startswith("hf:"):
        repo, _, revision = source.removeprefix("hf:").partition("@")
        if catalog.entry_id(repo) is not None:
            return f"--model {repo}", None
        at = f" (revision {revision})" if revision else ""
        return (f"--config {CONFIG_FILE}", f"# Save {repo}'s config.json{at} as {CONFIG_FILE}{beside}, then:")
    if source.startswith("file:"):
        name = source.removeprefix("file:")
        return (f"--config {shlex.quote(name)}", f"# Run where {name} (the uploaded file) is{beside}:")
    return (f"--config {CONFIG_FILE}", f"# Save the pasted config.json as {CONFIG_FILE}{beside}, then:")


def gpu_flag(gpu) -> str:
    """``--gpu-memory-gib`` (framework-visible memory, GiB) and ``--gpu-name`` for a custom GPU."""
    return f"--gpu-memory-gib {format_decimal(gpu.framework_memory_bytes / GiB)} --gpu-name {shlex.quote(gpu.name)}"


def source_flags(model_id: str, gpu_id: str) -> tuple[str, str, tuple[str, ...]]:
    """(model flag, GPU flag, comment lines) for the sidebar's model and GPU ids; catalog ids pass through."""
    from ui import custom_panel  # noqa: PLC0415 - the panel imports the sidebar module that imports this

    choice = custom_panel.current_choice() if catalog.CUSTOM_ID in (model_id, gpu_id) else None
    model, comments = f"--model {model_id}", []
    if model_id == catalog.CUSTOM_ID and choice is not None and choice.model is not None:
        model, note = model_flag(choice.model)
        comments += [note] if note else []
    gpu = f"--gpu {gpu_id}"
    if gpu_id == catalog.CUSTOM_ID and choice is not None and choice.gpu is not None:
        gpu = gpu_flag(choice.gpu)
    return model, gpu, tuple(comments)
