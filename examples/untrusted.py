"""A program for `byzllm sandbox run examples/untrusted.py`: prints, then tries to leave."""

import pathlib

print("hello from the sandbox")
try:
    pathlib.Path("/etc/byzllm-sandbox-test").write_text("escaped")
    print("wrote outside the sandbox")
except OSError as err:
    print(f"refused: {err.strerror}")
