#!/usr/bin/env python3
"""The PyTorch peer (tools/peers/pytorch-peer) where torch is not needed: the command line (help,
one-line errors, flags before the subcommand), the core's pure helpers, the size of its modules.
The names it emits are checked against the C++ naming rules by peers_names_test."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PEER = os.path.join(ROOT, "tools", "peers", "pytorch-peer")
sys.path.insert(0, ROOT)

from tools.peers.pytorch import cli, core, kernels  # noqa: E402


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
