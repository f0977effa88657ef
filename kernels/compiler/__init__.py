"""The compiler: Python functions -> typed IR -> C++/CUDA C++ source -> a built library or PTX.

Stages, one module each: frontend*.py (Python AST -> IR, every node with its file and line), passes/ (IR -> IR,
the pipeline in passes/__init__.py, the adjoint included), render*.py (IR -> source text: printing only),
build.py and nvrtc.py (compile and cache), cache_*.py (the on-disk cache and its index). driver.py runs the
frontend and the pipeline (`compile_ir`); function.py holds the @func objects; lang.py the `wp.<builtin>`
objects kernel code calls.

Dependency direction inside `kernels`: the base modules (config, errors, types, typesys, halfbits, builtins/) <-
compiler <- runtime <- the package's public surface (kernels/__init__, mathlib, utils, tape_interface). The
compiler imports nothing of kernels/runtime/, at import time or inside functions: it knows arrays, structs and
devices only as the compile-time types of typesys.py.
"""
