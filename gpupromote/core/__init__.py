"""The core wing: the vocabulary every other wing speaks.

Owns the dtypes (``DType``, the 2-char codes), the promotion kinds and dtype categories, the op
table (one aligned line per op: arity, promotion kind, the dtypes it accepts, its kernel
expression), the exceptions and their messages, and the registry of decision caches. Imports
nothing of gpupromote's outside this folder.
"""
