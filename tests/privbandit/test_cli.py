import subprocess
import sys

from privbandit.cli import main


def test_run_prints_regret_and_certificate(capsys, tmp_path):
    out_csv = tmp_path / "r.csv"
    assert main(["run", "ucb1", "--horizon", "300", "--replicates", "4", "--quiet", "--save", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "regret" in text and "inf (non-private)" in text
    assert out_csv.exists() and (tmp_path / "r.csv.json").exists()


def test_bad_input_is_a_clear_error(capsys):
    assert main(["run", "no_such_policy", "--horizon", "100"]) == 2
    assert "unknown policy" in capsys.readouterr().err
    assert main(["run", "ucb1", "--horizon", "2", "--quiet"]) == 2
    assert "horizon" in capsys.readouterr().err


def test_demo_quick_runs_as_a_command():
    proc = subprocess.run([sys.executable, "-m", "privbandit", "demo", "--quick"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "certified eps" in proc.stdout


def test_certify_lists_accountants(capsys):
    assert main(["certify", "--epsilon", "0.5", "--releases", "10"]) == 0
    assert "best:" in capsys.readouterr().out


def test_budget_and_invert_commands(capsys):
    assert main(["budget", "gaussian_ts", "--horizon", "10000", "--n-arms", "5", "--param", "b=10", "--param", "c=4"]) == 0
    out = capsys.readouterr().out
    assert "best:" in out and "paper's claim" in out
    assert main(["invert", "gaussian_ts", "--horizon", "10000", "--n-arms", "5", "--mu", "5", "--frontier", "0,10"]) == 0
    assert "c_min" in capsys.readouterr().out
    assert main(["invert", "gaussian_ts", "--horizon", "1000", "--epsilon", "1", "--solve-for", "c", "--bounds", "0.001", "0.01"]) == 2
    assert "unreachable" in capsys.readouterr().err


def test_experiment_command_writes_table_and_figure(capsys, tmp_path):
    assert main(["experiment", "mishra2015", "--horizon", "300", "--replicates", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Private-TS eps=1" in out and "UCB1" in out
    assert (tmp_path / "summary.csv").exists() and (tmp_path / "regret.png").exists()
    assert main(["experiment", "nope"]) == 2


def test_every_experiment_builds_valid_policies():
    from privbandit.experiments import EXPERIMENTS

    for name, build in EXPERIMENTS.items():
        policies, envs = build(2_000)
        assert policies and envs, name
        for label, pol in policies.items():
            for env in envs.values():
                pol.privacy_schedule(2_000, env.n_arms)  # constructible and certifiable


def test_missing_optional_extra_names_it(monkeypatch, capsys, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow") or name.startswith("pandas"):
            raise ImportError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    code = main(["run", "ucb1", "--horizon", "50", "--replicates", "2", "--quiet", "--save", str(tmp_path / "r.parquet")])
    assert code == 2
    assert "privbandit[frames]" in capsys.readouterr().err


def test_certify_names_epsilon_when_it_cannot_be_a_noise_scale(capsys):
    # 1 / 5e-324 is inf: the error used to name the internal "scale"
    assert main(["certify", "--epsilon", "5e-324", "--releases", "10"]) == 2
    err = capsys.readouterr().err
    assert "epsilon must lie in [1e-300, 1e+100]" in err and "scale" not in err.split(":")[1]
