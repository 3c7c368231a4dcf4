# capproof: `make verify` proves every obligation and contract and checks proofs/;
# `make test` runs the pytest suite. Both create .venv and install on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.capproof-installed
RUN    := .capproof/last-run.json

# glibc >= 2.35 reads this: malloc asks for transparent huge pages (madvise). Each obligation is
# decided in its own forked process with a fresh Z3 context, so it faults its memory in 2 MB pages
# rather than 4 KB ones. `prove --no-contracts -j 2` took 26.1-26.8 s without it and 23.1-24.9 s with
# it; system CPU fell 15.2-15.7 -> 9.9-11.2 s; proofs/ unchanged (docs/performance.md).
# Other C libraries ignore it. A GLIBC_TUNABLES already set in the environment wins.
export GLIBC_TUNABLES ?= glibc.malloc.hugetlb=1

.PHONY: install lint typecheck verify verify-proofs verify-bounds test test-slow test-sweep report regressions bench clean verify-real verify-real-vllm verify-real-sglang real-install mutation mutation-direct

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# verify runs its two independent halves side by side (bound --check does not read prove's run), so
# the cores stay busy while prove's last long items finish; output lines may interleave.
verify: $(STAMP)
	@$(MAKE) --no-print-directory -j2 --output-sync=line verify-proofs verify-bounds

verify-proofs: $(STAMP)
	@mkdir -p .capproof
	$(BIN)/capproof prove --json $(RUN) --junit .capproof/junit.xml --sarif .capproof/capproof.sarif
	$(BIN)/capproof report --check --from $(RUN)
	$(BIN)/capproof coverage --check --from $(RUN)

# certifies the bounds recorded in proofs/bounds.json and checks proofs/bounds.md (docs/performance.md)
verify-bounds: $(STAMP)
	$(BIN)/capproof bound --check

# test: the fast tier (unit, quality and CLI tests; re-proving every shipped obligation is verify's job),
# test-slow: the slow tier (whole-deployment check-config runs, wide sweeps, CrossHair, the wheel install);
# both on every core (pytest-xdist; TEST_JOBS=0 runs them in this process). Tier times: docs/performance.md.
TEST_JOBS ?= auto
test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS)

# the linter .ci/run runs before the tests ([tool.ruff] in pyproject.toml)
lint: $(STAMP)
	$(BIN)/ruff check capproof tests spec models benchmarks
	$(BIN)/ruff format --check capproof tests spec models benchmarks

# mypy on the public API ([tool.mypy] in pyproject.toml: the facade and tests/typing/spec_author.py)
typecheck: $(STAMP)
	$(BIN)/mypy

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS) -m "slow and not sweep"

# test-sweep: the widest sweeps (semantic fuzzing, the numpy and wide-slice oracles): about an hour on
# 2 cores, so not in .ci/run; run before a release or after a change to capproof's symbolic semantics.
test-sweep: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS) -m sweep

report: $(STAMP)
	$(BIN)/capproof report

# tests/regressions/: every counterexample of a full run, plus the README's reported numbers.
regressions: $(STAMP)
	$(BIN)/capproof counterexamples
	$(BIN)/capproof counterexamples -k ebt_width_matches_runner_before_50302 --set max_model_len=350000 --set block_size=64 --set dcp=1
	$(BIN)/capproof counterexamples -k ebt_width_matches_runner_before_50302 --set max_model_len=200000 --set block_size=64 --set dcp=1
	$(BIN)/capproof counterexamples -k ebt_width_matches_runner_before_50302 --set max_model_len=480000 --set block_size=64 --set dcp=4
	$(BIN)/capproof counterexamples -k ebt_width_matches_runner_before_50823 --set max_model_len=1048576 --set block_size=64 --set dcp=2 --set kernel_block_size=64
	$(BIN)/capproof counterexamples -k trtllm_mla_block_num_aligned_before_39324 --set max_model_len=9416 --set block_size=32 --set dcp=1
	$(BIN)/capproof counterexamples -k every_batch_before_50302 --set max_model_len=350000 --set dcp=1
	$(BIN)/capproof counterexamples -k vllm_sizing_with_filtered_ids_counted --set num_experts=8 --set block_size_m=16 --set numel=9 --set pad_sorted_ids=0 --set num_buckets=9
	$(BIN)/capproof counterexamples -k page_table_copy_round0 --set context_len=163840 --set speculative_num_draft_tokens=2 --set speculative_num_steps=1 --set speculative_eagle_topk=1 --set page_size=1
	$(BIN)/capproof counterexamples -k page_table_copy_round1 --set context_len=90002 --set speculative_num_draft_tokens=4 --set speculative_num_steps=1 --set speculative_eagle_topk=1 --set page_size=1
	$(BIN)/capproof counterexamples -k arange_covers_token_query_start_loc_before_16316 --set max_num_seqs=60 --set max_num_batched_tokens=240 --set num_speculative_tokens=3
	$(BIN)/capproof counterexamples -k slot_mapping_fits_before_14024 --set dcp=4 --set num_speculative_tokens=5 --set max_num_reqs=12 --set max_num_batched_tokens=80
	$(BIN)/capproof counterexamples -k slot_mapping_pair_equal_one_side_fixed --set max_num_batched_tokens=8192 --set max_num_reqs=4 --set num_speculative_tokens=5
	$(BIN)/capproof counterexamples -k autodeploy_capture_fits_cu_seqlen_before_10687 --set max_batch_size=4 --set capture_batch_size=113
	$(BIN)/capproof counterexamples -k mirrors_main_width --set context_len=163840 --set page_size=64 --set speculative_num_steps=3 --set speculative_eagle_topk=4 --set speculative_num_draft_tokens=8
	$(BIN)/capproof counterexamples -k dflash_query_ids_full_graph_mixed --set max_num_batched_tokens=8192 --set num_speculative_tokens=15 --set max_num_reqs=1024
	$(BIN)/capproof counterexamples -k spec_slots_full_graph__SpecDecodeBaseProposer_input_ids --set method=1 --set num_speculative_tokens=7 --set max_num_batched_tokens=4096 --set num_reqs=292 --set num_scheduled_tokens=2336 --set padded_reqs=512

# mutation: mutmut (docs/soundness.md) over models/ and the spec/_*.py helpers; MUTANTS='models.vllm.block_table*'
# for a subset. Oracle: `capproof prove` alone (tests/mutation/, verdict-only; MUTATION_ORACLE=all makes mutmut
# use the fast tests too: slow); then tests/mutation/summary.py runs each survivor against the fast tests that
# name it and prints the per-file table. About 1 h on 2 shared cores: not in .ci/run.
MUTANTS         ?=
MUTATION_ORACLE ?= prove
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,mutation]'
	rm -rf mutants
	CAPPROOF_MUTATION_ORACLE=$(MUTATION_ORACLE) nice -n 19 $(BIN)/mutmut run --max-children 1 $(MUTANTS)
	nice -n 19 $(BIN)/python tests/mutation/summary.py --run-tests --list

# mutation-direct: the same two oracles without mutmut's stats/run phases (tests/mutation/activate.py): mutmut
# makes mutants/; one stats run of the prove oracle records which obligations call which function (--callmap),
# one of the fast tier which TESTS call it and how long each takes (--testmap); then each mutant runs, in a child
# forked from one pytest session, the tests calling it (fastest first, first failure ends it), and only survivors
# re-prove the obligations that call it. Every mutant in a seeded random order (any prefix a random sample);
# MUTATION_ARGS='--files models/*' to restrict. `--prove-alone` (not run here): the prove oracle on every mutant;
# then `--verify-alone` (not run here): what make verify notices on its survivors (report --check, bound --check).
# The records are kept in docs/mutation/ (`--save`; mutants/ is deleted by the next run): commit them, and
# `activate.py --table --records docs/mutation` prints the table again.
MUTATION_ARGS ?= --sample 100000 --seed 20261202
mutation-direct: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,mutation]'
	rm -rf mutants
	$(BIN)/python tests/mutation/activate.py --generate
	nice -n 19 $(BIN)/python tests/mutation/activate.py --callmap
	nice -n 19 $(BIN)/python tests/mutation/activate.py --testmap
	nice -n 19 $(BIN)/python tests/mutation/activate.py $(MUTATION_ARGS)
	$(BIN)/python tests/mutation/activate.py --save docs/mutation
	$(BIN)/python tests/mutation/activate.py --table --records docs/mutation $(MUTATION_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/compare.py
	$(BIN)/python benchmarks/encodings.py
	$(BIN)/python benchmarks/routings.py
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/engine_overhead.py

# verify-real: the real vLLM 0.33.0 / SGLang 0.5.23 code on the CPU (in .ci/run after verify; ~1.8 GB,
# ~6 min cold, see docs/performance.md): re-traces the inventory, re-records the access sites and re-derives the
# demands by running vLLM's code (capproof/engines/vllm/demand.py, ~30 s of the inventory's time), and checks the
# committed inventory and coverage are fresh (a stale derived demand fails here; each engine's inventory is
# re-traced once, here, not again by a real test). Separate venv (CPU torch 2.13.0 + the light import deps); wheels cached in
# .capproof/wheels, so it works offline after the first run. Exit 3: the wheels cannot be had.
REAL_VENV  := .capproof/real-venv
REAL_BIN   := $(REAL_VENV)/bin
REAL_STAMP := $(REAL_VENV)/.capproof-installed

real-install: $(REAL_STAMP)

$(REAL_STAMP): pyproject.toml real/requirements.txt
	@test -x $(REAL_BIN)/python || $(PYTHON) -m venv $(REAL_VENV)
	$(REAL_BIN)/python -m pip install --quiet -r real/requirements.txt
	$(REAL_BIN)/python -m pip install --quiet --no-deps xgrammar==0.2.8
	$(REAL_BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(REAL_STAMP)

verify-real: $(REAL_STAMP)
	@$(REAL_BIN)/python -m capproof.engines.vllm.wheels fetch
	$(REAL_BIN)/python -m pytest -m real -q -n $(TEST_JOBS) -W ignore::DeprecationWarning
	@$(MAKE) --no-print-directory -j2 --output-sync=target verify-real-vllm verify-real-sglang
	$(REAL_BIN)/capproof coverage --check

# the two engines' re-derivations are independent: verify-real runs them side by side
verify-real-vllm: $(REAL_STAMP)
	$(REAL_BIN)/capproof prove spec_real --no-contracts
	$(REAL_BIN)/capproof inventory --engine vllm==0.33.0 --check

verify-real-sglang: $(REAL_STAMP)
	$(REAL_BIN)/capproof inventory --engine sglang==0.5.23 --check

clean:
	rm -rf .capproof .pytest_cache .hypothesis mutants
