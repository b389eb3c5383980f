"""PyTorch peers of dlbench's families: times the same workloads in PyTorch (eager, or the step
in a CUDA graph) and writes Google Benchmark JSON under dlbench's names with backend `pytorch`
(dataload: `torchvision`), so `dlbench-report` reads the file beside dlbench's own.

  tools/peers/pytorch-peer <gemm|conv|train|dataload|ddp|attn> [flags] -o OUT.json

cli.py reads the command line; core.py holds the timing, the CUDA-graph capture and the JSON
records; a module per subcommand builds its cases' names and times them. torch is imported only
when a case runs: --help and the names need no torch.
"""
