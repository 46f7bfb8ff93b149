"""The command line's one-line errors keep the end of a long word (session 18).

``privbandit.cli._one_line`` shortens every word over 80 characters so that no error echoes thousands of
characters. It kept only the start: a path of 99 characters (pytest-xdist's per-worker temporary directory is
longer than pytest's own) lost its file name, ``log.csv'``, from ``deploy replay``'s "a directory, not a file".
"""

from privbandit import cli


def _last_error_line(argv, capsys) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def test_a_long_path_keeps_its_file_name(tmp_path, capsys):
    from privbandit.deploy import Deployment

    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    with Deployment.create(deep / "s.db", "dp_ucb", n_arms=3, budget=5.0, delta=1e-6, seed=1):
        pass
    (deep / "log.csv").mkdir()
    line = _last_error_line(["deploy", "replay", str(deep / "s.db"), str(deep / "log.csv")], capsys)
    assert "log.csv': a directory, not a file (expected a CSV file)" in line
    assert len(line) < 250 and "characters)" in line  # still shortened


def test_a_huge_word_is_shortened_to_its_two_ends():
    word = "7" * 40 + "5" * 5000 + "9" * 40
    line = cli._one_line(ValueError(f"horizon {word} is too large"))
    assert line.startswith("horizon " + "7" * 30 + "...(5080 characters)...") and line.endswith("9" * 30 + " is too large")
    assert len(line) < 120
