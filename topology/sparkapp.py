"""spark-submit entry script of a topology driver: ``sparkapp.py <run dir>``."""
import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    from topology.driver import main
    sys.exit(main(sys.argv[1]))
