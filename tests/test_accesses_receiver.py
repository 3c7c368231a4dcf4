"""The access reader following the buffer's receiver (SGLang's inventory): ``self.<attr>`` in the
owning class and its relatives, locals bound from it and views; another object's attribute of the
same name is not the buffer."""

import textwrap

from capproof.engines.tracing.accesses import accesses_in_file, accesses_of

SOURCE = textwrap.dedent("""
    class Base:
        def reset(self, bs):
            self.kv_indptr[: bs + 1].zero_()

    class Backend(Base):
        def __init__(self, max_bs):
            self.kv_indptr = torch.zeros(max_bs + 1)
            self.buffers = Buffers(out_cache_loc=torch.zeros(max_bs))

        def replay(self, forward_batch, bs):
            forward_batch.kv_indptr[:bs]          # another object's attribute: not this buffer
            indptr = self.kv_indptr
            indptr[1 : bs + 1] = 3                  # a local bound to the buffer
            view = self.kv_indptr[:bs]
            kernel(view, bs)                        # a view of it handed to a kernel
            buffers = self.buffers
            buffers.out_cache_loc[:bs].fill_(0)     # through a local bound to the holder

        def rebound(self, other, bs):
            indptr = self.kv_indptr
            indptr = other.kv_indptr                # rebound: no longer the buffer
            indptr[:bs]

    class Unrelated:
        def run(self, bs):
            self.kv_indptr[:bs]
""")


def _sites(found):
    return [(a["line"], a["dim"], a["extent"], a["op"]) for a in found]


def test_receiver_follows_self_locals_views_and_holders(tmp_path):
    src = tmp_path / "backend.py"
    src.write_text(SOURCE)
    got = _sites(accesses_in_file(str(src), "sglang/x.py", "kv_indptr", owner="Backend"))
    assert got == [
        (4, 0, "bs + 1", "slice read"),  # the base class's method runs on Backend's instances
        (14, 0, "1:bs + 1", "slice write"),
        (15, 0, "bs", "slice read"),  # the view's own slice
        (16, None, "whole", "passed to kernel (view view)"),
    ]
    holder = _sites(accesses_in_file(str(src), "sglang/x.py", "out_cache_loc", owner="Backend", holder="buffers"))
    assert holder == [(18, 0, "bs", "slice read")]
    # without an owner, every attribute of that name in the file (the old reading): another
    # object's (line 12) and an unrelated class's (line 27) count there, not here
    anywhere = {a["line"] for a in accesses_in_file(str(src), "sglang/x.py", "kv_indptr")}
    assert {12, 27} <= anywhere and not {12, 27} & {g[0] for g in got}


def test_receiver_for_a_function_local_and_the_entry_api(tmp_path):
    (tmp_path / "sglang").mkdir()
    src = tmp_path / "sglang" / "moe.py"
    src.write_text(
        textwrap.dedent("""
        def align(topk_ids, num_experts):
            expert_ids = torch.empty(num_experts)
            kernel(expert_ids, topk_ids)
            return expert_ids[:num_experts]

        def other(x):
            return x.expert_ids[0]
        """)
    )
    found = accesses_of(str(tmp_path), "sglang/moe.py", "expert_ids", owner="align")
    assert _sites(found) == [(4, None, "whole", "passed to kernel"), (5, 0, "num_experts", "slice read")]
    # without the owner the other function's x.expert_ids counts too
    assert 8 in {a["line"] for a in accesses_of(str(tmp_path), "sglang/moe.py", "expert_ids")}


def test_receiver_of_a_list_item_indexes_through_the_list(tmp_path):
    (tmp_path / "sglang").mkdir()
    (tmp_path / "sglang" / "fi.py").write_text(
        textwrap.dedent("""
        class FlashInfer:
            def init_cuda_graph_state(self, max_bs, max_num_tokens):
                kv = torch.zeros(max_num_tokens * self.max_context_len)
                self.cuda_graph_kv_indices = [kv] + [kv.clone() for _ in range(self.num_wrappers - 1)]

            def capture(self, i, n):
                self.cuda_graph_kv_indices[i][0] = 0
                update(self.cuda_graph_kv_indices[i], n)
        """)
    )
    found = accesses_of(str(tmp_path), "sglang/fi.py", "cuda_graph_kv_indices[]", owner="FlashInfer")
    assert _sites(found) == [(8, 0, "0", "index[i] write"), (9, None, "whole", "passed to update[i]")]
