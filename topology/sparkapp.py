"""spark-submit entry script of a topology driver: ``sparkapp.py <run dir>``."""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if sys.argv[1] == "--pool":  # a shared application hosting many topologies
        from topology.shared_app import main as pool_main

        sys.exit(pool_main(sys.argv[2]))
    from topology.driver import main

    sys.exit(main(sys.argv[1]))
