"""python3 -m tools.peers.pytorch (from the repository's root): the same as tools/peers/pytorch-peer."""
from .cli import main

main()
