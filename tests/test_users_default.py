"""One link, one user count: Find a GPU setup and Disaggregation read the same URL key ``users`` (QA, stop 46).

``/Find_a_GPU_setup?model=...`` without ``users`` showed 200 users and ``/Disaggregation?model=...`` 256: two fields,
two defaults (ui/traffic.py, ui/scale_view.py). Both now take ``ui.number_fields.DEFAULT_USERS``.
"""

from __future__ import annotations

from tests.test_app import run_page
from ui import scale_view, traffic

LINK = {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-h100-sxm-80gb"}


def _users(page: str, link: dict) -> int:
    at = run_page(page, link)
    assert not at.exception
    return at.number_input(key="users").value


def test_the_users_fields_share_one_default():
    assert traffic.TRAFFIC_FIELDS["users"].default == scale_view.DISAGG_FIELDS["users"].default


def test_find_allocation_and_disaggregation_show_the_same_users_for_a_link_without_users():
    shown = {page: _users(page, LINK) for page in
             ("pages/7_Find_a_GPU_setup.py", "pages/8_Disaggregation.py", "pages/6_Allocation.py")}
    assert len(set(shown.values())) == 1, shown
    assert _users("pages/7_Find_a_GPU_setup.py", LINK | {"users": "64"}) == 64  # a link's users still win
