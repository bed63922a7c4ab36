"""The tools wing: what people run around the package.

cli (``python -m gpupromote``), compare (``gp.compare``), config (``gp.show_config``), docs (the
generated policy pages), plots (the promotion pictures), tables (golden promotion grids) and warmup
(compiling a policy's common kernels ahead of use). May import every wing; nothing imports tools but the package root.
"""
