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


# -- a helper's return for this call, a binding behind a returning if, receivers, off-CUDA, top-k --

HELPER_RUNNER = (
    RUNNER
    + """
    def _size(self, *, bs, num_tokens):
        return num_tokens if self.ragged else bs

    def replay_helper(self, forward_batch):
        if forward_batch.preplanned:
            bs = self._size(bs=self.stale, num_tokens=0)
            return
        bs = self._pad_to_bucket(forward_batch.batch_size, self.capture_bs)
        key = self._size(bs=bs, num_tokens=0)
        self.attn_backend.init_forward_metadata_out_graph(SimpleNamespace(batch_size=key))

    def elsewhere(self):
        return self._size(bs=self.stale, num_tokens=0)
"""
)


def test_a_helper_return_is_this_calls_argument_and_a_returning_branch_does_not_reach(tmp_path):
    """``_size(bs=..., num_tokens=0)`` returns one of its arguments: the site's batch is the argument
    of *that* call (a padded size or 0), not ``self.stale`` passed by other calls; the ``bs`` bound in
    the ``if`` that returns does not reach the use after it. Without the ``return`` it does."""
    root = _tree(tmp_path / "a", {"layers/attention/my_backend.py": BACKEND, "runner.py": HELPER_RUNNER})
    sites = backend_bs_sites(root, "MyBackend")
    assert sites["not checked"] == [] and len(sites["checked"]) == 3
    leaky = HELPER_RUNNER.replace(
        "bs = self._size(bs=self.stale, num_tokens=0)\n            return", "bs = self.stale"
    ).replace("key = self._size(bs=bs, num_tokens=0)", "key = bs")
    root = _tree(tmp_path / "b", {"layers/attention/my_backend.py": BACKEND, "runner.py": leaky})
    (line,) = backend_bs_sites(root, "MyBackend")["not checked"]
    assert "replay_helper" in line and "self.stale" in line
    # inside a ``with`` (or ``try``) an exception may be swallowed and control go on past the ``if``
    guarded = HELPER_RUNNER.replace(
        "        if forward_batch.preplanned:\n            bs = self._size(bs=self.stale, num_tokens=0)\n            return",
        "        with suppress(KeyError):\n            if forward_batch.preplanned:\n                bs = self.stale\n                return",
    )
    assert guarded != HELPER_RUNNER
    root = _tree(tmp_path / "c", {"layers/attention/my_backend.py": BACKEND, "runner.py": guarded})
    assert len(backend_bs_sites(root, "MyBackend")["not checked"]) == 1


GLUE = """
class Glue:
    def run(self, attn_backend, fb_view, key):
        attn_backend.init_forward_metadata_out_graph(fb_view)
"""

GLUE_RUNNER = (
    RUNNER
    + """
        self._glue = Glue() if self.use_glue else None

    def replay_glue(self, forward_batch):
        bs = self._pad_to_bucket(forward_batch.batch_size, self.capture_bs)
        if self._glue is not None:
            self._glue.run(self.attn_backend, SimpleNamespace(batch_size=bs), bs)
"""
)

#: calls of a method named ``run`` with three arguments on receivers that never hold a Glue
OTHER_RUNS = "\n".join(f"def f{i}(x, y):\n    x.run(y, y, y)\n" for i in range(14))


def test_a_method_call_is_a_site_only_where_its_receiver_may_hold_the_instance(tmp_path):
    """A ``Glue`` is only ever built into ``self._glue`` and ``._glue`` is only read for attribute
    access and ``is None`` tests: of the 15 calls named ``run``, only ``self._glue.run(...)`` can run
    ``Glue.run``, so the chain is followed (and checked). Once the instance escapes (returned), every
    call of the name counts again and there are too many to follow."""
    files = {
        "layers/attention/my_backend.py": BACKEND,
        "glue.py": GLUE,
        "runner.py": GLUE_RUNNER.replace(
            "        self._glue = Glue()", "    def attach(self):\n        self._glue = Glue()"
        ),
        "others.py": OTHER_RUNS,
    }
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert sites["not checked"] == [] and any(s.startswith("sglang/srt/glue.py:4 run") for s in sites["checked"])
    escaped = {**files, "leak.py": "class Leak:\n    def get(self, r):\n        return r._glue\n"}
    (line,) = backend_bs_sites(_tree(tmp_path / "b", escaped), "MyBackend")["not checked"]
    assert line.startswith("sglang/srt/glue.py:4 run") and "calls of the name (not followed)" in line


NPU_RUNNER = """
class NpuRunner:
    def execute(self, forward_batch):
        self.attn_backend.init_forward_metadata_out_graph(SimpleNamespace(batch_size=self.bs))
"""


def test_a_runner_under_hardware_backend_chosen_only_off_cuda_is_not_a_cuda_site(tmp_path):
    """A runner class under ``hardware_backend/`` that srt names only as the ``"npu"`` entry of the
    device table or under ``_is_npu`` is not run on a CUDA device: its call is checked as such. Named
    anywhere else (built directly), its site stays unchecked."""
    table = "RUNNERS = {'npu': NpuRunner, 'cpu': CpuRunner}\nR = NpuRunner if _is_npu else Other\n"
    files = {
        "layers/attention/my_backend.py": BACKEND,
        "runner.py": RUNNER,
        "hardware_backend/npu/npu_runner.py": NPU_RUNNER,
        "setup.py": table,
    }
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert sites["not checked"] == []
    assert any("npu_runner.py:4 execute" in s and "not run on a CUDA device" in s for s in sites["checked"])
    direct = {**files, "setup.py": table + "r = NpuRunner()\n"}
    (line,) = backend_bs_sites(_tree(tmp_path / "b", direct), "MyBackend")["not checked"]
    assert "npu_runner.py:4 execute" in line


TOPK_RUNNER = """
class TopkRunner:
    def __init__(self, draft_attn_backend):
        self.draft_attn_backend = draft_attn_backend
        self.topk = get_spec().speculative_eagle_topk
        self.captured_req_width = resolve_num_tokens_per_req(phase="draft_decode")
        self.capture_bs = [1, 2, 4]
        self.max_bs = max(self.capture_bs)
        self.draft_attn_backend.init_cuda_graph_state(self.max_bs * self.topk, self.max_bs)

    def execute(self, forward_batch):
        bs = self._pad_to_bucket(forward_batch.batch_size, self.capture_bs)
        expanded_bs = bs * self.captured_req_width
        self.draft_attn_backend.init_forward_metadata_out_graph(SimpleNamespace(batch_size=expanded_bs))
"""


def test_a_top_k_expanded_batch_is_within_the_backends_max_bs_times_top_k(tmp_path, monkeypatch):
    """The frozen-KV MTP runner's form: its backend gets ``max_bs * topk`` and a batch ``bs *
    captured_req_width``; with the width the top-k (SGLang's ``resolve_num_tokens_per_req`` run in
    the real tier; taken as shown here) the site is checked. A top-k read from elsewhere is not."""
    from capproof.engines.sglang import graph_calls

    monkeypatch.setattr(graph_calls, "_draft_decode_width_is_topk", lambda: "")
    files = {"layers/attention/my_backend.py": BACKEND, "topk_runner.py": TOPK_RUNNER}
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert sites["not checked"] == [] and any("topk_runner.py:14 execute" in s for s in sites["checked"])
    other = TOPK_RUNNER.replace("get_spec().speculative_eagle_topk", "4")
    (line,) = backend_bs_sites(_tree(tmp_path / "b", {**files, "topk_runner.py": other}), "MyBackend")["not checked"]
    assert "max_bs * self.topk" in line


SPLIT_WRAPPER = """
class SplitBackend(AttentionBackend):
    def __init__(self, primary, children):
        self.primary = primary
        self.children = children

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.primary.init_cuda_graph_state(max_bs=max_bs, max_num_tokens=max_num_tokens)
        for item in self.children:
            item.init_cuda_graph_state(max_bs=max_bs, max_num_tokens=max_num_tokens)

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        self.primary.init_forward_metadata_out_graph(forward_batch=forward_batch, in_capture=in_capture)
        self._dispatch_children_from_replay_view(forward_batch)

    def _dispatch_children_from_replay_view(self, fb_view):
        half = fb_view.batch_size // 2
        for child, child_bs in ((self.children[0], half), (self.children[1], fb_view.batch_size - half)):
            child_view = SimpleNamespace(batch_size=child_bs)
            child.init_forward_metadata_out_graph(forward_batch=child_view)
"""

SPLIT_RUNNER = RUNNER.replace("class Runner:", "class SplitRunner:").replace(
    "self.attn_backend = attn_backend", "self.attn_backend = SplitBackend(attn_backend, [attn_backend])"
)


def test_a_splitters_children_are_checked_through_the_parent_batch(tmp_path, monkeypatch):
    """A child batch made by a splitter (two-batch overlap's replay split, run in the real tier;
    taken as shown here) is checked when the parent batch is and the wrapper gives every child its
    own ``max_bs``; a failed run, or children given another ``max_bs``, leave the site unchecked."""
    from capproof.engines.sglang import graph_calls

    monkeypatch.setattr(graph_calls, "splitter_checked", lambda name: "")
    files = {"layers/attention/my_backend.py": BACKEND + SPLIT_WRAPPER, "runner.py": SPLIT_RUNNER}
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert sites["not checked"] == [], sites["not checked"]
    assert any("_dispatch_children_from_replay_view" in s for s in sites["checked"])
    smaller = {
        **files,
        "layers/attention/my_backend.py": BACKEND
        + SPLIT_WRAPPER.replace("(max_bs=max_bs, max_num", "(max_bs=1, max_num"),
    }
    (line,) = backend_bs_sites(_tree(tmp_path / "b", smaller), "MyBackend")["not checked"]
    assert "does not give each of self.children its max_bs" in line
    monkeypatch.setattr(graph_calls, "splitter_checked", lambda name: f"{name}: a child batch may lie outside")
    (line,) = backend_bs_sites(_tree(tmp_path / "c", files), "MyBackend")["not checked"]
    assert "may lie outside" in line


def _split_module(monkeypatch, name: str, body: str):
    """A module ``name`` with class ``Wrapper`` whose ``split(self, fb_view)`` is ``body``, and a
    stand-in ``ForwardMode`` enum, registered for :func:`splitter_checked`."""
    import enum
    import sys
    import types

    from capproof.engines.sglang import graph_calls

    class ForwardMode(enum.Enum):
        DECODE = 1
        TARGET_VERIFY = 2

        def is_target_verify(self):
            return self is ForwardMode.TARGET_VERIFY

    fbi = types.ModuleType("fake_forward_batch_info")
    fbi.ForwardMode = ForwardMode
    mod = types.ModuleType(name)
    exec(textwrap.dedent(body), mod.__dict__)
    monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setitem(sys.modules, "sglang.srt.model_executor.forward_batch_info", fbi)
    monkeypatch.setitem(graph_calls.SPLITTERS, name, (name, "Wrapper"))
    graph_calls.splitter_checked.cache_clear()


GOOD_SPLIT = """
class Wrapper:
    def split(self, fb_view):
        bs = fb_view.batch_size
        per = fb_view.spec_info.draft_token_num if fb_view.forward_mode.is_target_verify() else 1
        left = (bs * per // per) // 2
        for child, child_bs in ((self.children[0], left), (self.children[1], bs - left)):
            if child_bs == 0:
                continue
            child.init_forward_metadata_out_graph(type("V", (), {"batch_size": child_bs})())
"""


def test_splitter_run_on_every_path_and_mode(monkeypatch):
    """:func:`splitter_checked` runs the splitter on a symbolic parent batch in every forward mode
    (target verify with each draft-token count): halves are within the parent; a child of
    ``bs // 2 + 2`` on a one-request batch is not (Z3 finds bs = 1), and a splitter making no child
    call at all is not taken as checked."""
    from capproof.engines.sglang import graph_calls

    _split_module(monkeypatch, "good_split", GOOD_SPLIT.replace("def split", "def good_split"))
    assert graph_calls.splitter_checked("good_split") == ""
    bad = GOOD_SPLIT.replace("def split", "def bad_split").replace("// 2", "// 2 + 2")
    _split_module(monkeypatch, "bad_split", bad)
    assert "outside [0, parent batch]" in graph_calls.splitter_checked("bad_split")
    none = GOOD_SPLIT.replace("def split", "def no_split").replace("child.init_forward", "child.other")
    _split_module(monkeypatch, "no_split", none)
    assert "no child call" in graph_calls.splitter_checked("no_split")


BATCH_HELPER_RUNNER = """
class HelperRunner:
    def __init__(self, attn_backend):
        self.attn_backend = attn_backend
        self.capture_bs = [1, 2, 4]
        self.max_bs = max(self.capture_bs)
        self.attn_backend.init_cuda_graph_state(self.max_bs, self.max_bs)

    def capture(self):
        for bs in reversed(self.capture_bs):
            self.capture_one_shape(bs)

    def get_forward_batch(self, bs):
        forward_batch = ForwardBatch(batch_size=bs)
        return forward_batch

    def _postprocess_forward_batch(self, forward_batch, bs):
        return forward_batch

    def capture_one_shape(self, size):
        bs = size
        forward_batch = self.get_forward_batch(bs)
        forward_batch = self._postprocess_forward_batch(forward_batch, bs)
        self.attn_backend.init_forward_metadata_out_graph(forward_batch, in_capture=True)

    def eager(self, n):
        self.attn_backend.init_forward_metadata_out_graph(self.get_forward_batch(n))
"""


def test_a_batch_returned_by_a_helper_is_traced_with_this_calls_arguments(tmp_path):
    """``self.get_forward_batch(bs)`` (returning ``ForwardBatch(batch_size=bs)``) and a hook
    returning the batch it is given are followed with each call's own arguments: the capture
    call is checked, a call with a size from elsewhere is not; a helper a subclass overrides is
    not followed."""
    files = {"layers/attention/my_backend.py": BACKEND, "helper_runner.py": BATCH_HELPER_RUNNER}
    sites = backend_bs_sites(_tree(tmp_path / "a", files), "MyBackend")
    assert any("capture_one_shape" in s for s in sites["checked"]), sites
    (line,) = sites["not checked"]
    assert "helper_runner.py:27 eager" in line and "no call of eager" in line
    sub = BATCH_HELPER_RUNNER + textwrap.dedent(
        """
        class Sub(HelperRunner):
            def _postprocess_forward_batch(self, forward_batch, bs):
                return make_other()
        """
    )
    sites = backend_bs_sites(_tree(tmp_path / "b", {**files, "helper_runner.py": sub}), "MyBackend")
    assert any("capture_one_shape" in s and "overridden in a subclass" in s for s in sites["not checked"])


TBO_WRAPPER = """
class TboLike(MyBackend):
    def __init__(self, children):
        self.children = children

    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        tbo_children = getattr(forward_batch, "tbo_children", None)
        if tbo_children is not None:
            for child, forward_batch_child in zip(self.children, tbo_children, strict=True):
                child.init_forward_metadata_out_graph(forward_batch=forward_batch_child, in_capture=in_capture)
"""

SPLIT_STORES = """
class Prep:
    def capture(self, batch, num_tokens):
        batch.tbo_split_seq_index = num_tokens // 2

    def gather(self, info, out):
        info.tbo_split_seq_index, info.mode = out
        info.other = None

    def child(self, batch):
        return dict(tbo_split_seq_index=None, other=batch.tbo_split_seq_index)

    def copy(self, batch, src):
        batch.tbo_split_seq_index = src.tbo_split_seq_index
"""


def _fn(text: str, name: str):
    import ast

    tree = ast.parse(textwrap.dedent(text))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def test_a_tbo_child_is_recognised_from_the_loop_over_its_parents_children():
    """``for _, c in zip(self.children, getattr(fb, "tbo_children", None))``: ``c`` is a child of the
    parameter ``fb``; another loop, a rebinding of the holder or of the parent is not recognised."""
    from capproof.engines.sglang.graph_calls import _tbo_child_parent

    fn = _fn(TBO_WRAPPER, "init_forward_metadata_out_graph")
    assert _tbo_child_parent(fn, "forward_batch_child") == "forward_batch"
    assert _tbo_child_parent(fn, "child") is None
    rebound = TBO_WRAPPER.replace("        if tbo_children", "        forward_batch = other\n        if tbo_children")
    assert _tbo_child_parent(_fn(rebound, "init_forward_metadata_out_graph"), "forward_batch_child") is None
    other_zip = TBO_WRAPPER.replace("zip(self.children,", "zip(self.wrappers,")
    assert _tbo_child_parent(_fn(other_zip, "init_forward_metadata_out_graph"), "forward_batch_child") is None
    holder = TBO_WRAPPER.replace('getattr(forward_batch, "tbo_children", None)', "forward_batch.children_of()")
    assert _tbo_child_parent(_fn(holder, "init_forward_metadata_out_graph"), "forward_batch_child") is None


def test_the_split_index_stores_are_listed_and_never_judged_checked(tmp_path):
    """Every store of ``.tbo_split_seq_index`` (also inside a tuple target) is named; ``None`` and a
    copy of another batch's index are not stores of their own; with no store the answer is still a
    reason (nothing judged the index)."""
    from capproof.engines.sglang.graph_calls import _index, tbo_split_checked

    root = _tree(tmp_path, {"batch_overlap/prep.py": SPLIT_STORES})
    reason = tbo_split_checked(_index(root))
    assert reason == "split index not checked at prep.py:4, prep.py:7"
    empty = _tree(tmp_path / "empty", {"other.py": "x = 1\n"})
    assert tbo_split_checked(_index(empty)) == "split index not checked"


def test_a_tbo_child_site_ends_at_the_split_not_at_an_unbound_name(tmp_path):
    """The children's call site of a two-batch-overlap wrapper is left unchecked with the split as its
    reason (here SGLang does not import, or the split index is not judged), not as an unbound name."""
    root = _tree(
        tmp_path,
        {"layers/attention/my_backend.py": BACKEND + TBO_WRAPPER, "runner.py": RUNNER},
    )
    sites = backend_bs_sites(root, "MyBackend")
    child = [s for s in sites["not checked"] if "forward_batch_child" in s]
    assert child, sites
    assert all("forward_batch_child <- forward_batch.tbo_children: " in s for s in child)
    assert not any("unbound" in s for s in sites["not checked"])
