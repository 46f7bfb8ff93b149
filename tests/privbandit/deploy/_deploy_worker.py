"""A writer process for the deployment tests: ``python _deploy_worker.py STORE N [lockstep]``.

Serves N rounds on STORE (select, then update with the deterministic reward of the test helpers),
printing ``S <decision> <arm> <kind>`` after each acknowledged select and ``U <decision> <reward>``
after each acknowledged update (flushed at once, so a parent that reads a line knows the call was
committed). A decision left without its reward by an earlier, killed writer is completed first.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _deploy_helpers import reward  # noqa: E402

from privbandit.deploy import Deployment  # noqa: E402


def main() -> None:
    store, n = sys.argv[1], int(sys.argv[2])
    dep = Deployment.open(store)
    for row in dep.decisions():  # complete what a killed writer left pending (the reference order)
        if row["reward"] is None:
            r = reward(row["decision"], row["arm"])
            dep.update(row["decision"], r)
            print(f"U {row['decision']} {r}", flush=True)
    for _ in range(n):
        d = dep.select()
        print(f"S {d.decision} {d.arm} {d.kind}", flush=True)
        r = reward(d.decision, d.arm)
        dep.update(d.decision, r)
        print(f"U {d.decision} {r}", flush=True)
    dep.close()


if __name__ == "__main__":
    main()
