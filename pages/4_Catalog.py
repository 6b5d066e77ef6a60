"""Searchable tables of the model and GPU catalogs, with sources."""

import streamlit as st

from ui import catalog_table, data, engine_graphs, inputs, views
from ui.format import count_noun, md_text, shorten
from ui.link_guard import MAX_ID_CHARS

views.setup_page("Catalog", "📚",
                 "Every model and GPU the planner knows, with where each figure comes from.")
views.navigation()
query = st.text_input("Search models and GPUs (any part of the id, name, an alias or the release date)",
                      key="search", bind="query-params",
                      placeholder="e.g. llama 70b, qwen3.6, nvfp4, 2026, h100, mi300",
                      max_chars=MAX_ID_CHARS)
# after the page's one input, as every page shows its problems once its inputs are drawn (scripts/perf_floor.py
# stops a page's floor there)
inputs.show_problems(engine_graphs.link_graph_problems("the pages that plan use the version's default"))

words = data.search_words(query)


def model_table() -> None:
    """The catalog's models that match the search; a selected row's every field below (ui/catalog_table.py)."""
    caption = (f"{count_noun(models.num_rows, 'model')}. Parameters count all experts; attention kind from "
               "num_key_value_heads (MLA when the model caches a latent). Aliases are the variants with the same "
               "architecture (Instruct, Base, Thinking, -2507 ...) that resolve to the entry; a search found only "
               "by an alias lists the alias (\"alias of\" names the entry) with its own release date where the "
               "catalog has one, else the entry's. A date with a + is a quantized checkpoint's base model's (the "
               "checkpoint came out then or later). Select a row for all of its fields: name, aliases, attention, "
               "layers, KV heads, windows, experts, sources.")
    catalog_table.grid_with_details(models, key="models_table", columns=catalog_table.MODEL_COLUMNS,
                                    shown=catalog_table.MODEL_SHOWN, caption=caption, scope=words)


def gpu_table() -> None:
    """The catalog's GPUs that match the search; a selected row's every field below."""
    caption = (f"{count_noun(gpus.num_rows, 'GPU')}. Framework memory is what PyTorch reports "
               "(torch.cuda.mem_get_info total), the base of gpu_memory_utilization: measured in a public log, or "
               "estimated by the catalog's rule. Select a row for all of its fields: vendor, marketed memory, "
               "bandwidth, bf16 TFLOPS, host link, sources.")
    catalog_table.grid_with_details(gpus, key="gpus_table", columns=catalog_table.GPU_COLUMNS,
                                    shown=catalog_table.GPU_SHOWN, caption=caption, scope=words)


def verified_table() -> None:
    """Each model's parameter count and KV bytes checked against transformers."""
    scope = f"The search shows {verified.num_rows} of these rows. Whole catalog: " if words else ""
    st.caption(f"{scope}{data.verification_headline()}")  # QA: its counts read as the search's
    catalog_table.grid_with_details(
        verified, key="verification_table", columns=catalog_table.VERIFIED_COLUMNS, shown=catalog_table.VERIFIED_SHOWN,
        scope=words,
        caption="`python -m planner verify` builds each model from its config on the meta device (parameter count) "
                "and a shrunken copy with the same layer pattern, KV heads, head dims, windows, MLA ranks and "
                "recurrent-state shapes on CPU, runs prefill and decode with transformers' own cache, and sums every "
                "tensor the cache holds. Status \"by source\": transformers has no config class for the model type, "
                "so it is read as the architecture its config declares (the reason cites it), and the checks, where "
                "transformers can build that architecture, are of the mapped model. Select a row for all of its "
                "fields: transformers' count, the KV bytes of both, the reason.")


models = data.catalog_search("models", words)  # Arrow tables, kept per search (ui/data.py)
gpus = data.catalog_search("gpus", words)
verified = data.catalog_search("verified", words)
if not models.num_rows and not gpus.num_rows:
    st.warning(f"Nothing matches “{md_text(shorten(query))}”. Clear the search box to see every entry.")
else:
    st.caption(f"{count_noun(models.num_rows, 'model')} and {count_noun(gpus.num_rows, 'GPU')} match.")
views.open_tab_with_rows("catalog_section", {"Models": models.num_rows, "GPUs": gpus.num_rows,
                                             "Verified against transformers": verified.num_rows}, query)
# Only the open tab runs and draws (issue 27 speed: a search redraws one table, not three).
views.lazy_tabs({"Models": model_table, "GPUs": gpu_table, "Verified against transformers": verified_table},
                key="catalog_section")
