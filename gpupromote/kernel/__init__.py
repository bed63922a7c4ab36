"""The kernel wing: what a kernel computes, apart from any policy or array.

Owns the IR (loads, casts, op nodes, stores; fused chains included), the sanitizer's checks (lossy)
and the owned math functions
(math/: one description per function, read by both engine generators). May import the core wing
only; never a policy, an engine or an array library.
"""
