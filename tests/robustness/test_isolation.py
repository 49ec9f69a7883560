"""No page may change a model that every learner shares (st.cache_resource)."""
import hashlib

import pytest

from tests.robustness.drive import drive_all
from tfviz.config import PRESET_NAMES
from tfviz.ui.lessons import available


def state_hash(model) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict(keep_vars=False).items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    for name, buf in sorted(model.named_buffers()):
        h.update(name.encode())
        h.update(buf.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def fresh_hashes():
    import tfviz

    return {name: state_hash(tfviz.load(name).model) for name in PRESET_NAMES}


@pytest.mark.parametrize("model", ["gpt-tiny", "moe-tiny"])
@pytest.mark.parametrize("lesson", available(), ids=lambda l: l.url)
def test_driving_every_control_leaves_shared_models_untouched(app_page, fresh_hashes, lesson, model):
    from tfviz.ui.cache import get_bundle

    at = app_page(lesson.file, model=model)
    drive_all(at, max_runs=40)
    for name in PRESET_NAMES:
        shared = get_bundle(name)
        assert state_hash(shared.model) == fresh_hashes[name], f"{lesson.url} changed {name}"
        assert all(not p.requires_grad for p in shared.model.parameters())
