"""The runtime: devices, memory and arrays, launching compiled kernels, capture and replay, streams, and the
objects kernels query by id (Mesh, Bvh, HashGrid, Volume).

It sits above the compiler: module.py compiles a Python module's kernels with kernels/compiler/ and loads the
result (thread_pool.py on the CPU, cuda_module.py on CUDA devices); signature.py is what launch, capture and the
Tape know of a kernel's parameters. Bottom up inside: cuda_driver, recording (open captures), device (devices,
streams, events), array_layout, foreign_memory, cuda_memory, array and its helpers, launch, module, and
capture (the public capture API, above launches and modules). Nothing in kernels/compiler/ imports this package (see
that package's docstring for the direction); optional libraries (torch, jax, cuda-python) are imported where first
used.
"""
