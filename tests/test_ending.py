"""A worker's end (harness.measuring.ending): its exit code, its atexit handlers and all its output kept."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_end_keeps_the_exit_code_the_atexit_handlers_and_the_output(tmp_path):
    script = textwrap.dedent(
        """
        import atexit, ctypes, sys
        from harness.measuring.ending import end
        atexit.register(lambda: open(sys.argv[1], "w").write("cleaned up"))
        print("from python", end="")  # buffered: stdout is a file
        ctypes.CDLL(None).printf(b" and from C")  # in C's stdio buffer
        end(3)
        """
    )
    log = tmp_path / "log"
    with open(log, "w") as out:
        code = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "atexit")], stdout=out, cwd=ROOT, timeout=60
        ).returncode
    assert code == 3
    assert (tmp_path / "atexit").read_text() == "cleaned up"
    assert log.read_text() == "from python and from C"
