"""Replay a JSON-lines event file into a worker's HTTP receiver (an event simulator)."""
import sys
import time
import urllib.error

from receivers.simulator import Simulator, load_events


def run(args):
    events = load_events(args.events)
    if not events:
        print(f"cep feed: no events in {args.events}", file=sys.stderr)
        return 1
    sim = Simulator(args.worker, args.tenant, args.plan, events, rate=args.rate,
                    batch=args.batch, keep_time=args.keep_time)
    while True:
        try:
            sent, accepted = sim.run(loop=args.loop)
            break
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            if not args.retry:
                print(f"cep feed: worker at {args.worker} did not answer: {exc}", file=sys.stderr)
                return 1
            time.sleep(1.0)  # the worker may still be syncing the plan
    print(f"sent {sent}, accepted {accepted}, rejected {sim.rejected}", file=sys.stderr)
    return 0 if accepted == sent else 1


def subparser_hook(subparsers):
    p = subparsers.add_parser("feed", help=__doc__, description=__doc__)
    p.add_argument("plan", help="execution plan name")
    p.add_argument("events", help="JSON lines: {\"stream\", \"timestamp\", \"data\"}")
    p.add_argument("--worker", default="http://127.0.0.1:9090", help="worker HTTP address")
    p.add_argument("--tenant", default="-1234", help="tenant id (default the super tenant)")
    p.add_argument("--rate", type=float, default=20.0, help="events per second")
    p.add_argument("--batch", type=int, default=10, help="events per HTTP request")
    p.add_argument("--loop", action="store_true", help="replay until interrupted")
    p.add_argument("--keep-time", action="store_true",
                   help="keep the file's timestamps instead of stamping the current time")
    p.add_argument("--retry", action="store_true",
                   help="keep retrying while the worker does not answer")
    p.set_defaults(func=run)
