from ._isolation import ensure_kernel_math_importable

ensure_kernel_math_importable()
