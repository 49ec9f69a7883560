"""tfviz.threads: the thread-name prefix, and torch's thread count lent to a block."""
from __future__ import annotations

import pytest
import torch

from tfviz.threads import THREAD_PREFIX, thread_name, torch_threads


def test_a_block_runs_with_its_count_and_the_old_one_comes_back_even_after_an_error():
    before = torch.get_num_threads()
    other = 2 if before != 2 else 1
    with torch_threads(other):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(other):
        assert torch.get_num_threads() == other
        raise RuntimeError("a training that fails")
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("count", [None, 0])
def test_no_count_leaves_torch_as_it_is(count):
    before = torch.get_num_threads()
    with torch_threads(count):
        assert torch.get_num_threads() == before
    assert torch.get_num_threads() == before


def test_every_thread_we_name_starts_with_the_one_prefix():
    assert thread_name("lab-3") == "tfviz-lab-3" and thread_name("x").startswith(THREAD_PREFIX)
