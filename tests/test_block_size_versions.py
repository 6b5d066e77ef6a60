"""``--block-size`` per vLLM version, and ``find`` / ``allocation`` refusing one as ``plan`` does (QA, stop 46).

``find --block-size 24`` exited 0 with "nothing fits", the refusal as a reason and "try" lines unrelated to it, where
``plan`` exits 2 with one line. The releases the older profiles model took ``--block-size`` from a ``BlockSize``
literal (argparse choices): 1, 8, 16, 32, 64, 128 in the 0.10 line (vllm/config.py ``CacheConfig.block_size``), 256
added by the v0.11 line (vllm/config/cache.py); the newest source takes any positive whole number. So
``--engine vllm-v0.10 --block-size 48`` and ``--engine vllm-v0.11 --block-size 512`` planned launches those releases
refuse (planner/engines/block_sizes.py).
"""

from __future__ import annotations

import pytest

from tests.test_block_size_rule import H100, LLAMA3, cli

FIND = ("find", "--model", LLAMA3, "--users", "10", "--prompt-len", "1000", "--output-len", "100")
ALLOCATION = ("allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "1000")


@pytest.mark.parametrize("command", [FIND, ALLOCATION], ids=lambda c: c[0])
def test_find_and_allocation_refuse_a_block_size_vllm_refuses_as_plan_does(command):
    code, out, err = cli(*command, "--block-size", "24")
    assert code == 2 and not out.strip(), out
    assert "vLLM refuses --block-size 24" in err and len(err.strip().splitlines()) == 1, err
    assert cli(*command, "--block-size", "32")[0] == 0


def test_find_under_sglang_takes_its_own_page_size():
    assert cli(*FIND, "--engine", "sglang", "--block-size", "24")[0] == 0


@pytest.mark.parametrize(("engine", "refused", "taken", "offered"), [
    ("vllm-v0.10", (48, 256, 512), (16, 128), "16, 32, 64 or 128"),
    ("vllm-v0.11", (48, 512), (16, 256), "16, 32, 64, 128 or 256"),
], ids=lambda v: v if isinstance(v, str) and v.startswith("vllm") else "")
def test_an_older_vllm_takes_only_its_releases_block_sizes(engine, refused, taken, offered):
    for size in refused:
        code, out, err = cli("plan", "--engine", engine, "--model", LLAMA3, "--gpu", H100, "--block-size", str(size))
        assert code == 2 and "starts" not in out, out
        assert f"vLLM refuses --block-size {size}" in err and offered in err, err
        assert len(err.strip().splitlines()) == 1, err
        if engine == "vllm-v0.10":
            assert "256" not in err.replace(str(size), ""), err  # that release had no 256
    for size in taken:
        assert cli("plan", "--engine", engine, "--model", LLAMA3, "--gpu", H100, "--block-size", str(size))[0] == 0


def test_the_newest_vllm_still_takes_any_multiple_of_16():
    assert cli("plan", "--engine", "vllm", "--model", LLAMA3, "--gpu", H100, "--block-size", "48")[0] == 0
    assert cli("plan", "--engine", "vllm", "--model", LLAMA3, "--gpu", H100, "--block-size", "512")[0] == 0


def test_a_link_block_size_the_links_vllm_version_refuses_is_a_link_problem():
    from tests.test_block_size_rule import _errors, _run

    at = _run("pages/5_Engine.py", {"model": LLAMA3, "engine": "vllm-v0.10", "block_size": "256"})
    errors = _errors(at).replace("\\_", "_")
    assert "block_size=256" in errors and "16, 32, 64 or 128" in errors, errors
    assert "block_size=256" not in _errors(_run("pages/5_Engine.py", {"model": LLAMA3, "block_size": "256"}))
