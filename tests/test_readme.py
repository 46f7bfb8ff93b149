"""The README's examples run as written (a README that lies is a bug)."""

import re
import shlex
from pathlib import Path

import pytest

from privbandit.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), re.S)


def test_python_example_runs(capsys):
    code = _blocks("python")
    assert code, "README has no python example"
    for block in code:
        exec(compile(block, "README.md", "exec"), {})
    assert "certified_epsilon" in capsys.readouterr().out


@pytest.mark.parametrize("command", [c for block in _blocks("bash") for c in block.splitlines()
                                     if c.startswith("privbandit ") and any(w in c for w in (" budget ", " invert "))])
def test_budget_and_invert_commands_run(command):
    argv = shlex.split(command.split("#")[0])[1:]
    assert main(argv) == 0
