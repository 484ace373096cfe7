"""docs/ci.md: its CI jobs are valid YAML and use only options that exist."""

from __future__ import annotations

import re

import yaml

from conftest import REPO_ROOT
from pytest_groove.settings.options import OPTIONS

DOC = REPO_ROOT / "docs" / "ci.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _yaml_blocks() -> list[str]:
    return [body for lang, body in _BLOCK.findall(DOC.read_text("utf-8")) if lang == "yaml"]


def test_every_ci_job_is_valid_yaml() -> None:
    blocks = _yaml_blocks()
    assert len(blocks) >= 2  # the GitHub job, the GitLab job
    for block in blocks:
        assert yaml.safe_load(block)


def test_every_groove_option_in_the_jobs_exists() -> None:
    known = {option.pytest_flag for option in OPTIONS if option.plugin_flag}
    used = set(re.findall(r"--groove-[a-z-]+", "\n".join(_yaml_blocks())))
    assert used and used <= known, used - known
