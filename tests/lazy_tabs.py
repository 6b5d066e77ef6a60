"""Opening a lazy tab (:func:`ui.views.lazy_tabs`) in an AppTest run."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Open the tab ``label`` of the tab bar ``key`` and rerun: ``lazy_tabs`` keeps the open label in
    ``st.session_state[key]``, and only that tab's content runs."""
    at.session_state[key] = label
    return at.run()
