"""Settings of the command tests."""

from __future__ import annotations

import os

# Commands run by the tests keep no help pages in the home folder (byzllm.cli._help_cache);
# the tests of that cache choose their own folders.
os.environ.setdefault("BYZLLM_HELP_CACHE", "off")
