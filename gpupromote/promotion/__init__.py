"""The promotion wing: every framework's rules, and the only place promotion happens.

Owns the lattices and pair tables (lattice), the value limits (limits), the policies (policies/:
literal tables, one module per framework) and their quirks (rules/), the resolver that turns
(policy, op, operands) into a Plan (resolve, plan) and the store rules of ``out=`` (store).
Operands are described by dtype, rank and value: no arrays, no kernels. May import the core
wing only.
"""
