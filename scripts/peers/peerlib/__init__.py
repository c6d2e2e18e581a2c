"""Pieces of the peer harnesses (scripts/peers/*_peer.py): gdnbench's shape vocabulary, the
contract read from its plan (work model, tolerances, input distribution, stopping rule), its JSON
report schema, and the torch/GPU parts (inputs, reference, timing). Modules that need torch import
it lazily, so the pure parts run (and self-test) on machines without torch."""
