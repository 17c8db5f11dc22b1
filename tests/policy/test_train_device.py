"""`agents.train device=...`: auto falls back to the CPU; a GPU that is not there, or no device at all, exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_auto_is_cpu_without_a_gpu_and_names_are_checked():
    from agents.cli import UsageError
    from agents.policy.training import resolve_device

    if torch.cuda.is_available():
        pytest.skip("this test is about a machine without a GPU")
    assert resolve_device("auto") == "cpu" and resolve_device("CPU") == "cpu"
    with pytest.raises(UsageError, match=r"device='tpu' is not a device: use cpu, cuda, cuda:N"):
        resolve_device("tpu")
    with pytest.raises(UsageError, match="asks for a GPU, but torch sees none"):
        resolve_device("cuda:1")


@pytest.mark.parametrize(
    ("device", "message"),
    [("cuda", "device=cuda asks for a GPU, but torch sees none"), ("gpu0", "device='gpu0' is not a device")],
)
def test_the_cli_exits_2_with_the_reason_before_any_work(tmp_path, device, message):
    if torch.cuda.is_available():
        pytest.skip("this test is about a machine without a GPU")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "agents.train", f"data=[{tmp_path / 'no-store'}]", f"out={out}", f"device={device}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (out / "checkpoint").exists()  # nothing was trained or written
