"""Which forward modes and capture phases reach a backend buffer's slices
(capproof/engines/sglang/graph_reach.py), on small backends written the way SGLang's are: the walk
takes the branch a context decides (``in_capture``, ``forward_mode.is_X()``), follows ``self``
helpers with their arguments bound, gives up on a call it cannot resolve; a wrapper's hand-on is
closed over; a call site whose context reaches no slice drops out of the fact
``backend_bs <= padded_bs`` for that buffer (capproof/engines/sglang/graph_calls.py)."""

from __future__ import annotations

import ast
import textwrap

from capproof.engines.sglang import graph_reach as R
from capproof.engines.sglang.graph_calls import backend_bs_sites, site_context

OUT, IN = R.OUT_GRAPH, R.IN_GRAPH
MODES = ("EXTEND", "DECODE", "TARGET_VERIFY")
#: a stand-in for SGLang's ForwardMode predicates (the real ones are run by mode_table)
TRUE_FOR = {"is_decode": {"DECODE"}, "is_target_verify": {"TARGET_VERIFY"}, "is_extend": {"EXTEND", "TARGET_VERIFY"}}


def pred(member, method, args=(), kwargs=()):
    return member in TRUE_FOR[method]


BACKEND = """
class MyBackend:
    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        forward_mode = forward_batch.forward_mode
        if forward_mode.is_extend() and not forward_mode.is_target_verify():
            self._prefill(forward_batch)
        else:
            self._decode(forward_batch, in_capture)

    def init_forward_metadata_in_graph(self, forward_batch):
        if not forward_batch.forward_mode.is_target_verify():
            return
        bs = forward_batch.batch_size
        self.in_graph_rows[:bs].zero_()  # IN_GRAPH_USE

    def _decode(self, forward_batch, in_capture):
        bs = forward_batch.batch_size
        if in_capture:
            self._bind(bs, forward_batch.forward_mode)
        else:
            self.replay_rows[:bs].zero_()  # REPLAY_USE
            self._kernel(bs)

    def _bind(self, bs, forward_mode):
        if forward_mode.is_decode():
            self.decode_rows[:bs].zero_()  # DECODE_USE
        elif forward_mode.is_target_verify():
            self.verify_rows[:bs].zero_()  # VERIFY_USE

    def _prefill(self, forward_batch):
        self.prefill_rows[: forward_batch.batch_size].zero_()  # PREFILL_USE

    def __init__(self):
        self._kernel = external_kernel
"""

WRAPPER = """
class Wrapper:
    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        self.primary.init_forward_metadata_out_graph(forward_batch=forward_batch, in_capture=in_capture)
        for child, child_batch in zip(self.children, forward_batch.children):
            child.init_forward_metadata_out_graph(forward_batch=child_batch, in_capture=True)

    def init_forward_metadata_in_graph(self, forward_batch):
        self.primary.init_forward_metadata_in_graph(forward_batch)
        self.init_forward_metadata_in_graph(forward_batch)
"""


def _line(text: str, marker: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if marker in ln)


def _walk(text: str, cls: str):
    tree = ast.parse(text)
    methods, external = R.class_methods([("f.py", tree, cls)])
    return R.walk_contexts(methods, external, MODES, pred), methods


def test_each_slice_is_reached_only_by_the_contexts_that_take_its_branches():
    table, methods = _walk(BACKEND, "MyBackend")
    assert table is not None and R.entry_default(methods) is False
    lines = {m: _line(BACKEND, m) for m in ("DECODE_USE", "VERIFY_USE", "REPLAY_USE", "IN_GRAPH_USE", "PREFILL_USE")}
    uses = R.use_contexts([table], "f.py", list(lines.values()))
    assert uses[lines["DECODE_USE"]] == {(OUT, True, "DECODE")}
    assert uses[lines["VERIFY_USE"]] == {(OUT, True, "TARGET_VERIFY")}
    assert uses[lines["REPLAY_USE"]] == {(OUT, False, "DECODE"), (OUT, False, "TARGET_VERIFY")}
    assert uses[lines["IN_GRAPH_USE"]] == {(IN, None, "TARGET_VERIFY")}
    assert uses[lines["PREFILL_USE"]] == {(OUT, True, "EXTEND"), (OUT, False, "EXTEND")}


def test_an_unresolved_self_call_makes_the_walk_unknown():
    text = BACKEND.replace("self._bind(bs, forward_batch.forward_mode)", "self._elsewhere(bs)")
    assert _walk(text, "MyBackend")[0] is None
    # a callable kept on the instance but handed the instance may call back into it: unknown too
    text = BACKEND.replace("self._kernel(bs)", "self._kernel(self, bs)")
    assert _walk(text, "MyBackend")[0] is None


def test_a_replay_site_cannot_reach_a_capture_only_slice_but_a_wrapper_child_can():
    table, _ = _walk(BACKEND, "MyBackend")
    decode = _line(BACKEND, "DECODE_USE")
    uses = R.use_contexts([table], "f.py", [decode])
    alone = {"MyBackend": ("uses", uses, False)}
    assert not R.may_reach((OUT, "default", None), alone)  # replay, any mode
    assert not R.may_reach((OUT, True, {"EXTEND"}), alone)  # a prefill capture
    assert R.may_reach((OUT, True, None), alone)  # a capture of unknown mode
    assert not R.may_reach((IN, None, None), alone)
    wrapper, wmethods = _walk(WRAPPER, "Wrapper")
    both = dict(alone, Wrapper=("wrapper", R.forwarded_contexts([wrapper]), R.entry_default(wmethods)))
    # the wrapper's children are captured with in_capture=True and a batch of unknown mode
    assert R.may_reach((OUT, False, {"EXTEND"}), both)
    assert not R.may_reach((IN, None, None), both)  # its in-graph hand-on (and its self call) only
    assert R.may_reach((OUT, True, None), {"MyBackend": None})  # a class not walked: it may


RUNNER = """
class Runner:
    def __init__(self, attn_backend):
        self.attn_backend = attn_backend
        self.capture_bs = [1, 2, 4]
        self.max_bs = max(self.capture_bs)
        self.attn_backend.init_cuda_graph_state(self.max_bs, self.max_bs)
        self.capture_forward_mode = ForwardMode.DECODE

    def capture_one_shape(self, size):
        forward_batch = ForwardBatch(batch_size=size, forward_mode=self.capture_forward_mode)
        self.attn_backend.init_forward_metadata_out_graph(forward_batch, in_capture=True)


class PrefillRunner:
    def run_eager(self, forward_batch):
        view = SimpleNamespace(batch_size=forward_batch.batch_size, forward_mode=ForwardMode.EXTEND)
        self.attn_backend.init_forward_metadata_out_graph(view, in_capture=True)

    def replay(self, forward_batch):
        view = SimpleNamespace(batch_size=forward_batch.batch_size)
        self.attn_backend.init_forward_metadata_out_graph(view)
"""


def _root(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / "sglang" / "srt" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(tmp_path)


def test_call_sites_that_cannot_reach_the_buffer_drop_out_of_its_fact(tmp_path):
    root = _root(tmp_path, {"layers/attention/my_backend.py": BACKEND, "model_executor/runner.py": RUNNER})
    table, _ = _walk(BACKEND, "MyBackend")
    uses = R.use_contexts([table], "f.py", [_line(BACKEND, "DECODE_USE")])

    contexts = {}

    def drop(tracer, rel, call, method, classes):
        ctx = contexts[(rel, call.lineno)] = site_context(tracer, rel, call, method)
        return "" if R.may_reach(ctx, {"MyBackend": ("uses", uses, False)}) else f"{ctx}"

    plain = backend_bs_sites(root, "MyBackend")
    left = {s.split(" ", 1)[0].rsplit(":", 1)[-1] for s in plain["not checked"]}
    runner = "sglang/srt/model_executor/runner.py"
    eager = [i for i, ln in enumerate(RUNNER.splitlines(), 1) if "init_forward_metadata_out_graph(view" in ln]
    assert {str(n) for n in eager} <= left  # two eager-batch sites: not checked on their batch
    sites = backend_bs_sites(root, "MyBackend", drop=drop)
    capture = _line(RUNNER, "forward_batch, in_capture=True")
    # left: the decode capture (mode self.capture_forward_mode, every store DECODE, reaches the
    # slice), judged on its batch as before (no caller of capture_one_shape here)
    assert [s.split(" ", 1)[0] for s in sites["not checked"]] == [f"{runner}:{capture}"]
    dropped = [s for s in sites["checked"] if "cannot reach the buffer's slices" in s]
    assert sorted(s.split(" ", 1)[0] for s in dropped) == [f"{runner}:{n}" for n in eager]
    # the prefill capture: in_capture=True, mode EXTEND; the replay: in_capture's default, any mode
    assert any("EXTEND" in s and "True" in s for s in dropped)
    assert any("'default', None" in s for s in dropped)
    assert contexts[(runner, capture)] == (OUT, True, {"DECODE"})
    assert contexts[(runner, eager[0])] == (OUT, True, {"EXTEND"})
    assert contexts[(runner, eager[1])] == (OUT, "default", None)


def test_decorated_methods_and_callbacks():
    """A static method not handed the instance is not followed, a property's getter is walked where
    it is read, a method taken as a value (it may run later, in another context) or a cached one
    makes the walk unknown."""
    base = BACKEND.replace(
        "    def __init__(self):", "    @staticmethod\n    def _host(x):\n        return x\n\n    def __init__(self):"
    )
    text = base.replace("self._kernel(bs)", "self._kernel(self._host(bs))")
    assert _walk(text, "MyBackend")[0] is not None
    text = base.replace("self._kernel(bs)", "self._kernel(self._host(self))")
    assert _walk(text, "MyBackend")[0] is None
    prop = BACKEND.replace(
        "    def __init__(self):",
        "    @property\n    def flag(self):\n        self.prop_rows[:1].zero_()  # PROP_USE\n        return True\n\n"
        "    def __init__(self):",
    ).replace("self._kernel(bs)", "self._kernel(self.flag)")
    table, _ = _walk(prop, "MyBackend")
    uses = R.use_contexts([table], "f.py", [_line(prop, "PROP_USE")])
    assert uses[_line(prop, "PROP_USE")] == {(OUT, False, "DECODE"), (OUT, False, "TARGET_VERIFY")}
    assert _walk(BACKEND.replace("self._kernel(bs)", "self._kernel(self._bind)"), "MyBackend")[0] is None
    cached = BACKEND.replace(
        "    def _bind(self, bs, forward_mode):", "    @functools.cache\n    def _bind(self, bs, forward_mode):"
    )
    assert _walk(cached, "MyBackend")[0] is None


SUB = """
class Sub(MyBackend):
    def _decode(self, forward_batch, in_capture):
        self.sub_rows[: forward_batch.batch_size].zero_()  # SUB_USE
        super()._decode(forward_batch, in_capture)
"""


def test_super_calls_walk_the_next_definition_in_the_order():
    text = BACKEND + SUB
    tree = ast.parse(text)
    methods, external = R.class_methods([("f.py", tree, "Sub"), ("f.py", tree, "MyBackend")])
    table = R.walk_contexts(methods, external, MODES, pred)
    lines = [_line(text, "SUB_USE"), _line(text, "DECODE_USE")]
    uses = R.use_contexts([table], "f.py", lines)
    assert uses[lines[0]] == {(OUT, c, m) for c in (True, False) for m in ("DECODE", "TARGET_VERIFY")}
    assert uses[lines[1]] == {(OUT, True, "DECODE")}
    # with no definition after the class, the walk is unknown
    methods, external = R.class_methods([("f.py", tree, "Sub")])
    assert R.walk_contexts(methods, external, MODES, pred) is None


CAPTURE_RUNNER = """
class PrefillGraphRunner:
    def capture_prepare(self, num_tokens):
        forward_batch = ForwardBatch(forward_mode=ForwardMode.EXTEND, batch_size=num_tokens)
        forward_batch = self.model_runner.prepare_dummy_forward_batch(forward_batch)
        return forward_batch, self.model_runner.attn_backend

    def capture_one_shape(self, size):
        forward_batch, attn_backend = self.capture_prepare(size)
        attn_backend.init_forward_metadata_out_graph(forward_batch, in_capture=True)  # CAPTURE_SITE
"""

MODEL_RUNNER = """
class ModelRunner:
    def prepare_dummy_forward_batch(self, forward_batch):
        forward_batch.attn_tp_sequence_sharded = False
        return forward_batch
"""


def _capture_context(tmp_path, runner=CAPTURE_RUNNER, model_runner=MODEL_RUNNER, extra=""):
    from capproof.engines.sglang.graph_calls import _tracer

    root = _root(
        tmp_path,
        {"model_executor/prefill_runner.py": runner + extra, "model_executor/model_runner.py": model_runner},
    )
    tracer = _tracer(root)
    rel = "sglang/srt/model_executor/prefill_runner.py"
    line = _line(runner, "CAPTURE_SITE")
    call = next(n for n in ast.walk(tracer.ix.tree(rel)) if isinstance(n, ast.Call) and n.lineno == line)
    return site_context(tracer, rel, call, OUT)


def test_a_capture_batch_returned_by_a_runner_helper_has_the_helpers_mode(tmp_path):
    """A capture batch bound from a tuple a runner method returns has the mode the method builds it
    with (SGLang's prefill graph runner: ``capture_prepare`` -> ``ForwardMode.EXTEND``), through a
    hook that hands the same batch back."""
    assert _capture_context(tmp_path) == (OUT, True, {"EXTEND"})


def test_a_returned_batch_mode_is_unknown_when_it_may_change(tmp_path):
    """Any mode when a subclass defines the helper again, the helper stores the batch's mode, or
    the hook (some definition of its name) may hand back another batch or change the mode."""
    sub = "\n\nclass Other(PrefillGraphRunner):\n    def capture_prepare(self, num_tokens):\n        return make(), None\n"
    assert _capture_context(tmp_path / "a", extra=sub)[2] is None
    stores = CAPTURE_RUNNER.replace(
        "        return forward_batch, self",
        "        forward_batch.forward_mode = mode\n        return forward_batch, self",
    )
    assert _capture_context(tmp_path / "b", runner=stores)[2] is None
    other_hook = (
        MODEL_RUNNER
        + "\n\nclass Stub:\n    def prepare_dummy_forward_batch(self, forward_batch):\n        return None\n"
    )
    assert _capture_context(tmp_path / "c", model_runner=other_hook)[2] is None
    sets_mode = MODEL_RUNNER.replace("attn_tp_sequence_sharded = False", "forward_mode = ForwardMode.DECODE")
    assert _capture_context(tmp_path / "d", model_runner=sets_mode)[2] is None


ASSERTING = """
class Asserting:
    def init_forward_metadata_out_graph(self, forward_batch, in_capture=False):
        forward_mode = forward_batch.forward_mode
        is_verify = forward_mode.is_target_verify()
        assert forward_mode.is_decode() or is_verify, "graphs of decode and verify only"
        bs = forward_batch.batch_size
        self.rows[:bs].zero_()  # ROWS_USE

    def init_forward_metadata_in_graph(self, forward_batch):
        pass
"""


def test_an_assert_the_mode_decides_false_ends_the_walk():
    """An ``assert`` the context decides false raises before the slice (a prefill batch handed to a
    decode-only backend), also through a local bound once to a mode test; an assert it cannot
    decide lets the walk go on."""
    table, _ = _walk(ASSERTING, "Asserting")
    uses = R.use_contexts([table], "f.py", [_line(ASSERTING, "ROWS_USE")])
    reached = {m for _, c, m in next(iter(uses.values()))}
    assert reached == {"DECODE", "TARGET_VERIFY"}
    undecided = ASSERTING.replace("or is_verify,", "or forward_batch.spec_info is not None,")
    table, _ = _walk(undecided, "Asserting")
    uses = R.use_contexts([table], "f.py", [_line(undecided, "ROWS_USE")])
    assert {m for _, c, m in next(iter(uses.values()))} == set(MODES)
    # a local bound twice is not decided
    twice = ASSERTING.replace(
        "        assert forward_mode",
        "        if in_capture:\n            is_verify = True\n        assert forward_mode",
    )
    table, _ = _walk(twice, "Asserting")
    uses = R.use_contexts([table], "f.py", [_line(twice, "ROWS_USE")])
    assert {m for _, c, m in next(iter(uses.values()))} == set(MODES)
