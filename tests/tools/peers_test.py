#!/usr/bin/env python3
"""The PyTorch peer (tools/peers/pytorch-peer) where torch is not needed: the command line (help,
one-line errors, flags before the subcommand), the core's pure helpers, the size of its modules.
The names it emits are checked against the C++ naming rules by peers_names_test."""
import argparse
import contextlib
import glob
import io
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PEER = os.path.join(ROOT, "tools", "peers", "pytorch-peer")
sys.path.insert(0, ROOT)

from tools.peers.pytorch import cli, core, infer, kernels  # noqa: E402


def peer(*args):
    return subprocess.run([sys.executable, "-B", PEER, *args], capture_output=True, text=True)


class CommandLine(unittest.TestCase):
    def test_help_of_the_program_and_of_every_subcommand(self):
        top = peer("--help")
        self.assertEqual(top.returncode, 0, top.stderr)
        for family in cli.FAMILIES:
            self.assertIn(family, top.stdout)
            r = peer(family, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"usage: pytorch-peer {family}", r.stdout)
            self.assertIn("--out", r.stdout)

    def test_a_subcommand_help_shows_its_flags_only(self):
        self.assertIn("--fp8-accum", peer("gemm", "--help").stdout)
        self.assertNotIn("--fp8-accum", peer("train", "--help").stdout)
        self.assertIn("--gpus", peer("ddp", "--help").stdout)

    def assert_one_line_error(self, r, rc, words):
        self.assertEqual(r.returncode, rc, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("pytorch-peer"), r.stderr)
        self.assertIn(words, r.stderr)

    def test_unknown_flag(self):
        self.assert_one_line_error(peer("gemm", "--no-such-flag", "-o", "x.json"), 2,
                                   "unrecognized arguments: --no-such-flag")

    def test_unknown_subcommand(self):
        self.assert_one_line_error(peer("matmul", "-o", "x.json"), 2, "invalid choice: 'matmul'")

    def test_no_subcommand_and_no_output(self):
        self.assert_one_line_error(peer(), 2, "required")
        self.assert_one_line_error(peer("conv"), 2, "-o/--out")

    def test_a_subcommand_check_fails_with_one_line(self):
        self.assert_one_line_error(peer("ddp", "--graph", "2", "-o", "x.json"), 1, "expected 0")
        self.assert_one_line_error(peer("attn", "--device", "cpu", "-o", "x.json"), 1,
                                   "needs a CUDA device")
        self.assert_one_line_error(peer("names", "attn"), 1, "give --seqs")
        self.assert_one_line_error(peer("infer", "--device", "cpu", "-o", "x.json"), 1,
                                   "needs a CUDA device")
        self.assert_one_line_error(peer("names", "infer", "--phases", "decode,train"), 1,
                                   "unknown dtype, phase or mode train")

    def test_flags_before_the_subcommand(self):
        move = cli.subcommand_first
        self.assertEqual(move(["--device", "cpu", "gemm", "-o", "x"]),
                         ["gemm", "--device", "cpu", "-o", "x"])
        # A flag's value that names a subcommand is the value, not the subcommand.
        self.assertEqual(move(["--pass", "train", "train"]), ["train", "--pass", "train"])
        self.assertEqual(move(["--decode-only", "dataload"]), ["dataload", "--decode-only"])
        self.assertEqual(move(["--filter=x", "-ox.json", "conv"]), ["conv", "--filter=x", "-ox.json"])
        self.assertEqual(move(["-h"]), ["-h"])
        r = peer("names", "--device", "cpu", "gemm", "--filter", "^square[.]64$", "--dtypes", "f32")
        self.assertEqual(r.stdout, "gemm/cpu/pytorch/square.64/dt:f32\n", r.stderr)

    def test_names_need_no_torch(self):
        before = set(sys.modules)
        names = cli.names([])
        self.assertGreater(len(names), 1000)
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual([m for m in set(sys.modules) - before if m.split(".")[0] == "torch"], [])


class Core(unittest.TestCase):
    def test_name(self):
        self.assertEqual(core.name("gemm", "gpu", "square.64", ["dt:bf16"]),
                         "gemm/gpu/pytorch/square.64/dt:bf16")
        self.assertEqual(core.ints("16,256"), [16, 256])

    def test_rows_skip_comments(self):
        rows = list(core.rows("gemm_square"))
        self.assertTrue(rows)
        self.assertTrue(all(r["name"].startswith("square.") for r in rows))

    def test_records(self):
        b = core.iteration("gemm/gpu/pytorch/square.64/dt:f32", 1, 3, 2e-6, iterations=4)
        self.assertEqual(b["run_type"], "iteration")
        self.assertEqual((b["repetitions"], b["repetition_index"], b["iterations"]), (3, 1, 4))
        self.assertAlmostEqual(b["real_time"], 2.0)
        self.assertEqual(b["time_unit"], "us")
        e = core.error("x", "failed: why")
        self.assertTrue(e["error_occurred"])
        self.assertNotIn("dlbench", e)
        self.assertEqual(core.error("x", "y", {"network": "n"})["dlbench"], {"network": "n"})

    def test_write_leaves_a_whole_file(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "pt.json")
            core.write(out, {"library": "pytorch"}, [{"name": "a"}])
            self.assertEqual(os.listdir(d), ["pt.json"])
            with open(out) as f:
                self.assertEqual(json.load(f)["benchmarks"], [{"name": "a"}])

    def test_cudnn_version_as_dlbench_writes_it(self):
        self.assertEqual(core.cudnn_version_text(91900), "9.19.0")
        self.assertEqual(core.cudnn_version_text(91400), "9.14.0")
        self.assertEqual(core.cudnn_version_text(8907), "8.9.7")
        self.assertEqual(core.cudnn_version_text(None), "not loaded")

    def test_conv_flops_count_the_taps_inside_the_input(self):
        # CIFAR ResNet-18's layer4 3x3 at batch 1: 100 of 144 output-tap pairs inside the 4x4 map.
        work, conventional = core.conv_flops(1, 512, 512, 4, 4, 3, 3, 1, 1, 1, 1)
        self.assertEqual(work, 2.0 * 512 * 512 * 100)
        self.assertEqual(conventional, 2.0 * 512 * 512 * 144)
        # Strided and dilated, against the pairs counted one by one.
        for size, taps, stride, pad, dil in [(7, 3, 2, 2, 2), (5, 2, 3, 1, 1), (1, 3, 1, 1, 1)]:
            out = (size + 2 * pad - dil * (taps - 1) - 1) // stride + 1
            brute = sum(0 <= o * stride - pad + t * dil < size
                        for o in range(out) for t in range(taps))
            self.assertEqual(core.valid_tap_pairs(size, out, taps, stride, pad, dil), brute)
        work, conventional = core.conv_flops(2, 8, 4, 6, 6, 3, 3, 1, 0, 1, 2)
        self.assertEqual(work, conventional)  # no padding: every tap is work

    def test_first_line(self):
        self.assertEqual(core.first_line(RuntimeError("one\ntwo")), "one")
        self.assertEqual(core.first_line(RuntimeError()), "RuntimeError")


class Fastest(unittest.TestCase):
    """How a peer that tries several configurations of a case (attn's backends, infer's modes)
    times them, picks the fastest and records it."""

    def times(self, config):
        if config == "b":
            raise RuntimeError("no engine\nmore")
        return {"a": [3.0, 1.0, 2.0], "c": [0.5, 0.7, 0.6]}[config], f" ({config})"

    def test_every_configuration_timed_a_failure_noted_the_memory_released_after_each(self):
        released = []
        tried = core.time_configs("abc", self.times, (RuntimeError,), lambda: released.append(1))
        self.assertEqual(tried, {"a": (2.0, [3.0, 1.0, 2.0], " (a)"), "b": (None, None, "no engine"),
                                 "c": (0.6, [0.5, 0.7, 0.6], " (c)")})
        self.assertEqual(len(released), 3)
        # An error the caller did not expect stops the case, the memory released all the same.
        with self.assertRaises(KeyError):
            core.time_configs("ad", self.times, (RuntimeError,), lambda: released.append(1))
        self.assertEqual(len(released), 5)

    def test_the_fastest_with_every_configuration_in_the_order_tried(self):
        tried = core.time_configs("abc", self.times, (RuntimeError,), lambda: None)
        best = core.fastest(tried, short=str.upper, failed="refused")
        self.assertEqual((best.config, best.median, best.times, best.note),
                         ("c", 0.6, [0.5, 0.7, 0.6], " (c)"))
        self.assertEqual(best.others, "A 2000.000 ms, B refused (no engine), C 600.000 ms")

    def test_none_ran(self):
        tried = {"graph": (None, None, "out of memory"), "compile": (None, None, "no triton")}
        self.assertIsNone(core.fastest(tried))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            record = core.none_ran("infer/gpu/pytorch/x", tried, 30)
        self.assertEqual(record["error_message"],
                         "failed: graph: out of memory; compile: no triton")
        self.assertTrue(record["error_occurred"])
        self.assertEqual(out.getvalue(), f"{'infer/gpu/pytorch/x':30s} failed: graph: out of "
                                         "memory; compile: no triton\n")

    def test_one_record_per_repetition_with_the_fields_of_its_time(self):
        records = core.repetitions("x", [2e-3, 4e-3], lambda t: {"items_per_s": 8 / t})
        self.assertEqual([(r["repetition_index"], r["repetitions"]) for r in records],
                         [(0, 2), (1, 2)])
        self.assertEqual([r["real_time"] for r in records], [2e3, 4e3])
        self.assertEqual([r["items_per_s"] for r in records], [4e3, 2e3])


class Infer(unittest.TestCase):
    @staticmethod
    def args(**kw):
        args = argparse.Namespace(filter="^llama3_8b$", batch_sizes="1,8,32,128", seqs="2048",
                                  dtypes="bf16,f16", phases=None, modes=None, device="gpu",
                                  repetitions=2)
        vars(args).update(kw)
        infer.prepare(args)
        return args

    def run_benchmarks(self, args, make_weights, time_mode):
        """infer_benchmarks with the weights and the timing stood in for (no torch, no GPU)."""
        torch = types.SimpleNamespace(no_grad=contextlib.nullcontext,
                                      cuda=types.SimpleNamespace(empty_cache=lambda: None))
        with mock.patch.dict(sys.modules, {"torch": torch}), \
                mock.patch.object(infer, "make_weights", make_weights), \
                mock.patch.object(infer, "time_mode", time_mode), \
                contextlib.redirect_stdout(io.StringIO()):
            return infer.infer_benchmarks(args)

    def test_every_batch_size_and_mode_runs_on_one_set_of_weights(self):
        made, timed = [], []

        def make_weights(m, dt):
            made.append((m["name"], dt))
            return object()

        def time_mode(mode, w, m, phase, b, ctx, dt, reps):
            timed.append((mode, w, b))
            if mode == "eager":
                raise RuntimeError("eager refused")
            return [b * (1e-3 if mode == "compile" else 2e-3)] * reps, f"; {mode} built in 1.0 s"
        args = self.args(dtypes="bf16", phases="decode", modes="eager,graph,compile")
        records = self.run_benchmarks(args, make_weights, time_mode)
        self.assertEqual(made, [("llama3_8b", "bf16")])
        self.assertEqual([(mode, b) for mode, _, b in timed],
                         [(mode, b) for b in (1, 8, 32, 128) for mode in args.modes])
        self.assertEqual(len({id(w) for _, w, _ in timed}), 1)
        self.assertEqual(len(records), 4 * 2)
        first = records[0]
        self.assertEqual(first["name"], "infer/gpu/pytorch/llama3_8b/phase:decode/bs:1/ctx:2048/"
                                        "dt:bf16")
        self.assertEqual((first["tpot_s"], first["tokens_per_s"]), (1e-3, 1e3))
        self.assertEqual(first["dlbench"]["mode"], "compile")
        self.assertIn("compile the fastest of: eager failed (eager refused), graph 2.000 ms, "
                      "compile 1.000 ms", first["label"])
        self.assertTrue(first["label"].endswith("; compile built in 1.0 s"), first["label"])

    def test_modes_default_to_graph_and_compile_and_an_unknown_one_is_refused(self):
        self.assertEqual(self.args().modes, ["graph", "compile"])
        self.assertEqual(self.args(modes="eager,autotune").modes, ["eager", "autotune"])
        r = peer("names", "infer", "--modes", "graph,max-autotune")
        self.assertEqual((r.returncode, r.stdout, r.stderr.count("\n")), (1, "", 1), r.stderr)
        self.assertIn("unknown dtype, phase or mode max-autotune", r.stderr)
        self.assertIn("modes: eager,graph,compile,autotune", r.stderr)

    def test_each_compiled_mode_compiles_afresh_with_its_arguments_then_captures(self):
        calls = []

        def compile_(fn, **kw):
            calls.append(("compile", kw))
            return fn
        torch = types.SimpleNamespace(
            compile=compile_, _dynamo=types.SimpleNamespace(reset=lambda: calls.append("reset")))

        def capture(warm, body):
            calls.append("capture")
            return body
        with mock.patch.dict(sys.modules, {"torch": torch}), \
                mock.patch.object(infer, "build_step", lambda *a: "step"), \
                mock.patch.object(core, "capture", capture), \
                mock.patch.object(core, "time_fn", lambda fn, dev, reps: [1e-3] * reps):
            notes = {mode: infer.time_mode(mode, None, None, "decode", 8, 2048, "bf16", 2)[1]
                     for mode in infer.MODES}
        static = dict(fullgraph=True, dynamic=False)
        self.assertEqual(calls, [
            "capture",  # graph
            "reset", ("compile", dict(static, options={"coordinate_descent_tuning": True})),
            "capture",
            "reset", ("compile", dict(static, mode="max-autotune-no-cudagraphs")), "capture"])
        self.assertEqual(notes["eager"], "")
        for mode in ("graph", "compile", "autotune"):
            self.assertRegex(notes[mode], rf"^; {mode} built in \d+\.\d s$")

    def test_a_mode_that_does_not_compile_is_left_out_of_its_row_alone(self):
        def time_mode(mode, w, m, phase, b, ctx, dt, reps):
            if mode == "compile" and b == 8:
                raise RuntimeError("BackendCompilerFailed: no kernel\ntraceback")
            return [1e-3 if mode == "compile" else 2e-3] * reps, ""
        args = self.args(dtypes="bf16", phases="decode,prefill", batch_sizes="1,8")
        records = self.run_benchmarks(args, lambda m, dt: object(), time_mode)
        self.assertEqual(len(records), 4 * 2)
        self.assertFalse([r for r in records if r.get("error_occurred")])
        modes = {r["name"].split("/")[4] + "/" + r["name"].split("/")[5]: r["dlbench"]["mode"]
                 for r in records}
        self.assertEqual(modes, {"phase:decode/bs:1": "compile", "phase:decode/bs:8": "graph",
                                 "phase:prefill/bs:1": "compile",
                                 "phase:prefill/bs:8": "graph"})
        failed = [r for r in records if r["dlbench"]["mode"] == "graph"][0]
        self.assertIn("graph the fastest of: graph 2.000 ms, compile failed (BackendCompilerFailed:"
                      " no kernel)", failed["label"])

    def test_weights_that_cannot_be_made_fail_their_cases_and_the_run_goes_on(self):
        def make_weights(m, dt):
            if dt == "bf16":
                raise RuntimeError("CUDA out of memory")
            return object()
        args = self.args(phases="decode", batch_sizes="1,8", modes="graph")
        records = self.run_benchmarks(args, make_weights, lambda *a: ([1e-3, 1e-3], ""))
        self.assertEqual([r.get("error_message") for r in records],
                         ["failed: weights: CUDA out of memory"] * 2 + [None] * 4)

    def test_the_cases_of_one_model_and_dtype_share_their_weights(self):
        args = self.args()
        groups = list(infer.by_weights(args))
        self.assertEqual([(m["name"], dt, len(cases)) for (m, dt), cases in groups],
                         [("llama3_8b", "bf16", 8), ("llama3_8b", "f16", 8)])
        self.assertEqual([c[0] for _, cases in groups for c in cases], infer.names(args))
        bf16 = [c[0] for c in groups[0][1]]
        self.assertEqual(bf16[:4], [f"infer/gpu/pytorch/llama3_8b/phase:decode/bs:{b}/ctx:2048/"
                                    "dt:bf16" for b in (1, 8, 32, 128)])


class KernelTable(unittest.TestCase):
    """--kernels on: profiler activities become dlbench's kernels object (docs/schema.md)."""

    def test_rows_summed_by_short_name_sorted_and_per_run(self):
        acts = [("void k<int>(int)", 2e-6), ("void k<int>(float)", 4e-6),
                ("Memcpy DtoD (Device -> Device)", 1e-6), ("Memset (Device)", 0.5e-6)]
        t = kernels.table(acts, runs=2, span_s=1e-5)
        self.assertEqual((t["source"], t["runs"], t["span_s"]), ("cupti", 2, 1e-5))
        self.assertEqual([(r["name"], r["kind"]) for r in t["rows"]],
                         [("k<int>", "kernel"), ("memcpy DtoD", "memcpy"), ("memset", "memset")])
        k = t["rows"][0]
        self.assertEqual(k["launches_per_run"], 1.0)
        self.assertAlmostEqual(k["total_s"], 6e-6)
        self.assertAlmostEqual(k["mean_s"], 3e-6)
        self.assertAlmostEqual(k["share"], 0.6)

    def test_rows_past_the_limit_sum_into_other(self):
        acts = [(f"kernel_{i:02d}", (40 - i) * 1e-6) for i in range(40)]
        t = kernels.table(acts, runs=1, span_s=1.0)
        self.assertEqual(len(t["rows"]), kernels.MAX_ROWS + 1)
        other = t["rows"][-1]
        self.assertEqual((other["name"], other["kind"]), ("(other)", "other"))
        self.assertAlmostEqual(other["total_s"], sum((40 - i) * 1e-6 for i in range(30, 40)))
        self.assertEqual(other["launches_per_run"], 10.0)


class Layout(unittest.TestCase):
    def test_no_module_over_300_lines(self):
        for path in glob.glob(os.path.join(ROOT, "tools", "peers", "pytorch", "*.py")):
            with open(path) as f:
                self.assertLessEqual(len(f.readlines()), 300, path)


if __name__ == "__main__":
    unittest.main()
