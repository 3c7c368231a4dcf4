"""The call-site check of ``backend_bs <= padded_bs`` (capproof/engines/sglang/graph_calls.py) on small
source trees laid out as SGLang's (``sglang/srt/...``): a batch from the capture list is checked, a
batch from anywhere else is listed unchecked with its site, and a receiver that provably holds
another class is not a site of the backend."""

from __future__ import annotations

import textwrap

from capproof.engines.sglang.graph_calls import backend_bs_sites, relevant_sites

BACKEND = """
class AttentionBackend:
    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        pass


class MyBackend(AttentionBackend):
    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.buf = torch.zeros(max_bs)

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        bs = forward_batch.batch_size
        self.buf[:bs].zero_()


class OtherBackend(AttentionBackend):
    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        pass
"""

RUNNER = """
class Runner:
    def __init__(self, attn_backend):
        self.attn_backend = attn_backend
        self.capture_bs = [1, 2, 4]
        self.max_bs = max(self.capture_bs)
        self.attn_backend.init_cuda_graph_state(self.max_bs, self.max_bs)

    def capture(self):
        for bs in reversed(self.capture_bs):
            self.capture_one_shape(bs)

    def capture_one_shape(self, size):
        forward_batch = ForwardBatch(batch_size=size)
        self.attn_backend.init_forward_metadata_out_graph(forward_batch, in_capture=True)

    def replay(self, forward_batch):
        raw_bs = forward_batch.batch_size
        bs = self._pad_to_bucket(raw_bs, self.capture_bs)
        view = SimpleNamespace(batch_size=bs)
        self.attn_backend.init_forward_metadata_out_graph(view)
"""

EAGER = """
class EagerCaller:
    def __init__(self, backend):
        self.backend = backend

    def run_eager(self, forward_batch):
        view = SimpleNamespace(batch_size=forward_batch.batch_size)
        self.backend.init_forward_metadata_out_graph(view)
"""

OTHER_WRAPPER = """
class Wrapper:
    def __init__(self):
        self.inner = OtherBackend()

    def go(self, forward_batch):
        self.inner.init_forward_metadata_out_graph(SimpleNamespace(batch_size=forward_batch.batch_size))
"""


def _tree(tmp_path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = tmp_path / "sglang" / "srt" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_capture_and_padded_replay_are_checked(tmp_path):
    root = _tree(tmp_path, {"layers/attention/my_backend.py": BACKEND, "runner.py": RUNNER})
    sites = backend_bs_sites(root, "MyBackend")
    assert sites["not checked"] == []
    assert len(sites["checked"]) == 2
    assert any("runner.py:15 capture_one_shape" in s for s in sites["checked"])
    assert any("runner.py:21 replay" in s for s in sites["checked"])


def test_an_eager_batch_is_an_unchecked_site(tmp_path):
    root = _tree(
        tmp_path,
        {"layers/attention/my_backend.py": BACKEND, "runner.py": RUNNER, "eager.py": EAGER},
    )
    sites = backend_bs_sites(root, "MyBackend")
    assert len(sites["checked"]) == 2
    assert len(sites["not checked"]) == 1
    (line,) = sites["not checked"]
    assert line.startswith("sglang/srt/eager.py:8 run_eager -> init_forward_metadata_out_graph")
    assert "no call of run_eager" in line


def test_a_receiver_holding_another_class_is_not_a_site(tmp_path):
    root = _tree(
        tmp_path,
        {"layers/attention/my_backend.py": BACKEND, "runner.py": RUNNER, "wrapper.py": OTHER_WRAPPER},
    )
    kept = {(rel, call.lineno) for rel, call, _ in relevant_sites(root, "MyBackend", "init_forward_metadata_out_graph")}
    assert ("sglang/srt/wrapper.py", 7) not in kept
    assert ("sglang/srt/runner.py", 15) in kept
    assert backend_bs_sites(root, "MyBackend")["not checked"] == []


def test_a_runner_without_its_max_bs_handed_to_the_backend_is_unchecked(tmp_path):
    runner = RUNNER.replace("self.attn_backend.init_cuda_graph_state(self.max_bs, self.max_bs)", "pass")
    root = _tree(tmp_path, {"layers/attention/my_backend.py": BACKEND, "runner.py": runner})
    sites = backend_bs_sites(root, "MyBackend")
    assert sites["checked"] == []
    assert len(sites["not checked"]) == 2
    assert all("init_cuda_graph_state" in s for s in sites["not checked"])


ATTR_RUNNER = """
class Runner:
    def __init__(self, attn_backend):
        self.attn_backend = attn_backend
        self.capture_bs = [1, 2, 4]
        self.max_bs = max(self.capture_bs)
        self.attn_backend.init_cuda_graph_state(self.max_bs, self.max_bs)
        self.bs = 0

    def load_batch(self, forward_batch):
        raw_bs = forward_batch.batch_size
        bs = self._pad_to_bucket(raw_bs, self.capture_bs)
        if bs != raw_bs:
            forward_batch.batch_size = bs
        self.attn_backend.init_forward_metadata_out_graph(forward_batch)
        forward_batch.batch_size = raw_bs
        self.bs = bs

    def replay_again(self):
        self.attn_backend.init_forward_metadata_out_graph(SimpleNamespace(batch_size=self.bs))
"""

FOREIGN_STORE = """
def tweak(runner):
    runner.bs = 4096
"""


def test_a_padded_set_and_a_self_attribute_are_followed(tmp_path):
    root = _tree(tmp_path, {"layers/attention/my_backend.py": BACKEND, "runner.py": ATTR_RUNNER})
    sites = backend_bs_sites(root, "MyBackend")
    # load_batch: batch_size set to the padded bs under `if bs != raw_bs` (else it already is bs),
    # the restore after the call does not reach it; replay_again: self.bs, stored only as 0 or bs
    assert sites["not checked"] == []
    assert len(sites["checked"]) == 2


def test_a_store_of_the_attribute_elsewhere_leaves_it_unchecked(tmp_path):
    root = _tree(
        tmp_path,
        {"layers/attention/my_backend.py": BACKEND, "runner.py": ATTR_RUNNER, "tweak.py": FOREIGN_STORE},
    )
    sites = backend_bs_sites(root, "MyBackend")
    assert len(sites["checked"]) == 1
    (line,) = sites["not checked"]
    assert line.startswith("sglang/srt/runner.py:20 replay_again") and "tweak.py:3" in line


OTHER_OBJECTS = """
class Record:
    pass


class Cache:
    def __init__(self):
        self.bs = 8192  # another class's own attribute


class Holder:
    def __init__(self):
        self.info = Record()

    def refresh(self, n):
        info = self.info
        info = self._touch(info)  # returns its argument: still self.info's Record
        info.bs = n  # self.info only ever holds a Record
        rec = Record()
        rec.bs = n

    def _touch(self, info):
        return info
"""

MIXIN = """
class SizeMixin:
    def resize(self):
        self.bs = 4096


class MixedRunner(SizeMixin, Runner):
    pass
"""


def test_stores_into_objects_of_other_classes_do_not_block_a_self_attribute(tmp_path):
    """``X.bs = ...`` where X is known to be another class's object (``self`` of an unrelated class,
    a local or ``self.Y`` bound only to another class's constructor) cannot write the runner's
    ``self.bs``; a mixin of a subclass of the runner can, and a parameter is not known."""
    files = {"layers/attention/my_backend.py": BACKEND, "runner.py": ATTR_RUNNER, "other.py": OTHER_OBJECTS}
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert sites["not checked"] == [] and len(sites["checked"]) == 2
    sites = backend_bs_sites(_tree(tmp_path / "b", {**files, "mixin.py": MIXIN}), "MyBackend")
    (line,) = sites["not checked"]
    assert "mixin.py:4 self.bs stored otherwise" in line
    sites = backend_bs_sites(_tree(tmp_path / "c", {**files, "tweak.py": FOREIGN_STORE}), "MyBackend")
    (line,) = sites["not checked"]
    assert "tweak.py:3" in line
    # a struct field of that name may be set from a constructor: self.info is then not known
    struct = "class Slot:\n    info: object = None\n"
    sites = backend_bs_sites(_tree(tmp_path / "d", {**files, "struct.py": struct}), "MyBackend")
    (line,) = sites["not checked"]
    assert "other.py:18 info.bs stored otherwise" in line
    # a helper that may return another object: the local is not known
    other = OTHER_OBJECTS.replace("        return info", "        return self.runner")
    sites = backend_bs_sites(_tree(tmp_path / "e", {**files, "other.py": other}), "MyBackend")
    (line,) = sites["not checked"]
    assert "other.py:18 info.bs stored otherwise" in line


EAGER_BASE = """
class AttentionBackend:
    def init_forward_metadata(self, forward_batch):
        self.init_forward_metadata_out_graph(forward_batch)

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        pass


class MyBackend(AttentionBackend):
    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.buf = torch.zeros(max_bs)

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        bs = forward_batch.batch_size
        self.buf[:bs].zero_()
"""


def test_the_base_class_eager_entry_is_a_site_unless_overridden(tmp_path):
    root = _tree(tmp_path, {"layers/attention/my_backend.py": EAGER_BASE, "runner.py": RUNNER})
    kept = {(rel, call.lineno) for rel, call, _ in relevant_sites(root, "MyBackend", "init_forward_metadata_out_graph")}
    assert ("sglang/srt/layers/attention/my_backend.py", 4) in kept
    overridden = EAGER_BASE + "\n    def init_forward_metadata(self, forward_batch):\n        pass\n"
    root2 = _tree(tmp_path / "b", {"layers/attention/my_backend.py": overridden, "runner.py": RUNNER})
    kept2 = {
        (rel, call.lineno) for rel, call, _ in relevant_sites(root2, "MyBackend", "init_forward_metadata_out_graph")
    }
    assert ("sglang/srt/layers/attention/my_backend.py", 4) not in kept2
