"""`warp_shim`: a Warp script (`import warp as wp`) runs unedited on this toolkit."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import warp as wp

    @wp.kernel
    def square(x: wp.array[float], y: wp.array[float]):
        i = wp.tid()
        y[i] = x[i] * x[i]

    x = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), requires_grad=True)
    y = wp.zeros(3, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(square, dim=3, inputs=[x], outputs=[y])
    tape.backward(grads={y: wp.array(np.ones(3, dtype=np.float32))})
    print(sys.argv[1], y.numpy().tolist(), x.grad.numpy().tolist(), wp.optim.Adam.__module__)
""")


def test_runs_a_warp_script_unedited(tmp_path):
    script = tmp_path / "warp_script.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, "-m", "warp_shim", str(script), "hello"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hello", "[1.0,", "4.0,", "9.0]", "[2.0,", "4.0,", "6.0]", "autodiff.optim"]


def test_refuses_when_real_warp_is_already_imported():
    code = ("import sys, types; sys.modules['warp'] = types.ModuleType('warp')\n"
            "import warp_shim\n"
            "try:\n    warp_shim.install()\nexcept RuntimeError as e:\n    print('refused:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "refused: the real `warp` package is already imported" in out.stdout, out.stderr


def test_usage_without_a_script():
    out = subprocess.run([sys.executable, "-m", "warp_shim"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "usage: python -m warp_shim" in out.stdout
